# Edge inference tests (issue 22, docs/edge.md): bundles vs ONNX models,
# refusals, the fixed-memory edge runtime, the example program.
# Included from tests/CMakeLists.txt.
add_executable(test_bundle ${CMAKE_CURRENT_SOURCE_DIR}/edge/test_bundle.c)
infera_link_engine(test_bundle)
add_test(NAME edge_bundle COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/edge/test_bundle.sh
         $<TARGET_FILE:test_bundle> $<TARGET_FILE:infera>)
set_tests_properties(edge_bundle PROPERTIES LABELS integration TIMEOUT 300)

# the bundle checksum against RFC 3720's CRC32C vectors, instruction vs table path
add_executable(test_crc32c ${CMAKE_CURRENT_SOURCE_DIR}/edge/test_crc32c.c)
infera_link_engine(test_crc32c)
add_test(NAME edge_crc32c COMMAND test_crc32c)
set_tests_properties(edge_crc32c PROPERTIES LABELS unit)

# The edge runtime (libinfera_edge.a) in a fixed memory region, with a model
# compiled in by `infera compile --c-source` at build time.
if(TARGET infera_edge)
  set(EDGE_TEST_MODEL_C ${CMAKE_CURRENT_BINARY_DIR}/edge_test_model.c)
  add_custom_command(OUTPUT ${EDGE_TEST_MODEL_C}
    COMMAND infera compile ${CMAKE_SOURCE_DIR}/tests/models/mlp.onnx -o ${EDGE_TEST_MODEL_C} --c-source --max-batch 4
    DEPENDS infera ${CMAKE_SOURCE_DIR}/tests/models/mlp.onnx
    COMMENT "Compiling tests/models/mlp.onnx into a C bundle")
  add_executable(test_edge_region ${CMAKE_CURRENT_SOURCE_DIR}/edge/test_edge_region.c ${EDGE_TEST_MODEL_C})
  target_link_libraries(test_edge_region PRIVATE infera_edge)
  target_link_options(test_edge_region PRIVATE -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc)
  add_test(NAME edge_region COMMAND test_edge_region ${CMAKE_SOURCE_DIR})
  set_tests_properties(edge_region PROPERTIES LABELS unit)

  # examples/edge/ built with its own Makefile against this libinfera_edge.a, scores vs PyTorch
  add_test(NAME edge_example COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/edge/test_example.sh
           $<TARGET_FILE:infera> $<TARGET_FILE:infera_edge>
           "-O2$<$<BOOL:${INFERA_SANITIZE}>: -fsanitize=address,undefined>")
  set_tests_properties(edge_example PROPERTIES LABELS integration TIMEOUT 120)
endif()
