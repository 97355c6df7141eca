# The WebAssembly build (emcmake cmake): one ES module + .wasm for browsers,
# workers and Node, copied to web/dist/ with the glue patched for ESM under
# Node (web/patch-glue.mjs). Included from CMakeLists.txt when EMSCRIPTEN.
file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/web/exports.txt RLXKV_EXPORTS REGEX "^_")
string(REPLACE ";" "," RLXKV_EXPORTS "${RLXKV_EXPORTS}")

add_executable(rlxkv_core web/boundary.c)
target_link_libraries(rlxkv_core rlxkv)
set_target_properties(rlxkv_core PROPERTIES SUFFIX ".mjs")
target_link_options(rlxkv_core PRIVATE
  -sMODULARIZE=1 -sEXPORT_ES6=1 -sEXPORT_NAME=createRlxkvCore
  -sENVIRONMENT=web,worker,node
  -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=4GB -sINITIAL_MEMORY=2MB -sTOTAL_STACK=256KB
  -sWASM_BIGINT=1 -sASSERTIONS=0 -sFILESYSTEM=1 -sFORCE_FILESYSTEM=1
  -sEXPORTED_FUNCTIONS=${RLXKV_EXPORTS}
  -sEXPORTED_RUNTIME_METHODS=FS,IDBFS,NODEFS,HEAPU8,HEAPU32,HEAPF32
  -lidbfs.js -lnodefs.js)

set(RLXKV_DIST ${CMAKE_CURRENT_SOURCE_DIR}/web/dist)
add_custom_command(TARGET rlxkv_core POST_BUILD
  COMMAND ${CMAKE_COMMAND} -E make_directory ${RLXKV_DIST}
  COMMAND node ${CMAKE_CURRENT_SOURCE_DIR}/web/patch-glue.mjs
          $<TARGET_FILE_DIR:rlxkv_core>/rlxkv_core.mjs ${RLXKV_DIST}/rlxkv_core.mjs
  COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE_DIR:rlxkv_core>/rlxkv_core.wasm ${RLXKV_DIST}/rlxkv_core.wasm
  VERBATIM)
