# The WebAssembly builds (emcmake cmake), copied to wasm/dist/. Both export
# wasm/exports.txt, the cache JS drives: every store, a Node directory
# included, is reached from JS (store/), so neither has Emscripten's file
# system, and the linker leaves out the C codec, which no export calls.
#   rlxkv_core.mjs/.wasm      browsers, workers and Node, the glue patched to
#                             load as ESM under Node (wasm/patch-glue.mjs)
#   rlxkv_core_web.mjs/.wasm  browsers and workers only, for the minified
#                             browser bundle (wasm/bundle.mjs), without folds
#                             (below); its glue is wasm/web-glue.mjs's small
#                             loader, written from the one Emscripten links
#   build/wasm/test/rlxkv_core_test.mjs/.wasm
#                             the tests' own: the universal build plus
#                             wasm/exports-test.txt (the C codec that
#                             tests/node/blob.test.js holds format/blob.js to);
#                             never shipped
# Included from CMakeLists.txt when EMSCRIPTEN.
file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/wasm/exports.txt RLXKV_EXPORTS REGEX "^_")
file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/wasm/exports-test.txt RLXKV_TEST_EXPORTS REGEX "^_")
string(REPLACE ";" "," RLXKV_TEST_EXPORTS "${RLXKV_EXPORTS};${RLXKV_TEST_EXPORTS}")
string(REPLACE ";" "," RLXKV_EXPORTS "${RLXKV_EXPORTS}")

set(RLXKV_LINK_OPTIONS
  -Oz
  # emmalloc, not dlmalloc: 2.7 KB less of gzipped wasm (15.2 -> 12.5 KB).
  # The cache makes few allocations (an entry, its tree nodes), most of
  # them large; bench/ measures the inserts, hits and memory it serves.
  -sMALLOC=emmalloc
  -sMODULARIZE=1 -sEXPORT_ES6=1 -sEXPORT_NAME=createRlxkvCore
  -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=4GB -sINITIAL_MEMORY=16MB -sTOTAL_STACK=256KB
  -sWASM_BIGINT=1 -sASSERTIONS=0
  # A library must not take over the process: by default the Node glue
  # installs uncaughtException/unhandledRejection handlers that rethrow, so
  # an app's own errors are reported from inside the glue.
  -sNODEJS_CATCH_EXIT=0 -sNODEJS_CATCH_REJECTION=0)

add_executable(rlxkv_core wasm/boundary.c)
add_executable(rlxkv_core_web wasm/boundary.c)
add_executable(rlxkv_core_test wasm/boundary.c)
# The browser build's library: the same sources without folds (src/cache.c,
# Folds), whose code (~1.5 KB of wasm, 0.7 KB gzipped) the bundle's size
# budget has no room for: its opens place every page of an index at once.
# (The universal build, Node's and unbundled ESM's, folds.)
add_library(rlxkv_web STATIC ${RLXKV_SOURCES})
target_include_directories(rlxkv_web PUBLIC src)
target_compile_definitions(rlxkv_web PRIVATE RLXKV_FOLDS=0)
foreach(t rlxkv_core rlxkv_core_web rlxkv_core_test)
  target_link_libraries(${t} $<IF:$<STREQUAL:${t},rlxkv_core_web>,rlxkv_web,rlxkv>)
  # Relinked (and so patched again) when the exports or the glue patch change.
  set_property(TARGET ${t} APPEND PROPERTY LINK_DEPENDS
    ${CMAKE_CURRENT_SOURCE_DIR}/wasm/exports.txt ${CMAKE_CURRENT_SOURCE_DIR}/wasm/exports-test.txt
    ${CMAKE_CURRENT_SOURCE_DIR}/wasm/patch-glue.mjs ${CMAKE_CURRENT_SOURCE_DIR}/wasm/web-glue.mjs)
  set_target_properties(${t} PROPERTIES SUFFIX ".mjs")
  target_link_options(${t} PRIVATE ${RLXKV_LINK_OPTIONS})
endforeach()
set(RLXKV_UNIVERSAL_OPTIONS -sENVIRONMENT=web,worker,node -sFILESYSTEM=0 -sEXPORTED_RUNTIME_METHODS=HEAPU8,HEAPU32)
target_link_options(rlxkv_core PRIVATE -sEXPORTED_FUNCTIONS=${RLXKV_EXPORTS} ${RLXKV_UNIVERSAL_OPTIONS})
target_link_options(rlxkv_core_test PRIVATE -sEXPORTED_FUNCTIONS=${RLXKV_TEST_EXPORTS} ${RLXKV_UNIVERSAL_OPTIONS})
# The browser build's glue is written by wasm/web-glue.mjs from the one
# linked here (its names of the exports and the import); the options below
# that shape that glue (the Module options it reads, TextDecoder) change
# nothing in the wasm.
target_link_options(rlxkv_core_web PRIVATE -sEXPORTED_FUNCTIONS=${RLXKV_EXPORTS} -sENVIRONMENT=web,worker
  -sFILESYSTEM=0 -sEXPORTED_RUNTIME_METHODS=HEAPU8,HEAPU32
  -sINCOMING_MODULE_JS_API=print,printErr,wasmBinary -sTEXTDECODER=2
  # wasm-opt's size passes until they change nothing more, and without the
  # target_features section (for tools; engines ignore it): 72 B less gzipped.
  -sBINARYEN_EXTRA_PASSES=--converge,--strip-target-features)

# A Node-capable build's glue, patched (wasm/patch-glue.mjs), and its wasm, copied into `dest`.
function(rlxkv_node_glue target dest)
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dest}
    COMMAND node ${CMAKE_CURRENT_SOURCE_DIR}/wasm/patch-glue.mjs --node
            $<TARGET_FILE_DIR:${target}>/${target}.mjs ${dest}/${target}.mjs
    COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE_DIR:${target}>/${target}.wasm ${dest}/
    VERBATIM)
endfunction()

set(RLXKV_DIST ${CMAKE_CURRENT_SOURCE_DIR}/wasm/dist)
rlxkv_node_glue(rlxkv_core ${RLXKV_DIST})
add_dependencies(rlxkv_core_web rlxkv_core)
add_custom_command(TARGET rlxkv_core_web POST_BUILD
  COMMAND ${CMAKE_COMMAND} -E make_directory ${RLXKV_DIST}
  COMMAND node ${CMAKE_CURRENT_SOURCE_DIR}/wasm/web-glue.mjs $<TARGET_FILE_DIR:rlxkv_core_web>/rlxkv_core_web.mjs
          $<TARGET_FILE_DIR:rlxkv_core_web>/rlxkv_core_web.wasm ${RLXKV_DIST}/rlxkv_core_web.mjs
  COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE_DIR:rlxkv_core_web>/rlxkv_core_web.wasm ${RLXKV_DIST}/
  VERBATIM)
rlxkv_node_glue(rlxkv_core_test ${CMAKE_CURRENT_BINARY_DIR}/test)
