# The aarch64 subset (label `aarch64`; docs/edge-aarch64.md): on an aarch64
# build -- natively, or cross-compiled with cmake/aarch64-linux-gnu.cmake and
# run under qemu-user -- the example and unseen models, the ML tests and the
# NEON kernels against the reference ones (sgemm, vectorised math).  Included from
# tests/CMakeLists.txt, so it can label the tests defined there.
#
# ctest starts a test's COMMAND through CMAKE_CROSSCOMPILING_EMULATOR when it
# is one of this build's programs; the shell-script tests get the program's
# path as an argument instead, so a cross build hands them small wrappers
# (build-aarch64/qemu/<program>) that exec the program under qemu.
if(NOT INFERA_ARCH_ARM64)
  return()
endif()

set(AARCH64_RUN_DIR ${CMAKE_BINARY_DIR}/qemu)
function(aarch64_runner target out_var)
  if(CMAKE_CROSSCOMPILING AND CMAKE_CROSSCOMPILING_EMULATOR)
    list(JOIN CMAKE_CROSSCOMPILING_EMULATOR " " emulator)
    file(GENERATE OUTPUT ${AARCH64_RUN_DIR}/${target}
         CONTENT "#!/bin/sh\n# ${target} (aarch64) under qemu-user, for the test scripts\nexec ${emulator} $<TARGET_FILE:${target}> \"$@\"\n"
         FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
    set(${out_var} ${AARCH64_RUN_DIR}/${target} PARENT_SCOPE)
  else()
    set(${out_var} $<TARGET_FILE:${target}> PARENT_SCOPE)
  endif()
endfunction()
aarch64_runner(infera AARCH64_INFERA)
aarch64_runner(npy_compare AARCH64_NPY_COMPARE)

# The script tests again, through the runners (the plain ones would exec an
# aarch64 binary on the host).
add_test(NAME aarch64_models COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_models.sh
         ${AARCH64_INFERA} ${AARCH64_NPY_COMPARE})
add_test(NAME aarch64_ml COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/ml/test_ml.sh ${AARCH64_INFERA} ${AARCH64_NPY_COMPARE})
# One thread under qemu-user: with two, `infera run` hangs after its outputs
# under Debian's qemu-aarch64 7.2 (not diagnosed yet: docs/edge-aarch64.md).
set(AARCH64_TEST_ENV "")
if(CMAKE_CROSSCOMPILING)
  set(AARCH64_TEST_ENV INFERA_TEST_THREADS=1)
endif()
set_tests_properties(aarch64_models aarch64_ml PROPERTIES LABELS "integration;aarch64" TIMEOUT 600
                     ENVIRONMENT "${AARCH64_TEST_ENV}")

# Programs started directly: ctest adds the emulator itself.  Under qemu
# floating point is emulated in software (20-100x slower than native), so the
# label holds what fits CI's budget (<= 5 minutes on 2 cores; measured in
# docs/edge-aarch64.md); the rest of the suite runs too, by name
# (ctest --test-dir build-aarch64 -R 'unit|conformance_node|kernels_').
# (conformance_simple and kernels_test_trees start thread pools of the
# default size, and a program with a second thread does not exit under
# qemu-aarch64 7.2: not in the label until that is solved.)
# kernels_test_conv: every Conv path through a session (the NEON GEMM behind the general ones), its warm runs
# allocating nothing (session 31: the NEON GEMM allocated its packed operands on every call; 6 s under qemu)
set(AARCH64_DIRECT_TESTS kernels_test_vmath edge_crc32c kernels_test_conv)
set_property(TEST ${AARCH64_DIRECT_TESTS} APPEND PROPERTY LABELS aarch64)
# the x86-64 kernel tests exit 77 off x86 (their kernels are not built)
foreach(src ${KERNEL_TESTS})
  get_filename_component(name ${src} NAME_WE)
  set_property(TEST kernels_${name} PROPERTY SKIP_RETURN_CODE 77)
endforeach()

# The NEON kernels against the reference ones (tests/aarch64/test_neon_*.c).
file(GLOB NEON_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/aarch64/test_neon_*.c)
foreach(src ${NEON_TESTS})
  get_filename_component(name ${src} NAME_WE)
  add_executable(kernels_${name} ${src})
  infera_link_engine(kernels_${name})
  target_include_directories(kernels_${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/kernels)
  add_test(NAME kernels_${name} COMMAND kernels_${name})
  set_tests_properties(kernels_${name} PROPERTIES LABELS "kernels;aarch64" TIMEOUT 600
                       ENVIRONMENT "${AARCH64_TEST_ENV}")
endforeach()
