// Writes the browser build's glue (wasm/dist/rlxkv_core_web.mjs, what the
// browser bundle carries: wasm/bundle.mjs): a small loader in place of the
// glue Emscripten 3.1.6 links, which is mostly machinery this wasm never
// uses (run dependencies, pre/post-run queues, its own wasm fetching, a
// wrapper per export that looks the export up again on every call: 2.1 KB
// of the bundle gzipped). Only wasm/core.js calls it, always with the
// wasm's bytes (it fetches and checks them), so the loader instantiates
// them, runs the C constructors and hands back what core.js and
// native-cache.js read: the exports by their C names (`_malloc`,
// `_rlxkv_web_put`, ...; the wasm's own are minified, and change with each
// link) and the heap views core.js reads, HEAPU8 and HEAPU32, renewed when
// memory grows. Memory grows only through the one import, emscripten_resize_heap,
// done as Emscripten's glue does it. The names are read from Emscripten's
// glue and checked against the wasm: anything this loader cannot stand
// in for (another import, an export it does not know) fails the build.
//
//   node wasm/web-glue.mjs EMSCRIPTEN_GLUE WASM OUT
import { readFileSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';

const [from, wasmFile, to] = process.argv.slice(2);
if (!from || !wasmFile || !to) {
  console.error('usage: node wasm/web-glue.mjs EMSCRIPTEN_GLUE WASM OUT');
  process.exit(2);
}
function fail(what) {
  console.error(`web-glue: ${what}: is this Emscripten 3.1.6 glue, linked as wasm/wasm.cmake links rlxkv_core_web?`);
  process.exit(1);
}
/** The one match of re in the glue (its groups), or the build fails. */
function one(re, what) {
  const all = [...glue.matchAll(new RegExp(re, 'g'))];
  if (all.length !== 1) fail(`${all.length} matches of ${what}, not one`);
  return all[0];
}

const glue = readFileSync(from, 'utf8');
const wasmName = basename(wasmFile);
const [, importModule] = one(/var info=\{"(\w+)":asmLibraryArg\}/, 'the import object');
const [, imports] = one(/var asmLibraryArg=\{([^}]*)\}/, 'the imports');
const importField = /^"(\w+)":_emscripten_resize_heap$/.exec(imports)?.[1];
if (!importField) fail(`imports other than emscripten_resize_heap (${imports})`);
const [, memoryKey] = one(/wasmMemory=Module\["asm"\]\["(\w+)"\]/, 'the memory export');
const [, ctorsKey] = one(/addOnInit\(Module\["asm"\]\["(\w+)"\]\)/, 'the constructors export');
one(/function _emscripten_get_heap_max\(\)\{return 4294901760\}/, 'a 4 GiB heap (MAXIMUM_MEMORY)');

// var _f=Module["_f"]=function(){return(_f=Module["_f"]=Module["asm"]["x"]).apply(null,arguments)};
const exportsByKey = {};
for (const [, v, name, v2, name2, key] of glue.matchAll(
  /var ([\w$]+)=Module\["(\w+)"\]=function\(\)\{return\(([\w$]+)=Module\["(\w+)"\]=Module\["asm"\]\["(\w+)"\]\)\.apply\(null,arguments\)\};/g)) {
  if (v !== v2 || name !== name2) fail(`a wrapper that is not of one export (${name})`);
  if (key !== ctorsKey) exportsByKey[key] = name;
}

const wasmExports = WebAssembly.Module.exports(new WebAssembly.Module(readFileSync(wasmFile)));
for (const { name, kind } of wasmExports) {
  const known = name === memoryKey ? kind === 'memory' : name === ctorsKey || exportsByKey[name] ? kind === 'function' : kind === 'table';
  if (!known) fail(`the wasm's export "${name}" (${kind}), which the glue does not name`);
}
for (const key of Object.keys(exportsByKey)) {
  if (!wasmExports.some((e) => e.name === key)) fail(`the glue's export "${exportsByKey[key]}" ("${key}"), which the wasm lacks`);
}

writeFileSync(to, `// Written by wasm/web-glue.mjs (see there) from Emscripten's glue for ${wasmName}.
// Where the wasm is: beside this file, and the package's export of it (wasm/patch-glue.mjs says why).
export const wasmUrls = () => [new URL(${JSON.stringify(wasmName)}, import.meta.url), new URL(${JSON.stringify(`rlxkv/${wasmName}`)}, import.meta.url)];

/** The wasm's exports (minified names) by the names Emscripten's glue gives them. */
const EXPORTS = ${JSON.stringify(exportsByKey)};

/** The module from the wasm's bytes, { wasmBinary }: its exports by C name, and heap views. */
export default async function createRlxkvCore({ wasmBinary }) {
  const M = {};
  let memory;
  const views = () => {
    M.HEAPU8 = new Uint8Array(memory.buffer);
    M.HEAPU32 = new Uint32Array(memory.buffer);
  };
  // emscripten_resize_heap as Emscripten's glue grows memory: to the size
  // asked, but at least 20% more than now (10%, 5%, 2.5% if that fails),
  // at most 96 MiB more than asked; a 4 GiB - 64 KiB heap at most.
  const MAX = 4294901760;
  const resizeHeap = (requested) => {
    requested >>>= 0;
    const old = memory.buffer.byteLength;
    if (requested > MAX) return false;
    for (let cutDown = 1; cutDown <= 4; cutDown *= 2) {
      const over = Math.min(old * (1 + 0.2 / cutDown), requested + 100663296);
      const size = Math.min(MAX, Math.ceil(Math.max(requested, over) / 65536) * 65536);
      try {
        memory.grow((size - old + 65535) >>> 16);
        views();
        return true;
      } catch {}
    }
    return false;
  };
  const { instance } = await WebAssembly.instantiate(wasmBinary, { ${importModule}: { ${importField}: resizeHeap } });
  const x = instance.exports;
  memory = x.${memoryKey};
  views();
  for (const key in EXPORTS) M[EXPORTS[key]] = x[key];
  x.${ctorsKey}(); // __wasm_call_ctors
  return M;
}
`);
