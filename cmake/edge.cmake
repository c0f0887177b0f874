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
  add_library(infera_edge STATIC ${EDGE_SOURCES})
  target_include_directories(infera_edge PUBLIC include PRIVATE src)
  target_compile_definitions(infera_edge PRIVATE INF_BUILDING_LIBRARY INF_EDGE
                             $<$<NOT:$<BOOL:${INFERA_THREADS}>>:INF_NO_THREADS>)
  # each function and object in its own section, so a program keeps only what it calls
  target_compile_options(infera_edge PRIVATE -ffunction-sections -fdata-sections)
  if(INFERA_THREADS)
    target_link_libraries(infera_edge PUBLIC Threads::Threads m)
  else()
    target_link_libraries(infera_edge PUBLIC m)
  endif()
endif()
