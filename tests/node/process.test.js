// Importing rlxkv must not change how the app's process reports its own
// errors: no process-wide handlers from the Emscripten glue.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const entry = fileURLToPath(new URL('../../js/index.js', import.meta.url));

function run(body) {
  const src = `import init from ${JSON.stringify(entry)}; const rlx = await init(); rlx.createCache({ capBytes: 1 }).close(); ${body}`;
  return spawnSync(process.execPath, ['--input-type=module', '-e', src], { encoding: 'utf8' });
}

test("an app's uncaught error is reported as the app's", () => {
  const r = run("setTimeout(() => { throw new Error('app-failure-7'); });");
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /app-failure-7/);
  assert.doesNotMatch(r.stderr, /rlxkv_core/);
  assert.ok(r.stderr.length < 4000, `stderr is ${r.stderr.length} characters`);
});

test("an app's unhandled rejection is reported as the app's", () => {
  const r = run("Promise.reject(new Error('app-rejection-9'));");
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /app-rejection-9/);
  assert.doesNotMatch(r.stderr, /rlxkv_core/);
});

test('rlxkv adds no process listeners', () => {
  const r = run("console.log(process.listenerCount('uncaughtException'), process.listenerCount('unhandledRejection'));");
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), '0 0');
});
