// Bundles the package for browsers into web/dist/rlxkv.browser.js: one
// minified ES module (the API, the boundary and the browser-only glue),
// with rlxkv_core_web.wasm found next to it through import.meta.url.
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';

const here = (p) => fileURLToPath(new URL(p, import.meta.url));

// core.js imports the universal glue; browsers get the one without Node's
// file system.
const browserGlue = {
  name: 'browser-glue',
  setup(b) {
    b.onResolve({ filter: /\/dist\/rlxkv_core\.mjs$/ }, () => ({ path: here('./dist/rlxkv_core_web.mjs') }));
  },
};

await build({
  entryPoints: [here('../js/index.js')],
  outfile: here('./dist/rlxkv.browser.js'),
  bundle: true,
  format: 'esm',
  minify: true,
  platform: 'neutral',
  target: 'es2022',
  external: ['node:*'],
  plugins: [browserGlue],
  legalComments: 'none',
  banner: { js: '// rlxkv (GPL-3.0-only): browser bundle. Source: js/ and web/.' },
  logLevel: 'warning',
});
