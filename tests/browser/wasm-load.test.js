// Browser tests of what the library loads: a page whose server answers the
// wasm's URL with an HTML page (what a dev server does for a file it does
// not have) gets init() rejected with RlxkvError 'WASM_LOAD' naming that
// URL and the fix, not Emscripten's "expected magic word" abort, with
// js/index.js and the bundle; and a chunk of the bundle gone from the
// server (a deploy renamed it under an open page) fails only the calls that
// need it, with RlxkvError 'IO' naming it.
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

browserTest('a bundle chunk gone from the server fails only the call that needs it, with IO naming it', async (t, session) => {
  const gone = [];
  await session.context.route(/\/wasm\/dist\/rlxkv-(watch|copy|opfs-blobs)-\w+\.js$/, (route) => {
    gone.push(route.request().url().split('/').pop());
    return route.fulfill({ status: 404, contentType: 'text/html', body: '<!doctype html>\n<title>404</title>\n' });
  });
  const page = await session.context.newPage();
  await page.goto(`${session.url}${HARNESS}?lib=bundle`);
  await page.waitForFunction(() => !!(window.T && window.T.ready));
  const got = await page.evaluate(async () => {
    await window.T.ready;
    const failure = (p) => p.then(() => null, (e) => ({ name: e.name, code: e.code, message: e.message }));
    const watching = await failure(window.T.open({ path: '/chunk-gone', watch: true }));
    const opfs = await failure(window.T.open({ path: '/chunk-gone', storage: 'opfs' }));
    const copy = await failure(window.T.copyStore({ storage: 'idb', path: '/chunk-gone' }, { storage: 'idb', path: '/chunk-gone-copy' }));
    // What needs no chunk goes on: a cache on IndexedDB, without watching.
    const opened = await window.T.open({ path: '/chunk-gone' });
    await window.T.insert([1], 1);
    const flushed = await window.T.flush();
    await window.T.close();
    return { watching, opfs, copy, opened: opened.storage, flushed };
  });
  for (const [call, part] of [['watching', 'watch'], ['opfs', 'OPFS'], ['copy', 'copyStore']]) {
    assert.equal(got[call]?.name, 'RlxkvError', `${call}: ${JSON.stringify(got[call])}`);
    assert.equal(got[call].code, 'IO');
    assert.ok(got[call].message.startsWith(`loading rlxkv's ${part} code: `), got[call].message);
  }
  assert.deepEqual(gone.map((f) => f.split('-').slice(1, -1).join('-')).sort(), ['copy', 'opfs-blobs', 'watch']);
  assert.equal(got.opened, 'idb');
  assert.deepEqual(got.flushed, { ok: true });
});
