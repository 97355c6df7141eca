// Browser test: a page whose server answers the wasm's URL with an HTML
// page (what a dev server does for a file it does not have) gets init()
// rejected with RlxkvError 'WASM_LOAD' naming that URL and the fix, not
// Emscripten's "expected magic word" abort; with js/index.js and the bundle.
import assert from 'node:assert/strict';
import { HARNESS, browserTest } from './helpers.js';

const HTML = '<!doctype html>\n<title>an app</title>\n';

browserTest('a wasm URL that serves an HTML page rejects init() with WASM_LOAD naming it', async (t, session) => {
  await session.context.route('**/rlxkv_core*.wasm', (route) => route.fulfill({ status: 200, contentType: 'text/html', body: HTML }));
  const page = await session.context.newPage();
  for (const query of ['', '?lib=bundle']) {
    await page.goto(`${session.url}${HARNESS}${query}`);
    await page.waitForFunction(() => !!(window.T && window.T.ready));
    const err = await page.evaluate(() => window.T.ready.then(() => null, (e) => ({ name: e.name, code: e.code, message: e.message })));
    assert.ok(err, `init() rejects (${query || 'js/index.js'})`);
    assert.equal(err.name, 'RlxkvError');
    assert.equal(err.code, 'WASM_LOAD');
    const wasm = query ? 'rlxkv_core_web.wasm' : 'rlxkv_core.wasm'; // the bundle's own, or the universal glue's
    assert.ok(err.message.includes(`got an HTML page instead of wasm from ${session.url}/wasm/dist/${wasm}`), err.message);
    assert.match(err.message, /optimizeDeps: \{ exclude: \['rlxkv'\] \}/);
  }
});
