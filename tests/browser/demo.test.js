// The demo page as a visitor meets it: a first reply warm from the server's
// published pages (the cache's remote tier); the "first visit without the
// server's pages" toggle, a cold reply, a
// reload, a warm reply whose prefix is read from IndexedDB at its lookup
// (its bytes shown) with a smaller time to first token, and one from memory.
// Saves screenshots under tests/browser/artifacts/.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { browserTest } from './helpers.js';

const artifacts = fileURLToPath(new URL('./artifacts/', import.meta.url));

/** The browser's first tab, or a new one. */
async function firstPage(session) {
  return session.context.pages()[0] || await session.context.newPage();
}

async function reply(page) {
  await page.waitForSelector('body[data-state="ready"]', { timeout: 60_000 });
  await page.click('[data-testid="send-button"]');
  await page.waitForSelector('body[data-state="busy"]', { timeout: 10_000 }).catch(() => {});
  await page.waitForSelector('body[data-state="ready"]', { timeout: 120_000 });
  const ttft = Number(await page.getAttribute('[data-testid="ttft"]', 'data-ms'));
  const source = await page.getAttribute('[data-testid="source"]', 'data-source');
  const count = async (id) => Number((await page.textContent(`[data-testid="${id}"]`)).replace(/\D/g, ''));
  const matched = await count('matched'), prefilled = await count('prefilled');
  const restore = {
    source: await page.getAttribute('[data-testid="restore"]', 'data-source'),
    bytes: Number(await page.getAttribute('[data-testid="restore"]', 'data-bytes')),
    ms: Number(await page.getAttribute('[data-testid="restore"]', 'data-ms')),
    text: await page.textContent('[data-testid="restore"]'),
  };
  const status = await page.textContent('[data-testid="status"]');
  return { ttft, source, matched, prefilled, restore, status };
}

const ready = (page) => page.waitForSelector('body[data-state="ready"]', { timeout: 60_000 });

browserTest('demo: the server\'s pages, then a first visit without them: cold, reload, read from IndexedDB, then from memory', async (t, session) => {
  mkdirSync(artifacts, { recursive: true });
  const { url } = session;
  const errors = [];
  const page = await firstPage(session);
  await page.setViewportSize({ width: 1200, height: 900 });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  const outside = [];
  page.on('request', (r) => { if (!r.url().startsWith(url) && !r.url().startsWith('data:') && !r.url().startsWith('blob:')) outside.push(r.url()); });

  // A first visit: the default prompt's KV comes from the server, as pages found by name.
  const kvRequests = [];
  page.on('request', (r) => { if (r.url().startsWith(`${url}/demo/assets/kv/`)) kvRequests.push(r.url()); });
  await page.goto(`${url}/demo/`);
  await ready(page);
  assert.equal(await page.isChecked('[data-testid="cold-start"]'), false);
  assert.match(await page.textContent('[data-testid="status"]'), /First visit: the KV of the default prompt's first 1,101 of 1,101 tokens .* came from the server, 5 pages/);
  assert.equal(kvRequests.length, 6, '4 grid pages, the hint file of the last one, the tail to the prompt\'s end');
  const first = await reply(page);
  assert.equal(first.source, 'server', JSON.stringify(first));
  assert.equal(first.matched, 1101);
  assert.equal(first.restore.source, 'server');
  assert.match(first.status, /^From the server: 5 pages fetched at load/);

  // The toggle: a first visit without the server's pages (the page clears its cache and reloads).
  await Promise.all([page.waitForEvent('load'), page.check('[data-testid="cold-start"]')]);
  await ready(page);
  assert.equal(await page.isChecked('[data-testid="cold-start"]'), true, 'the toggle kept across its reload');
  assert.match(await page.textContent('[data-testid="status"]'), /cache is empty \(a first visit without the server's pages\)/);
  assert.equal(kvRequests.length, 6, 'no page asked for without the remote tier');
  const cold = await reply(page);
  assert.equal(cold.source, 'computed', JSON.stringify(cold));
  assert.equal(cold.matched, 0);
  assert.equal(cold.restore.bytes, 0);
  assert.match(await page.textContent('[data-testid="source"]'), /computed/);
  await page.screenshot({ path: join(artifacts, 'demo-cold.png'), fullPage: true });

  // After a reload the prompt's entry is indexed, not read: read at the first hit.
  await page.reload();
  await ready(page);
  assert.match(await page.textContent('[data-testid="status"]'), /stored in IndexedDB \(indexed at open in .*the first reply reads it/);
  assert.match(await page.textContent('[data-testid="cache-list"]'), /stored, not read yet/);
  assert.match(await page.textContent('[data-testid="cache-bytes"]'), /^0 B of .*more stored, read at a hit/);
  const warm = await reply(page);
  assert.equal(warm.source, 'storage', JSON.stringify(warm));
  assert.ok(warm.matched > 1000, `restored prefix of ${warm.matched} tokens`);
  assert.equal(warm.restore.source, 'storage');
  assert.equal(warm.restore.bytes, warm.matched * 128 * 4 * 2 * 4, 'the KV read: matched tokens x d_model x 4 bytes x K,V x 4 layers');
  assert.ok(Number.isFinite(warm.restore.ms) && warm.restore.ms >= 0, JSON.stringify(warm.restore));
  assert.match(warm.status, /^Restored from IndexedDB: 4\.3 MiB of KV, its entry read in /);
  assert.match(await page.textContent('[data-testid="source"]'), /IndexedDB/);
  // Work, not wall time (a busy machine can make any reply slow): the warm reply prefills fewer tokens.
  assert.ok(warm.prefilled < cold.prefilled, `warm prefilled ${warm.prefilled} < cold ${cold.prefilled}`);
  assert.match(await page.textContent('[data-testid="cache-list"]'), /in memory/);
  await page.screenshot({ path: join(artifacts, 'demo-warm.png'), fullPage: true });

  // The same page again: the entry is in memory now.
  const again = await reply(page);
  assert.equal(again.source, 'memory', JSON.stringify(again));
  assert.equal(again.restore.source, 'memory');
  assert.equal(again.restore.bytes, warm.restore.bytes);
  assert.match(again.status, /^Reused from memory/);
  assert.equal(Number(await page.getAttribute('[data-testid="chart"]', 'data-runs')), 4, 'chart kept across the reloads');

  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: join(artifacts, 'demo-phone.png'), fullPage: true });

  // ?asset=0 is the toggle's choice in the address (what a fresh profile's first visit then does is the above).
  await page.goto(`${url}/demo/?asset=1`);
  await ready(page);
  assert.equal(await page.isChecked('[data-testid="cold-start"]'), false);
  await page.goto(`${url}/demo/?asset=0`);
  await ready(page);
  assert.equal(await page.isChecked('[data-testid="cold-start"]'), true);
  assert.deepEqual(outside, [], 'nothing downloaded from outside');
  assert.deepEqual(errors, []);
}, { timeout: 300_000 });
