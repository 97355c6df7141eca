// What a browser downloads, two ways: (1) unbundled ESM: wasm/dist/
// rlxkv_core.wasm and every JS file that js/index.js imports, transitively
// (static imports; the node:* modules that Node-only paths import
// dynamically are not fetched by browsers); (2) the minified browser bundle
// (wasm/dist/rlxkv.browser.js + rlxkv_core_web.wasm), when the build makes it.
// Raw bytes and gzip (zlib level 9), each file compressed on its own as a
// server would. Also: what weighs what inside the Emscripten glue and the
// wasm.
//
//   node bench/size.mjs OUT.json
import { readFileSync, writeFileSync, existsSync, readdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = process.argv[2];
const gz = (buf) => gzipSync(buf, { level: 9 }).length;

// ---- the module graph ------------------------------------------------------
const IMPORT_RE = /(?:^|[\s;])(?:import|export)\s*(?:[\w$*{}\s,]+?\s*from\s*)?['"]([^'"]+)['"]/g;
function graph(entry) {
  const seen = new Set();
  const stack = [resolve(root, entry)];
  while (stack.length) {
    const file = stack.pop();
    if (seen.has(file)) continue;
    seen.add(file);
    const src = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
    for (const m of src.matchAll(IMPORT_RE)) {
      const spec = m[1];
      if (!spec.startsWith('.') && !spec.startsWith('/')) continue; // node:*, bare
      stack.push(resolve(dirname(file), spec));
    }
  }
  return [...seen].sort();
}

const jsFiles = graph('js/index.js');
const wasmFile = join(root, 'wasm/dist/rlxkv_core.wasm');
const files = [wasmFile, ...jsFiles].map((f) => {
  const buf = readFileSync(f);
  return { path: relative(root, f), raw: buf.length, gz: gz(buf) };
});
const sum = (xs, k) => xs.reduce((s, x) => s + x[k], 0);
const wasm = files[0];
const js = files.slice(1);
const glueFile = js.find((f) => f.path.endsWith('rlxkv_core.mjs'));

// The minified browser bundle, when the build makes one (wasm/bundle.mjs):
// one ES module with the browser-only glue, and its own .wasm.
const bundleJs = join(root, 'wasm/dist/rlxkv.browser.js');
const bundleWasm = join(root, 'wasm/dist/rlxkv_core_web.wasm'); // the bundle's own: without folds
const webGlue = join(root, 'wasm/dist/rlxkv_core_web.mjs');
// Its chunks (wasm/bundle.mjs): those the main file imports count in what an
// app loads; the others load when first used (OPFS), reported apart.
const chunkFiles = existsSync(bundleJs) ? readdirSync(join(root, 'wasm/dist')).filter((f) => /^rlxkv-[\w-]+\.js$/.test(f)) : [];
const staticChunks = existsSync(bundleJs) ? [...readFileSync(bundleJs, 'utf8').matchAll(/\bfrom\s*"\.\/(rlxkv-[\w-]+\.js)"/g)].map((m) => m[1]) : [];
const sizeOf = (f) => {
  const buf = readFileSync(f);
  return { path: relative(root, f), raw: buf.length, gz: gz(buf) };
};
const bundle = existsSync(bundleJs) && existsSync(bundleWasm)
  ? [bundleWasm, bundleJs, ...staticChunks.map((f) => join(root, 'wasm/dist', f))].map(sizeOf)
  : null;
const lazyChunks = chunkFiles.filter((f) => !staticChunks.includes(f)).map((f) => sizeOf(join(root, 'wasm/dist', f)));

// ---- inside the glue: top-level statements of the module factory ----------
async function glueBreakdown(gluePath) {
  let acorn, walk;
  try {
    acorn = await import('/usr/share/nodejs/acorn/dist/acorn.mjs');
    walk = await import('/usr/share/nodejs/acorn-walk/dist/walk.mjs');
  } catch {
    return null; // acorn (Debian's node-acorn) missing: no breakdown
  }
  const src = readFileSync(gluePath, 'utf8');
  const ast = acorn.parse(src, { ecmaVersion: 'latest', sourceType: 'module', allowAwaitOutsideFunction: true });
  let factory = null;
  walk.full(ast, (n) => {
    if (n.type === 'FunctionExpression' && (!factory || n.end - n.start > factory.end - factory.start)) factory = n;
  });
  if (!factory) return null; // not Emscripten's glue: the browser one is wasm/web-glue.mjs's loader
  const groupOf = (s) => {
    const text = src.slice(s.start, s.end);
    const names = s.type === 'VariableDeclaration' ? s.declarations.map((d) => d.id.name)
      : s.type === 'FunctionDeclaration' ? [s.id.name] : [];
    const n = names[0] || '';
    // No build has Emscripten's file system (wasm/wasm.cmake): what is left
    // is the runtime and the few syscall stubs libc's output needs.
    if (/^___syscall_|^_fd_|^SYSCALLS$/.test(n) || /^SYSCALLS\./.test(text)) return 'syscalls (fd_write, …)';
    return 'runtime (loading, heap, strings, glue)';
  };
  const stmts = factory.body.body;
  const groups = new Map();
  for (const s of stmts) {
    const g = groupOf(s);
    if (!groups.has(g)) groups.set(g, []);
    groups.get(g).push(s);
  }
  const full = gz(Buffer.from(src));
  const rows = [];
  for (const [group, list] of groups) {
    // Marginal gzip: the glue's gzip size minus its size without this group.
    let without = '', at = 0;
    for (const s of [...list].sort((a, b) => a.start - b.start)) {
      without += src.slice(at, s.start);
      at = s.end;
    }
    without += src.slice(at);
    const raw = list.reduce((n, s) => n + s.end - s.start, 0);
    rows.push({ group, raw, gz_marginal: full - gz(Buffer.from(without)) });
  }
  rows.sort((a, b) => b.raw - a.raw);
  return rows;
}

// ---- inside the wasm: sections, and rlxkv's own code ------------------------
function wasmSections(buf) {
  const names = ['custom', 'type', 'import', 'function', 'table', 'memory', 'global', 'export', 'start', 'elem', 'code', 'data', 'datacount'];
  const rows = [];
  let at = 8;
  const leb = () => {
    let v = 0, shift = 0, b;
    do { b = buf[at++]; v |= (b & 0x7f) << shift; shift += 7; } while (b & 0x80);
    return v >>> 0;
  };
  while (at < buf.length) {
    const id = buf[at++];
    const size = leb();
    rows.push({ section: names[id] || `id ${id}`, bytes: size });
    at += size;
  }
  return rows;
}

/** CODE bytes of rlxkv's own objects in build/wasm (src/*.c, wasm/boundary.c), via llvm-objdump. */
function ownCode() {
  const dirs = [join(root, 'build/wasm/CMakeFiles/rlxkv.dir/src'), join(root, 'build/wasm/CMakeFiles/rlxkv_core.dir/wasm')];
  const objs = dirs.filter(existsSync).flatMap((d) => readdirSync(d).filter((f) => f.endsWith('.o')).map((f) => join(d, f)));
  if (!objs.length) return null;
  const per = {};
  try {
    for (const o of objs) {
      const text = execFileSync('llvm-objdump', ['-h', o], { encoding: 'utf8' });
      const m = text.match(/^\s*\d+\s+CODE\s+([0-9a-f]+)/m);
      per[relative(root, o).replace(/^build\/wasm\/CMakeFiles\/[^/]+\//, '')] = m ? parseInt(m[1], 16) : 0;
    }
  } catch {
    return null;
  }
  return per;
}

const result = {
  files,
  wasm_raw: wasm.raw,
  wasm_gz: wasm.gz,
  js_raw: sum(js, 'raw'),
  js_gz: sum(js, 'gz'),
  total_raw: sum(files, 'raw'),
  total_gz: sum(files, 'gz'),
  glue_breakdown: await glueBreakdown(join(root, glueFile.path)),
  bundle: bundle && {
    files: bundle,
    wasm_gz: bundle[0].gz,
    js_gz: sum(bundle.slice(1), 'gz'),
    lazy_chunks: lazyChunks,
    total_raw: sum(bundle, 'raw'),
    total_gz: sum(bundle, 'gz'),
    glue: existsSync(webGlue) ? relative(root, webGlue) : null,
    glue_raw: existsSync(webGlue) ? readFileSync(webGlue).length : null,
    glue_gz: existsSync(webGlue) ? gz(readFileSync(webGlue)) : null,
    glue_breakdown: existsSync(webGlue) ? await glueBreakdown(webGlue) : null,
  },
  wasm_sections: wasmSections(readFileSync(wasmFile)),
  wasm_own_code: ownCode(),
};
const text = JSON.stringify(result, null, 2) + '\n';
if (out) writeFileSync(out, text);
for (const f of files) console.error(`  ${f.path.padEnd(28)} ${String(f.raw).padStart(7)} B  ${String(f.gz).padStart(6)} B gz`);
console.error(`  total: ${result.total_raw} B, ${result.total_gz} B gzipped (wasm ${wasm.gz}, JS ${result.js_gz})`);
if (bundle) {
  for (const f of bundle) console.error(`  ${f.path.padEnd(28)} ${String(f.raw).padStart(7)} B  ${String(f.gz).padStart(6)} B gz`);
  console.error(`  browser bundle total: ${result.bundle.total_raw} B, ${result.bundle.total_gz} B gzipped`);
  for (const f of lazyChunks) console.error(`  loaded when first used: ${f.path} ${f.raw} B, ${f.gz} B gz`);
}
