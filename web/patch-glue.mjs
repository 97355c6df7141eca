// Copies Emscripten 3.1.6's ES-module glue to web/dist, patched so that it
// also loads as ESM under Node: 3.1.6 calls require() and __dirname there
// (fixed upstream in 3.1.27), which do not exist in an ES module. We define
// both from import.meta.url, only when running under Node, so browsers and
// workers never touch node: modules.
import { readFileSync, writeFileSync } from 'node:fs';

const [, , from, to] = process.argv;
if (!from || !to) {
  console.error('usage: node web/patch-glue.mjs GLUE_IN GLUE_OUT');
  process.exit(2);
}
const glue = readFileSync(from, 'utf8');
for (const needle of ['require("fs")', '__dirname', 'import.meta.url']) {
  if (!glue.includes(needle)) {
    console.error(`patch-glue: "${needle}" not found: is this Emscripten 3.1.6 glue?`);
    process.exit(1);
  }
}
const shim = `// Patched by web/patch-glue.mjs: Node's require/__dirname for ESM.
const require = (typeof process === 'object' && process.versions && process.versions.node && typeof window === 'undefined')
  ? (await import('node:module')).createRequire(import.meta.url) : undefined;
const __dirname = require ? require('node:path').dirname(require('node:url').fileURLToPath(import.meta.url)) : '';
`;
writeFileSync(to, shim + glue);
