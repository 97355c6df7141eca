// Bundles the package for browsers into wasm/dist/rlxkv.browser.js: one
// minified ES module (the API, the boundary and the browser-only glue),
// with rlxkv_core_web.wasm (the browser build's: wasm/wasm.cmake) found next
// to it through import.meta.url (or as the package's
// rlxkv/rlxkv_core_web.wasm: wasm/patch-glue.mjs). The
// bundle carries no node: import (bundlers warn of those in browser
// builds): the Node-only paths get a module that says so if ever reached.
import { build } from 'esbuild';
import { minify } from 'terser';
import { readdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = (p) => fileURLToPath(new URL(p, import.meta.url));

// core.js imports the universal glue; browsers get wasm/web-glue.mjs's
// loader of their own wasm.
const browserGlue = {
  name: 'browser-glue',
  setup(b) {
    b.onResolve({ filter: /\/dist\/rlxkv_core\.mjs$/ }, () => ({ path: here('./dist/rlxkv_core_web.mjs') }));
  },
};

// What only Node runs (a Node directory's blobs, the wasm read from its
// file): in the bundle, a module that says so if reached.
const NODE_ONLY = /\/(store\/fs-blobs|wasm\/node-wasm)\.js$/;
const nodeOnly = (file) => (file === 'node-wasm.js' ? file : `${file} (storage 'fs')`);
const noNode = {
  name: 'no-node',
  setup(b) {
    b.onResolve({ filter: /^node:/ }, (args) => ({ path: args.path, namespace: 'no-node' }));
    b.onLoad({ filter: /.*/, namespace: 'no-node' }, (args) => ({
      contents: `throw new Error(${JSON.stringify(`rlxkv: ${args.path} is not available in the browser bundle`)});
export {};`,
    }));
    b.onLoad({ filter: NODE_ONLY }, (args) => ({
      contents: `const no = () => { throw new Error(${JSON.stringify(`rlxkv: ${nodeOnly(args.path.split('/').pop())} is Node only`)}); };
export const FsBlobs = { open: no }, readWasm = no, readPath = no;`,
    }));
  },
};

// The magic comment (V8 explicit compile hints, Chrome 136+; a plain
// comment elsewhere) compiles every function as the bundle loads, not at
// its first call: an app runs most of them (init, openCache, match,
// insert, flush) at once, so eager compiling shortens the first open and
// the first hit (the open benchmarks in BENCHMARKS.md run this bundle).
const BANNER = '//# allFunctionsCalledOnLoad\n// rlxkv (GPL-3.0-only): browser bundle.';
/** A chunk's: the license alone (the shared chunk's bytes count in the bundle's budget). */
const CHUNK_BANNER = '// rlxkv (GPL-3.0-only)';

// Split: what only some apps use is a chunk of its own, imported when
// first used (OPFS: store/opfs-blobs.js and its helper), so that the main
// file holds what every app runs. Code the two share goes into a chunk the
// main file imports.
const dist = here('./dist/');
for (const f of readdirSync(dist)) if (/^rlxkv-[\w-]+\.js$/.test(f)) unlinkSync(join(dist, f)); // an earlier build's chunks
const { outputFiles } = await build({
  entryPoints: { 'rlxkv.browser': here('../js/index.js') },
  outdir: dist,
  chunkNames: 'rlxkv-[name]-[hash]',
  splitting: true,
  write: false,
  bundle: true,
  format: 'esm',
  minify: true,
  platform: 'neutral',
  target: 'es2022',
  plugins: [browserGlue, noNode],
  legalComments: 'none',
  logLevel: 'warning',
});

// Then terser, over esbuild's output: two compress passes (what esbuild's
// minifier leaves: constants folded across statements, conditionals
// joined, code after a return dropped), then every binding renamed again,
// the short names picked from the characters the output uses most, which
// gzip compresses better than esbuild's names. A module's scope: top-level
// names too (not the names modules import and export). Both are measured
// by bench/size.mjs.
// The main file last: the build judges the bundle stale by it (scripts/build.sh).
const isMain = (out) => basename(out.path) === 'rlxkv.browser.js';
for (const out of [...outputFiles.filter((o) => !isMain(o)), ...outputFiles.filter(isMain)]) {
  const main = isMain(out);
  const { code } = await minify(out.text, { module: true, ecma: 2022, compress: { passes: 2 }, mangle: true, format: { preamble: main ? BANNER : CHUNK_BANNER, comments: false } });
  writeFileSync(out.path, code + '\n');
}
