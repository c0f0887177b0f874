# --- libinfera_edge.a: the minimal runtime (issue 22, docs/edge.md) ---------
# -DINFERA_EDGE=ON builds libinfera_edge.a: the engine (core, graph, ops) and
# the bundle loader, without the ONNX decoder (protobuf-c), the XGBoost
# importer (cJSON) and the LLM code.  Models come as bundles (`infera
# compile`).  -DINFERA_THREADS=OFF also leaves out pthreads: kernels run on
# the calling thread.  Included from the top-level CMakeLists.txt; the
# architecture flags of the kernels come from there (AVX2_SOURCES, ...).
option(INFERA_EDGE "Build libinfera_edge.a (engine + bundle loader; no protobuf-c, no cJSON)" ON)
option(INFERA_THREADS "Thread pool in libinfera_edge.a (OFF: single-threaded, no pthreads)" ON)
if(INFERA_EDGE)
  file(GLOB_RECURSE EDGE_SOURCES CONFIGURE_DEPENDS
    src/core/*.c src/graph/*.c src/ops/*.c src/bundle/*.c)
  list(FILTER EDGE_SOURCES EXCLUDE REGEX "TEMPLATE\\.c$")
  infera_keep_own_arch(EDGE_SOURCES) # an aarch64 build left the x86 kernels in (immintrin.h missing)
  # the bf16 precision option is not part of the edge runtime (ops/gemm_bf16.h refuses it there): size
  list(FILTER EDGE_SOURCES EXCLUDE REGEX "/gemm_bf16(_avx512)?\\.c$")
  # nor the AVX2 vpmaddubsw INT8 kernel for pair-safe weights (ops/qgemm.h; vpmaddwd serves them there): size
  list(FILTER EDGE_SOURCES EXCLUDE REGEX "/(qgemm_(maddubs|ubs2)|qconv_pool_ubs)_avx2\\.c$")
  # nor the INT8 Winograd (ops/qgemm.h; the direct kernels serve its convolutions there): size
  list(FILTER EDGE_SOURCES EXCLUDE REGEX "/qwinograd(_avx2)?\\.c$")
  # Cold code -- loading, planning, session set-up, the op table: everything
  # outside the kernels (src/ops/ref, x86, arm, util.c) and the checksum --
  # is built for size (-Os in Release): it runs once per model or once per
  # run, not once per element.
  set(EDGE_COLD_SOURCES ${EDGE_SOURCES})
  list(FILTER EDGE_COLD_SOURCES EXCLUDE REGEX "(/src/ops/(ref|x86|arm)/|/src/ops/util\\.c$|/crc32c\\.c$)")
  list(REMOVE_ITEM EDGE_SOURCES ${EDGE_COLD_SOURCES})
  add_library(infera_edge_cold OBJECT ${EDGE_COLD_SOURCES})
  target_compile_options(infera_edge_cold PRIVATE $<$<CONFIG:Release>:-Os>)
  add_library(infera_edge STATIC ${EDGE_SOURCES} $<TARGET_OBJECTS:infera_edge_cold>)
  foreach(t infera_edge infera_edge_cold)
    target_include_directories(${t} PUBLIC include PRIVATE src)
    target_compile_definitions(${t} PRIVATE INF_BUILDING_LIBRARY INF_EDGE
                               $<$<NOT:$<BOOL:${INFERA_THREADS}>>:INF_NO_THREADS>)
    # each function and object in its own section, so a program keeps only
    # what it calls; no unwind tables (C, no exceptions: .eh_frame is dead weight)
    target_compile_options(${t} PRIVATE -ffunction-sections -fdata-sections
                           -fno-asynchronous-unwind-tables -fno-unwind-tables)
  endforeach()
  if(INFERA_THREADS)
    target_link_libraries(infera_edge PUBLIC Threads::Threads m)
  else()
    target_link_libraries(infera_edge PUBLIC m)
  endif()
endif()
