// The rlxkv CLI, run as a user would: a child process on real files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  readFileSync, writeFileSync, readdirSync, copyFileSync, utimesSync, truncateSync, chmodSync, rmSync, mkdirSync, symlinkSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import init from 'rlxkv';
import { vectorsDir, tempDir, kvFor, range, storeFiles } from './helpers.js';
import { encodeBlob, widenF16, u64Bytes } from '../../format/blob.js';
import { main } from '../../js/cli.js';
import { Store } from '../../js/store.js';

const cli = fileURLToPath(new URL('../../js/cli.js', import.meta.url));
const small = join(vectorsDir, 'seed_small.rlxkv');
const model = join(vectorsDir, 'model_4l_37t.rlxkv');

function rlxkv(...args) {
  const r = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

test('inspect --json describes each blob', () => {
  const one = rlxkv('inspect', '--json', model);
  assert.equal(one.code, 0, one.err);
  assert.deepEqual(JSON.parse(one.out), {
    file: model, format: 'RLXKV001', dtype: 'f32', fingerprint: '0x123456789abcdef0', pastLen: 37, tokens: 37, layers: 4,
    kLens: [1184, 1184, 1184, 1184], vLens: [1184, 1184, 1184, 1184], kvBytes: 8 * 1184 * 4, rowMajor: true,
  });
  const two = JSON.parse(rlxkv('inspect', '--json', small, model).out);
  assert.equal(two.length, 2);
  assert.equal(two[0].fingerprint, '0x000000000000abcd');
  const text = rlxkv('inspect', small);
  assert.match(text.out, /past length 3, tokens 3, layers 1/);
});

test('verify passes good blobs and names each bad one', () => {
  assert.equal(rlxkv('verify', small, model).code, 0);
  assert.equal(rlxkv('verify', '--fingerprint', '0xabcd', small).code, 0);
  const dir = tempDir();
  const cut = join(dir, 'cut.rlxkv');
  writeFileSync(cut, readFileSync(model).subarray(0, 1000));
  const r = rlxkv('verify', '--fingerprint', 'abcd', small, model, cut, join(dir, 'missing.rlxkv'));
  assert.equal(r.code, 1);
  assert.match(r.err, new RegExp(`${model}: stale`));
  assert.match(r.err, /cut\.rlxkv: .*truncated/);
  assert.match(r.err, /missing\.rlxkv: no such file/);
  assert.doesNotMatch(r.err, /at .*\.js:\d+/, 'no stack trace');
});

test('tokens and rewrite', () => {
  assert.deepEqual(JSON.parse(rlxkv('tokens', small).out).reduce((s, t) => s + t, 0), 24);
  const out = join(tempDir(), 'again.rlxkv');
  assert.equal(rlxkv('rewrite', model, out).code, 0);
  assert.deepEqual(readFileSync(out), readFileSync(model));
});

test('ls and prune on a directory written by the API', async () => {
  const dir = tempDir();
  const rlx = await init();
  const cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: 0x42n, storage: 'fs', path: dir });
  for (let i = 0; i < 4; i++) {
    cache.insert(range(i * 100, 16), kvFor(16));
    await cache.flush();
  }
  await cache.close();
  copyFileSync(small, join(dir, 'ffffffffffffffff.rlxkv')); // valid, another fingerprint, not its own name
  writeFileSync(join(dir, '0123456789abcdef.rlxkv'), 'junk');

  const ls = JSON.parse(rlxkv('ls', '--json', '--fingerprint', '0x42', dir).out);
  assert.equal(ls.blobs.length, 6);
  assert.deepEqual(ls.totals, { ...ls.totals, ok: 4, foreign: 1, corrupt: 1 });
  assert.equal(ls.blobs.find((b) => b.name === 'ffffffffffffffff.rlxkv').fingerprint, '0x000000000000abcd');
  const table = rlxkv('ls', dir);
  assert.match(table.out, /6 blobs/);
  assert.match(table.out, /ffffffffffffffff\.rlxkv +RLXKV001 .* foreign/);

  const each = ls.blobs.find((b) => b.status === 'ok').bytes;
  const dry = rlxkv('prune', dir, '--fingerprint', '42', '--max-bytes', String(2 * each), '--dry-run');
  assert.match(dry.out, /would remove 3 blobs/); // the junk and the 2 least recently used
  assert.equal(storeFiles(dir).length, 6);
  const real = rlxkv('prune', dir, '--fingerprint', '42', '--max-bytes', String(2 * each));
  assert.equal(real.code, 0, real.err);
  assert.match(real.out, /removed 3 blobs/);
  assert.deepEqual(storeFiles(dir).filter((n) => n === 'ffffffffffffffff.rlxkv'), ['ffffffffffffffff.rlxkv'], 'verify says ok, ls foreign: prune keeps it');
  assert.equal(storeFiles(dir).length, 3);
  assert.match(rlxkv('verify', join(dir, 'ffffffffffffffff.rlxkv')).out, /ok \(RLXKV001\)/);
});

test('prune without a fingerprint budgets every blob, oldest first', async () => {
  const dir = tempDir();
  const rlx = await init();
  for (const fp of [1n, 2n, 3n]) {
    // Saved one after another: the blob of fingerprint 1 is the least recently used.
    const cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: fp, storage: 'fs', path: dir });
    cache.insert([Number(fp)], kvFor(1));
    await cache.close();
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const each = JSON.parse(rlxkv('ls', '--json', dir).out).blobs[0].bytes;
  const r = rlxkv('prune', dir, '--max-bytes', String(each));
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /removed 2 blobs/);
  const ls = JSON.parse(rlxkv('ls', '--json', '--fingerprint', '3', dir).out);
  assert.deepEqual(ls.blobs.map((b) => b.status), ['ok'], 'the newest stays');
});

/** A pid above any pid_max: no process has it (store/fs-blobs.js judges a temporary file by its writer's pid). */
const DEAD_PID = (0x7ffffffe).toString(16);
/** This test's pid: a writer alive while the CLI runs. */
const LIVE_PID = process.pid.toString(16);

test('prune also removes what a save killed mid-write left behind', async () => {
  const dir = tempDir();
  const rlx = await init();
  const cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: 7n, storage: 'fs', path: dir });
  cache.insert([1, 2, 3], kvFor(3));
  await cache.close();
  const [blob] = storeFiles(dir);
  // Abandoned: an hour old whoever wrote it, or its writer's process gone.
  const crashed = `${blob}.${LIVE_PID}-7f00aa-3.tmp`, killed = `${blob}.${DEAD_PID}-7f00aa-5.tmp`, inProgress = `${blob}.${LIVE_PID}-7f00aa-4.tmp`;
  for (const name of [crashed, killed, inProgress, 'notes.tmp']) writeFileSync(join(dir, name), 'RLXKV0');
  const twoHoursAgo = new Date(Date.now() - 2 * 3600 * 1000);
  utimesSync(join(dir, crashed), twoHoursAgo, twoHoursAgo);
  utimesSync(join(dir, 'notes.tmp'), twoHoursAgo, twoHoursAgo);
  assert.equal(rlxkv('prune', dir, '--dry-run').code, 0);
  assert.equal(storeFiles(dir).length, 5, 'a dry run removes nothing');
  const r = rlxkv('prune', dir);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /removed 2 abandoned temporaries/);
  assert.deepEqual(storeFiles(dir).sort(), [blob, inProgress, 'notes.tmp'].sort());
});

test('clear errors, never a stack trace', () => {
  const dir = tempDir();
  for (const [args, pattern] of [
    [['inspect', dir], /is a directory/],
    [['inspect', join(dir, 'nope.rlxkv')], /no such file/],
    [['ls', join(dir, 'nope')], /no such directory/],
    [['prune', dir, '--max-bytes', 'lots'], /not a byte count/],
    [['verify', '--fingerprint', 'xyz', small], /not a 64-bit hex number/],
    [['frobnicate'], /unknown command/],
  ]) {
    const r = rlxkv(...args);
    assert.notEqual(r.code, 0, args.join(' '));
    assert.match(r.err, pattern);
    assert.doesNotMatch(r.err, /\n\s+at /);
  }
  assert.match(rlxkv('prune', '--help').out, /usage: rlxkv prune/);
});

test('RLXKVF16 blobs: inspect, verify, tokens, and rewrite --as RLXKV001 widens', () => {
  const dir = tempDir();
  const f16 = join(dir, 'half.rlxkv');
  const bits = Uint16Array.of(0x7e01, 0x8000, 0x0001, 0x7c00, 0x3c00, 0xfc01);
  writeFileSync(f16, encodeBlob(Uint32Array.of(4, 5, 6), [bits, bits.subarray(0, 3)], 0x77n));
  const info = JSON.parse(rlxkv('inspect', '--json', f16).out);
  assert.deepEqual(info, {
    file: f16, format: 'RLXKVF16', dtype: 'f16', fingerprint: '0x0000000000000077', pastLen: 3, tokens: 3, layers: 1,
    kLens: [6], vLens: [3], kvBytes: 2 * 9, rowMajor: true,
  });
  assert.match(rlxkv('inspect', f16).out, /format +RLXKVF16 \(f16 values\)/);
  assert.match(rlxkv('verify', '--fingerprint', '77', f16).out, /ok \(RLXKVF16\)/);
  assert.equal(rlxkv('tokens', f16).out.trim(), '[4,5,6]');
  const same = join(dir, 'same.rlxkv'), wide = join(dir, 'wide.rlxkv');
  assert.equal(rlxkv('rewrite', f16, same).code, 0);
  assert.deepEqual(readFileSync(same), readFileSync(f16));
  const r = rlxkv('rewrite', '--as', 'RLXKV001', f16, wide);
  assert.equal(r.code, 0, r.err);
  assert.deepEqual(new Uint8Array(readFileSync(wide)),
    encodeBlob(Uint32Array.of(4, 5, 6), [widenF16(bits), widenF16(bits.subarray(0, 3))], 0x77n));
  assert.equal(JSON.parse(rlxkv('inspect', '--json', wide).out).kvBytes, 4 * 9);
  assert.match(rlxkv('rewrite', '--as', 'RLXKVF16', wide, same).err, /only RLXKV001/);
});

test('rewrite into a store directory names the blob as the store does and leaves nothing behind', async () => {
  const dir = tempDir();
  writeFileSync(join(dir, 'keep.txt'), 'x');
  const r = rlxkv('rewrite', model, dir);
  assert.equal(r.code, 0, r.err);
  const rlx = await init();
  const store = await rlx.openStore(dir);
  const listed = store.list(0x123456789abcdef0n);
  await store.close();
  assert.deepEqual(listed.map((b) => b.status), ['ok'], 'under its own name: ok, not foreign');
  assert.deepEqual(storeFiles(dir).sort(), [listed[0].name, 'keep.txt'].sort(), 'no temporary left');
  // a rewrite that cannot write leaves no temporary either
  const bad = rlxkv('rewrite', model, join(dir, 'no', 'such', 'dir.rlxkv'));
  assert.equal(bad.code, 1);
  assert.match(bad.err, /writing .*ENOENT/);
  assert.deepEqual(storeFiles(dir).sort(), [listed[0].name, 'keep.txt'].sort());
});

test('inspect and verify refuse fifos and devices at once instead of hanging', () => {
  const dir = tempDir();
  const fifo = join(dir, 'app.rlxkv');
  assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
  for (const file of [fifo, '/dev/zero']) {
    for (const cmd of ['inspect', 'verify', 'tokens', 'rewrite']) {
      const args = cmd === 'rewrite' ? [cmd, file, join(dir, 'out.rlxkv')] : [cmd, file];
      const r = spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8', timeout: 20000 });
      assert.equal(r.signal, null, `${cmd} ${file} hung`);
      assert.equal(r.status, 1, `${cmd} ${file}`);
      assert.match(r.stderr, /not a regular file/);
    }
  }
});

test('ls shows the temporaries of saves and prune counts them', async () => {
  const dir = tempDir();
  const rlx = await init();
  const cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: 9n, storage: 'fs', path: dir });
  cache.insert([1, 2], kvFor(2));
  await cache.close();
  const [blob] = storeFiles(dir);
  const live = `${blob}.${LIVE_PID}-1-1.tmp`, dead = `${blob}.${LIVE_PID}-1-2.tmp`;
  writeFileSync(join(dir, live), Buffer.alloc(1000));
  writeFileSync(join(dir, dead), Buffer.alloc(3000));
  const old = new Date(Date.now() - 2 * 3600 * 1000);
  utimesSync(join(dir, dead), old, old);
  const ls = JSON.parse(rlxkv('ls', '--json', dir).out);
  assert.deepEqual(ls.temps.map((t) => [t.name, t.status, t.bytes]).sort(), [[dead, 'abandoned', 3000], [live, 'temp', 1000]].sort());
  assert.equal(ls.totals.temps, 2);
  assert.equal(ls.totals.tempBytes, 4000);
  assert.match(rlxkv('ls', dir).out, /2 save temporaries, 4000 bytes/);
  const dry = rlxkv('prune', dir, '--dry-run');
  assert.match(dry.out, /would remove 1 abandoned temporary \(3000 bytes\), 1 live kept \(1000 bytes\)/);
  // the live temporary counts against the budget: a budget of the blob alone drops the blob
  const each = ls.blobs[0].bytes;
  assert.match(rlxkv('prune', dir, '--max-bytes', String(each), '--dry-run').out, /would remove 1 blob \(/);
  assert.match(rlxkv('prune', dir, '--max-bytes', String(each + 1000)).out, /removed 0 blobs/);
  assert.deepEqual(storeFiles(dir).sort(), [blob, live].sort());
});

test('a fifo and a socket beside the blobs: ls lists the blobs, prune and a cache open work', async () => {
  const dir = tempDir();
  const blob = rlxkv('rewrite', small, dir);
  assert.equal(blob.code, 0, blob.err);
  assert.equal(spawnSync('mkfifo', [join(dir, 'app.lock')]).status, 0);
  const sock = spawnSync('python3', ['-c', `import socket; socket.socket(socket.AF_UNIX).bind(${JSON.stringify(join(dir, 'helper.sock'))})`]);
  assert.equal(sock.status, 0, String(sock.stderr));
  const ls = rlxkv('ls', '--json', dir);
  assert.equal(ls.code, 0, ls.err);
  assert.equal(JSON.parse(ls.out).blobs.filter((b) => b.status === 'ok').length, 1);
  assert.equal(rlxkv('prune', '--dry-run', dir).code, 0);
  const rlx = await init();
  const e = rlx.decodeEntry(readFileSync(small));
  const cache = await rlx.openCache({ capBytes: 1 << 24, fingerprint: e.fingerprint, storage: 'fs', path: dir });
  assert.equal(cache.restoreReport.indexed, 1);
  await cache.close();
});

test('a symlink named like a blob is no blob: ls does not list it, prune leaves it and its target', () => {
  const dir = tempDir(), elsewhere = join(tempDir(), 'junk.rlxkv');
  writeFileSync(elsewhere, 'junk');
  symlinkSync(elsewhere, join(dir, '0123456789abcdef.rlxkv'));
  assert.equal(rlxkv('rewrite', small, dir).code, 0);
  const ls = JSON.parse(rlxkv('ls', '--json', dir).out);
  assert.deepEqual(ls.blobs.map((b) => b.status), ['ok']);
  assert.equal(rlxkv('prune', dir, '--max-bytes', '0').code, 0);
  assert.deepEqual(storeFiles(dir), ['0123456789abcdef.rlxkv']);
  assert.equal(readFileSync(elsewhere, 'utf8'), 'junk');
});

test('verify and inspect call a valid blob of more than 2 GiB too large (they read a file whole); ls lists it valid from its header', () => {
  const dir = tempDir();
  // One layer whose K block claims 2^29 floats: a blob of 2 GiB and 56
  // bytes, all but its head a hole of a sparse file. The V block's length,
  // 0, is the hole's last 8 bytes.
  const n = 2 ** 29;
  const blob = encodeBlob(Uint32Array.of(), [new Float32Array(0), new Float32Array(0)], 0x42n);
  blob.set(u64Bytes(n), 40);
  const big = join(dir, 'big.rlxkv'), junk = join(dir, 'junk.rlxkv');
  writeFileSync(big, blob.subarray(0, 48));
  truncateSync(big, blob.length + 4 * n);
  writeFileSync(junk, 'junk');
  truncateSync(junk, blob.length + 4 * n);

  // A store reads such a blob straight into its entry (tests/node/bad-input.test.js): valid, and foreign under this name.
  const listed = JSON.parse(rlxkv('ls', '--json', dir).out).blobs;
  assert.deepEqual(listed.map((b) => [b.name, b.status]).sort(), [['big.rlxkv', 'foreign'], ['junk.rlxkv', 'corrupt']]);
  for (const cmd of ['verify', 'inspect', 'tokens']) {
    const r = rlxkv(cmd, big);
    assert.equal(r.code, 1, cmd);
    assert.match(r.err, /big\.rlxkv: too large: a valid RLXKV001 blob of 2147483704 bytes/, cmd);
    assert.doesNotMatch(r.err, /out of range|\n\s+at /, cmd);
  }
  const r = rlxkv('verify', junk);
  assert.equal(r.code, 1);
  assert.match(r.err, /junk\.rlxkv: decoding blob: bad magic/, 'a huge file of junk is not a blob, too large or not');
});

test('ls and prune name the directory they cannot read and the errno', async () => {
  const dir = tempDir();
  const file = join(dir, 'notes.txt');
  writeFileSync(file, 'x');
  for (const cmd of ['ls', 'prune']) {
    const r = rlxkv(cmd, join(file, 'store'));
    assert.equal(r.code, 1, cmd);
    assert.ok(r.err.includes(`${join(file, 'store')}: cannot open the directory: ENOTDIR`), r.err);
  }
  // A store whose directory became a file since it was opened: it lists
  // what its open found; a prune that must remove something rejects with
  // IO naming ENOTDIR, for root too.
  const gone = join(dir, 'store');
  mkdirSync(gone);
  writeFileSync(join(gone, '0123456789abcdef.rlxkv'), 'junk');
  const rlx = await init();
  const store = await rlx.openStore({ storage: 'fs', path: gone });
  rmSync(gone, { recursive: true });
  writeFileSync(gone, 'x');
  assert.deepEqual(store.list().map((b) => b.status), ['corrupt']);
  await assert.rejects(store.prune(), (err) => err.code === 'IO' && /0123456789abcdef\.rlxkv: ENOTDIR/.test(err.message));
  await store.close();
});

test('ls and prune name the errno of a directory this user may not read', { skip: process.getuid() === 0 && 'root may read any directory' }, () => {
  const locked = join(tempDir(), 'locked');
  mkdirSync(locked, 0o000);
  try {
    for (const cmd of ['ls', 'prune']) {
      const r = rlxkv(cmd, locked);
      assert.equal(r.code, 1, cmd);
      assert.ok(r.err.includes(`${locked}: I/O error: EACCES`), r.err);
    }
  } finally {
    chmodSync(locked, 0o700);
  }
});

test('prune --max-bytes reaches Store.prune exactly, up to 2^64 - 1; 2^64 is refused', async () => {
  const dir = tempDir();
  const prune = Store.prototype.prune, budgets = [];
  Store.prototype.prune = function (fp, opts) { budgets.push(opts.maxBytes); return prune.call(this, fp, opts); };
  const out = { log() {}, error(s) { throw new Error(s); } };
  try {
    for (const n of ['18446744073709551615', '9007199254740993', '16777215t', '0']) {
      assert.equal(await main(['prune', dir, '--max-bytes', n, '--dry-run'], out), 0, n);
    }
  } finally {
    Store.prototype.prune = prune;
  }
  assert.deepEqual(budgets, [2n ** 64n - 1n, 2n ** 53n + 1n, 16777215n << 40n, 0n]);
  // A bigint budget is compared exactly below 2^53; past it, every store is within it.
  const rlx = await init();
  const cache = await rlx.openCache({ capBytes: 1 << 20, fingerprint: 5n, storage: 'fs', path: dir });
  cache.insert([1, 2], kvFor(2));
  await cache.close();
  const store = await rlx.openStore({ storage: 'fs', path: dir });
  const [{ bytes }] = store.list();
  for (const [maxBytes, removed] of [[2n ** 64n - 1n, 0], [BigInt(bytes), 0], [BigInt(bytes - 1), 1], [0n, 1]]) {
    assert.equal((await store.prune(5n, { maxBytes, dryRun: true })).removed, removed, String(maxBytes));
  }
  await store.close();
  for (const n of ['18446744073709551616', '16777216t']) {
    const r = rlxkv('prune', dir, '--max-bytes', n);
    assert.equal(r.code, 2, n);
    assert.match(r.err, /--max-bytes: more than 2\^64 - 1/, n);
  }
});

test('a new user\'s slips: verify on a directory checks it as a published tree (a blob under a name not its own fails); counts of one are singular', () => {
  const dir = tempDir();
  copyFileSync(small, join(dir, 'only.rlxkv'));
  const v = rlxkv('verify', dir);
  assert.equal(v.code, 1);
  assert.match(v.err + v.out, /only\.rlxkv: not under its own name/);
  assert.match(rlxkv('ls', dir).out, /^1 blob, \d+ bytes: /m);
});

test('fingerprint prints what rlx.fingerprintOf gives, as --fingerprint takes it', async () => {
  const rlx = await init();
  const r = rlxkv('fingerprint', 'org/model-id q4 f16');
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out.trim(), `0x${rlx.fingerprintOf('org/model-id q4 f16').toString(16).padStart(16, '0')}`);
  assert.equal(BigInt(r.out.trim()), rlx.fingerprintOf('org/model-id q4 f16'));
  assert.equal(rlxkv('fingerprint').code, 2);
});
