// The demo page's transformers.js engine as a visitor meets it: the engine
// switch (kept in localStorage across reloads), the model's load shown as it
// goes (each file's share, then the silent phases), a cold first reply of the
// project's test model, a reload, and a warm reply whose prefix is read from
// IndexedDB (its bytes shown) with a smaller time to first token and the same
// tokens. Then a model folder of one's own (MODEL_DIR, served at /model-dir/),
// its second reply from memory.
// Nothing may come from other origins (workers' requests included).
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { browserTest, localOnly } from './helpers.js';

const artifacts = fileURLToPath(new URL('./artifacts/', import.meta.url));
const models = fileURLToPath(new URL('../../build/models/', import.meta.url));

async function reply(page) {
  await page.waitForSelector('body[data-state="ready"]', { timeout: 60_000 });
  await page.click('[data-testid="send-button"]');
  await page.waitForSelector('body[data-state="busy"]', { timeout: 10_000 }).catch(() => {});
  await page.waitForSelector('body[data-state="ready"]', { timeout: 120_000 });
  return {
    ttft: Number(await page.getAttribute('[data-testid="ttft"]', 'data-ms')),
    source: await page.getAttribute('[data-testid="source"]', 'data-source'),
    matched: Number((await page.textContent('[data-testid="matched"]')).replace(/\D/g, '')),
    prefilled: Number((await page.textContent('[data-testid="prefilled"]')).replace(/\D/g, '')),
    output: await page.textContent('[data-testid="output"]'),
    status: await page.textContent('[data-testid="status"]'),
    restore: {
      source: await page.getAttribute('[data-testid="restore"]', 'data-source'),
      bytes: Number(await page.getAttribute('[data-testid="restore"]', 'data-bytes')),
    },
  };
}

/** Every text the status line shows, from each page load on (window.statuses). */
function recordStatuses(page) {
  return page.addInitScript(() => {
    window.statuses = [];
    document.addEventListener('DOMContentLoaded', () => {
      const status = document.querySelector('[data-testid="status"]');
      window.statuses.push(status.textContent);
      new MutationObserver(() => window.statuses.push(status.textContent)).observe(status, { childList: true, characterData: true, subtree: true });
    });
  });
}

/** Page errors and console errors, collected. */
function watchErrors(page) {
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  return errors;
}

browserTest('demo, transformers.js engine: switched to, cold, reload, warm from IndexedDB with the same reply', async (t, session) => {
  mkdirSync(artifacts, { recursive: true });
  const outside = [], seen = [];
  await localOnly(session, outside, seen);
  const page = session.context.pages()[0] || await session.context.newPage();
  await page.setViewportSize({ width: 1200, height: 900 });
  const errors = watchErrors(page);
  await recordStatuses(page);

  await page.goto(`${session.url}/demo/`);
  await page.waitForSelector('body[data-state="ready"]', { timeout: 60_000 });
  assert.equal(await page.inputValue('[data-testid="engine"]'), 'builtin', 'the built-in engine by default');
  // The switch saves the choice and reloads the page with it.
  await Promise.all([page.waitForEvent('load'), page.selectOption('[data-testid="engine"]', 'transformers.js')]);
  const cold = await reply(page);
  assert.match(await page.textContent('[data-testid="engine-name"]'), /^\/build\/models\/rlxkv-demo\/ on transformers\.js 4\.3\./);
  // The load, as it went: the model file's share, then the phases that report nothing.
  const statuses = await page.evaluate(() => window.statuses);
  assert.ok(statuses.some((s) => /fetching the model files: onnx\/model\.onnx \d+% \(/.test(s)), statuses.join('\n'));
  assert.ok(statuses.some((s) => /starting ONNX Runtime/.test(s)), statuses.join('\n'));
  assert.deepEqual((await page.getAttribute('[data-testid="load-progress"]', 'data-phases')).split(' '), ['libraries', 'files', 'session', 'warmup', 'cache']);
  assert.ok((await page.getAttribute('[data-testid="load-progress"]', 'data-files')).split(' ').includes('onnx/model.onnx'));
  assert.match(await page.textContent('[data-testid="load-log"]'), /^Loaded in [\d.]+ s: .*model files [\d.]+ MiB/);
  assert.equal(cold.source, 'computed', JSON.stringify(cold));
  assert.equal(cold.matched, 0);
  assert.ok(cold.output.length > 0);
  await page.screenshot({ path: join(artifacts, 'demo-tjs-cold.png'), fullPage: true });

  await page.reload();
  const warm = await reply(page);
  assert.equal(await page.inputValue('[data-testid="engine"]'), 'transformers.js', 'the engine kept across the reload');
  assert.equal(warm.source, 'storage', JSON.stringify(warm));
  assert.ok(warm.matched > 1000, `restored prefix of ${warm.matched} tokens`);
  assert.equal(warm.restore.source, 'storage');
  assert.equal(warm.restore.bytes, warm.matched * 128 * 4 * 2 * 4, 'the KV read: matched tokens x 4 heads x 32 x 4 bytes x K,V x 4 layers');
  assert.match(warm.status, /^Restored from IndexedDB: [\d.]+ MiB of KV, its entry read in /);
  // Work, not wall time (a busy machine can make any reply slow): the warm reply prefills fewer tokens.
  assert.ok(warm.prefilled < cold.prefilled, `warm prefilled ${warm.prefilled} < cold ${cold.prefilled}`);
  assert.equal(warm.output, cold.output, 'greedy: the same reply warm and cold');
  assert.equal(Number(await page.getAttribute('[data-testid="chart"]', 'data-runs')), 2, "this engine's chart kept across the reload");
  t.diagnostic(`TTFT cold ${cold.ttft} ms, warm ${warm.ttft} ms`);
  await page.screenshot({ path: join(artifacts, 'demo-tjs-warm.png'), fullPage: true });

  // The worker's requests are watched too; onnxruntime-web's build without asyncify, only.
  assert.deepEqual([...new Set(seen.filter((p) => /onnxruntime-web.*\.wasm$/.test(p)))], ['/node_modules/onnxruntime-web/dist/ort-wasm-simd-threaded.wasm']);
  assert.deepEqual(outside, [], 'nothing requested from other origins');
  assert.deepEqual(errors, []);
}, { timeout: 180_000 });

browserTest('demo, transformers.js engine: a MODEL_DIR folder served at /model-dir/ (float16 KV), reused from memory', async (t, session) => {
  const outside = [];
  await localOnly(session, outside);
  const page = session.context.pages()[0] || await session.context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${session.url}/demo/?engine=transformers.js&model=/model-dir/`);
  const first = await reply(page);
  assert.match(await page.textContent('[data-testid="engine-name"]'), /^\/model-dir\/ on transformers\.js .*float16 KV/);
  assert.equal(await page.inputValue('[data-testid="model-dir"]'), '/model-dir/');
  assert.equal(first.source, 'computed');
  const second = await reply(page);
  assert.equal(second.source, 'memory', JSON.stringify(second));
  assert.equal(second.restore.source, 'memory');
  assert.ok(second.restore.bytes > 0);
  assert.ok(second.matched > 1000);
  assert.equal(second.output, first.output);
  assert.deepEqual(outside, []);
  assert.deepEqual(errors, []);
}, { timeout: 180_000, serve: { modelDir: join(models, 'rlxkv-demo-f16kv') } });
