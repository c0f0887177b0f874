# Edge inference tests (issue 22, docs/edge.md): bundles vs ONNX models,
# refusals, the fixed-memory edge runtime, the example program.
# Included from tests/CMakeLists.txt.
add_executable(test_bundle ${CMAKE_CURRENT_SOURCE_DIR}/edge/test_bundle.c)
infera_link_engine(test_bundle)
add_test(NAME edge_bundle COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/edge/test_bundle.sh
         $<TARGET_FILE:test_bundle> $<TARGET_FILE:infera>)
set_tests_properties(edge_bundle PROPERTIES LABELS integration TIMEOUT 300)
