# CMake toolchain file: cross-compile Infera for 64-bit ARM Linux (aarch64)
# with Debian's gcc-aarch64-linux-gnu.  The arm64 libraries come from a
# private sysroot (INFERA_AARCH64_SYSROOT, default <build>/sysroot) that
# scripts/aarch64-sysroot.sh unpacks from Debian's arm64 packages; the C
# library from the cross toolchain (/usr/aarch64-linux-gnu).  Programs run
# under qemu-user: CMAKE_CROSSCOMPILING_EMULATOR makes ctest start every test
# program through qemu-aarch64 with the sysroot's libraries on the guest's
# LD_LIBRARY_PATH.  Used by `scripts/build.sh aarch64` (-> build-aarch64/);
# see docs/edge-aarch64.md.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)

if(NOT INFERA_AARCH64_SYSROOT)
  set(INFERA_AARCH64_SYSROOT ${CMAKE_BINARY_DIR}/sysroot)
endif()
set(INFERA_AARCH64_SYSROOT ${INFERA_AARCH64_SYSROOT} CACHE PATH "arm64 libraries (scripts/aarch64-sysroot.sh)")
set(_libdirs ${INFERA_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu ${INFERA_AARCH64_SYSROOT}/lib/aarch64-linux-gnu)

# Libraries and headers from the sysroot (and the toolchain's libc); never
# the host's x86-64 ones nor arm64 ones installed system-wide.  Build-time
# tools (protoc-c, python3) are the host's.
set(CMAKE_FIND_ROOT_PATH ${INFERA_AARCH64_SYSROOT} /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_C_FLAGS_INIT "-isystem ${INFERA_AARCH64_SYSROOT}/usr/include")
list(JOIN _libdirs ":" _libpath)
string(REPLACE ";" " -Wl,-rpath-link," _rpath_link "${_libdirs}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-rpath-link,${_rpath_link}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,-rpath-link,${_rpath_link}")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "-Wl,-rpath-link,${_rpath_link}")

find_program(INFERA_QEMU_AARCH64 qemu-aarch64)
if(INFERA_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${INFERA_QEMU_AARCH64} -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH=${_libpath})
endif()
