# CMake toolchain file: cross-compile Infera for 64-bit ARM Linux (aarch64)
# with Debian's gcc-aarch64-linux-gnu, against the arm64 multiarch dev
# packages (dpkg --add-architecture arm64; libprotobuf-c-dev:arm64, ...).
# Programs run under qemu-user: CMAKE_CROSSCOMPILING_EMULATOR makes ctest
# start every test executable through qemu-aarch64 with the cross sysroot.
# Used by `scripts/build.sh aarch64` (-> build-aarch64/); see docs/edge-aarch64.md.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# The arm64 libraries live in /usr/lib/aarch64-linux-gnu (multiarch), the
# headers in /usr/include (shared with the host); the libc in the cross
# sysroot.  Build-time tools (protoc-c, python3) are the host's.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# Only the arm64 directories for libraries: never link an x86-64 archive.
set(CMAKE_IGNORE_PATH /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu)

find_program(INFERA_QEMU_AARCH64 qemu-aarch64)
if(INFERA_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${INFERA_QEMU_AARCH64} -L /usr/aarch64-linux-gnu)
endif()
