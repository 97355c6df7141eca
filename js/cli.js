#!/usr/bin/env node
// rlxkv: look into, check and manage blobs (RLXKV001 and its f16 variant
// RLXKVF16, FORMATS.md) and store directories.
import {
  openSync, readSync, fstatSync, closeSync, readFileSync, writeFileSync, statSync, renameSync, realpathSync, unlinkSync, readdirSync, constants,
} from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import init from './index.js';
import { decodeBlob, encodeBlob, blobSpans } from '../format/blob.js';
import { RlxkvError } from '../wasm/errors.js';
import { loadCore } from '../wasm/core.js';
import { NativeCache } from '../wasm/native-cache.js';
import { nameOfKey } from '../format/store-index.js';
import { FsBlobs } from '../store/fs-blobs.js';
import { ownName } from '../store/records.js';
import { decodeQ8, isQ8 } from '../format/q8.js';

const HELP = {
  main: `usage: rlxkv <command> [options]

commands:
  inspect [--json] FILE...         what each blob holds
  verify [--fingerprint HEX] FILE_OR_DIR...
                                   exit 1 unless every file is a valid blob (a DIR: a published tree)
  ls [--json] [--fingerprint HEX] DIR  the blobs of a store directory
  prune DIR [--fingerprint HEX] [--max-bytes N] [--dry-run]
                                   drop corrupt and stale blobs, then the oldest
  tokens FILE                      the token ids, as JSON
  rewrite [--as RLXKV001] IN OUT   decode and encode again (validates; OUT may be a store DIR)
  publish --layout L [--dtype q8] STORE_OR_BLOB... OUTDIR
                                   pages for a remote tier, served by any static server
  fingerprint TEXT                 the fingerprint of a model id (rlx.fingerprintOf), as --fingerprint takes it

'rlxkv <command> --help' for more.`,
  inspect: `usage: rlxkv inspect [--json] FILE...
Per blob: format (RLXKV001: f32 values, RLXKVF16: f16), fingerprint, past
length, token count, layers, each K and V block length, KV bytes, and
whether every block is row-major (a multiple of the token count). --json
prints one object per file (an array for several). Only regular files are
read.`,
  verify: `usage: rlxkv verify [--fingerprint HEX] FILE_OR_DIR...
Exit 0 when every file is a valid blob, RLXKV001 or RLXKVF16, or a page (a
published 8-bit one, RLXKVPQ8, too: every scale read) of that fingerprint,
if given; else exit 1 with a line per bad file naming it and the reason. A
directory is checked as a published tree (rlxkv publish): every .rlxkv
file in it a valid blob or page under its own name, and every page's
parent there.`,
  publish: `usage: rlxkv publish --layout ORDER,HEADS,HEAD_DIM [--fingerprint HEX] [--page-tokens N]
                     [--dtype f32|f16|q8] [--as-fingerprint HEX] STORE_OR_BLOB... OUTDIR
Cuts every entry of the store directories and whole blob files given into
pages of N tokens (default 256) on a fixed grid, named by their tokens
(FORMATS.md, Names), and writes them into OUTDIR, each page once: what a
cache with remote: { url } fetches by name. Where entries end past a grid
point (each store's last entries, the prefixes its entries part after,
and pinned ones), it also writes a tail page to that end, and lists the
end in the grid page's hint file, <name>.ends. ORDER is head-major or
token-major, the KV's own layout: pages are cut by token, and nothing in a
store says its order, so another order gives wrong KV (a head count or
head size that does not fit is refused: exit 1). Only entries of
--fingerprint, if given. --dtype: the pages' (default: each entry's own;
f32 and f16 convert), or q8: 8-bit pages, one f16 scale per row of
HEAD_DIM values, about a quarter of f32's bytes and half of f16's, for
clients with remote: { dtype: 'q8' }. q8 is lossy: publish it under a
fingerprint of its own, --as-fingerprint HEX (with --fingerprint), the one
those clients open their caches with (e.g. rlx.fingerprintOf('<model>
remote-q8')), so approximate KV never shares a fingerprint with computed
KV. Prints each page's name and the total bytes.
Serve the .rlxkv files as they are, with Cache-Control: public,
max-age=31536000, immutable and Content-Type: application/octet-stream
(and CORS headers for other origins); compressed (Content-Encoding) if
you like. The .ends files change when more is published into OUTDIR:
serve them with a short max-age.`,
  ls: `usage: rlxkv ls [--json] [--fingerprint HEX] DIR
The .rlxkv blobs and save temporaries of a store directory: name, format,
tokens, bytes, modified time and status, then totals. Statuses: ok, stale
(of another fingerprint than --fingerprint; without it every valid blob is
ok), foreign (valid, under a name not its own: never loaded or pruned),
corrupt, too-large (valid, more than this process can hold), unreadable,
temp (a save's temporary file, its writer maybe alive), abandoned (a dead
save's: prune removes it). Fifos, sockets and directories are not listed.`,
  prune: `usage: rlxkv prune DIR [--fingerprint HEX] [--max-bytes N] [--dry-run]
Removes corrupt blobs, blobs of other fingerprints (when --fingerprint is
given) and abandoned save temporaries, then the least recently used blobs
until they and the live temporaries total at most N bytes (N may be 64-bit,
with a k, m or g suffix). Foreign, too-large and unreadable files are never
removed. Prints what it removed (or would, with --dry-run, which removes
nothing).`,
  tokens: `usage: rlxkv tokens FILE
Prints the blob's token ids as a JSON array.`,
  fingerprint: `usage: rlxkv fingerprint TEXT
Prints the fingerprint rlx.fingerprintOf(TEXT) gives (a 64-bit hash of its
UTF-8), in the hex that --fingerprint takes: for a cache opened with
fingerprint: rlx.fingerprintOf('org/model q4 f16'), pass the same text.`,
  rewrite: `usage: rlxkv rewrite [--as RLXKV001] IN OUT
Decodes IN and encodes it again to OUT (atomically): a valid blob comes out
byte-identical; an invalid one is refused. --as RLXKV001 writes an RLXKVF16
blob as RLXKV001, its values widened exactly. When OUT is a directory, the
blob goes into it under the name a store gives it.`,
};

class UsageError extends Error {}

/** Splits argv into flags (with their values) and positional arguments. */
function parse(args, { bool = [], value = [] }) {
  const flags = {};
  const rest = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--help' || a === '-h') flags.help = true;
    else if (bool.includes(a)) flags[a.slice(2)] = true;
    else if (value.includes(a)) {
      if (i + 1 >= args.length) throw new UsageError(`${a} needs a value`);
      flags[a.slice(2)] = args[++i];
    } else if (a.startsWith('--')) throw new UsageError(`unknown option ${a}`);
    else rest.push(a);
  }
  return { flags, rest };
}

function parseFingerprint(s) {
  if (s === undefined) return undefined;
  if (!/^(0x)?[0-9a-f]{1,16}$/i.test(s)) throw new UsageError(`--fingerprint: not a 64-bit hex number: ${s}`);
  return BigInt(s.toLowerCase().startsWith('0x') ? s : `0x${s}`);
}

/** A byte count as a bigint: a number would round 2^64 - 1 up to 2^64. */
function parseBytes(s) {
  const m = /^(\d+)([kmgt]i?b?)?$/i.exec(s || '');
  if (!m) throw new UsageError(`--max-bytes: not a byte count: ${s}`);
  const unit = (m[2] || '').toLowerCase()[0];
  const scale = { k: 1n << 10n, m: 1n << 20n, g: 1n << 30n, t: 1n << 40n }[unit] || 1n;
  const n = BigInt(m[1]) * scale;
  if (n >= 1n << 64n) throw new UsageError(`--max-bytes: more than 2^64 - 1: ${s}`);
  return n;
}

const hex = (fp) => `0x${fp.toString(16).padStart(16, '0')}`;

/**
 * The largest file inspect, verify, tokens and rewrite read whole (into
 * one array, decoded into more): past it they judge a file by its lengths
 * alone (tooLarge). A store reads such a blob straight into its entry.
 */
const MAX_FILE_BYTES = 2 ** 31 - 2;

/**
 * The bytes of a regular file. Opened without blocking and checked on the
 * descriptor, so a fifo, socket or device (/dev/zero) is refused, never
 * read; at most the size it had when opened is read. Larger than
 * MAX_FILE_BYTES: see tooLarge.
 */
function readBlobFile(file) {
  let fd;
  try {
    fd = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK || 0));
  } catch (err) {
    if (err.code === 'ENOENT') throw new Error(`${file}: no such file`);
    if (err.code === 'EISDIR') throw new Error(`${file}: is a directory, not a blob file (for a store directory: rlxkv ls ${file})`);
    throw new Error(`${file}: ${err.message}`);
  }
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) throw new Error(`${file}: is a directory, not a blob file (for a store directory: rlxkv ls ${file})`);
    if (!st.isFile()) throw new Error(`${file}: not a regular file`);
    if (st.size > MAX_FILE_BYTES) throw tooLarge(file, fd, st.size);
    const bytes = new Uint8Array(st.size);
    for (let at = 0; at < bytes.length;) {
      const n = readSync(fd, bytes, at, bytes.length - at, at);
      if (n === 0) throw new Error(`${file}: changed while read (shorter than it was)`);
      at += n;
    }
    return bytes;
  } finally {
    closeSync(fd);
  }
}

/**
 * The error for a file of more than MAX_FILE_BYTES: LIMIT, "too large",
 * when its lengths make a valid blob, as `ls` judges it; else the error
 * they make (a huge file of junk is corrupt, not too large). Reads the
 * lengths and tokens, never the values.
 */
function tooLarge(file, fd, size) {
  const limit = (what) => new RlxkvError('LIMIT', `${file}: too large: ${what}${size} bytes, more than the ${MAX_FILE_BYTES} rlxkv reads`);
  const readAt = (at, n) => {
    const want = Math.max(0, Math.min(n, size - at));
    if (want > MAX_FILE_BYTES) throw limit(''); // its tokens alone are more
    const b = new Uint8Array(want);
    let got = 0;
    for (let r; got < want && (r = readSync(fd, b, got, want - got, at + got)) > 0;) got += r;
    return b.subarray(0, got);
  };
  return limit(`a valid ${blobSpans(readAt, size).format} blob of `);
}

/** bytes / 2 or 4 per value, by the blob's format. */
const valueBytes = (e) => (e.dtype === 'f16' ? 2 : 4);

function describe(file) {
  let e;
  try {
    e = decodeBlob(readBlobFile(file));
  } catch (err) {
    throw err.message.startsWith(file) ? err : new Error(`${file}: ${err.message}`);
  }
  const kLens = e.k.map((b) => b.length);
  const vLens = e.v.map((b) => b.length);
  const n = e.tokens.length;
  return {
    file,
    format: e.format,
    dtype: e.dtype,
    fingerprint: hex(e.fingerprint),
    pastLen: e.pastLen,
    tokens: n,
    layers: e.k.length,
    kLens,
    vLens,
    kvBytes: valueBytes(e) * [...kLens, ...vLens].reduce((s, l) => s + l, 0),
    rowMajor: n > 0 && [...kLens, ...vLens].every((l) => l % n === 0),
  };
}

const commands = {
  async inspect(rlx, args, out) {
    const { flags, rest } = parse(args, { bool: ['--json'] });
    if (flags.help) return out.log(HELP.inspect);
    if (!rest.length) throw new UsageError('inspect needs at least one FILE');
    const infos = rest.map((f) => describe(f));
    if (flags.json) return out.log(JSON.stringify(infos.length === 1 ? infos[0] : infos, null, 2));
    for (const i of infos) {
      out.log(`${i.file}
  format      ${i.format} (${i.dtype} values)
  fingerprint ${i.fingerprint}
  past length ${i.pastLen}, tokens ${i.tokens}, layers ${i.layers}
  K lengths   ${i.kLens.join(', ')}
  V lengths   ${i.vLens.join(', ')}
  KV bytes    ${i.kvBytes}
  row-major   ${i.rowMajor ? `yes (${i.tokens ? (i.kLens[0] || 0) / i.tokens : 0} values per K row in layer 0)` : 'no'}`);
    }
    return 0;
  },

  async verify(rlx, args, out) {
    const { flags, rest } = parse(args, { value: ['--fingerprint'] });
    if (flags.help) return out.log(HELP.verify);
    if (!rest.length) throw new UsageError('verify needs at least one FILE');
    const fp = parseFingerprint(flags.fingerprint);
    let bad = 0;
    const dirs = rest.filter(isDirectory);
    if (dirs.length) {
      const naming = await namer();
      try {
        for (const dir of dirs) bad += verifyTree(rlx, naming, dir, fp, out);
      } finally {
        naming.free();
      }
    }
    for (const file of rest.filter((f) => !isDirectory(f))) {
      try {
        const e = decodeAny(readBlobFile(file));
        if (fp !== undefined && e.fingerprint !== fp) {
          throw new Error(`${file}: stale: fingerprint ${hex(e.fingerprint)}, expected ${hex(fp)}`);
        }
        out.log(`${file}: ok (${e.format})`);
      } catch (err) {
        bad++;
        out.error(err.message.startsWith(file) ? err.message : `${file}: ${err.message}`);
      }
    }
    return bad ? 1 : 0;
  },

  async ls(rlx, args, out) {
    const { flags, rest } = parse(args, { bool: ['--json'], value: ['--fingerprint'] });
    if (flags.help) return out.log(HELP.ls);
    if (rest.length !== 1) throw new UsageError('ls needs one DIR');
    const fp = parseFingerprint(flags.fingerprint);
    const all = await withStore(rlx, rest[0], (store) => store.list(fp));
    const isTemp = (b) => b.status === 'temp' || b.status === 'abandoned';
    const row = (b) => ({
      name: b.name,
      format: b.dtype ? (b.page ? { f32: 'RLXKVPG1', f16: 'RLXKVPH1' } : { f32: 'RLXKV001', f16: 'RLXKVF16' })[b.dtype] : null,
      tokens: b.tokens,
      bytes: b.bytes,
      mtime: b.mtime.toISOString(),
      fingerprint: ['ok', 'stale', 'foreign', 'too-large'].includes(b.status) && b.fingerprint ? hex(b.fingerprint) : null,
      status: b.status,
    });
    const rows = all.filter((b) => !isTemp(b)).map(row), temps = all.filter(isTemp).map(row);
    const count = (s) => rows.filter((r) => r.status === s).length;
    const totals = {
      blobs: rows.length,
      bytes: rows.reduce((s, r) => s + r.bytes, 0),
      ok: count('ok'),
      stale: count('stale'),
      foreign: count('foreign'),
      corrupt: count('corrupt'),
      tooLarge: count('too-large'),
      unreadable: count('unreadable'),
      temps: temps.length,
      tempBytes: temps.reduce((s, r) => s + r.bytes, 0),
    };
    if (flags.json) return out.log(JSON.stringify({ dir: rest[0], blobs: rows, temps, totals }, null, 2));
    // As wide as the longest name: a page's is 38 characters, a blob's 22, a temporary file's longer.
    const width = Math.max(22, ...[...rows, ...temps].map((r) => r.name.length));
    out.log(`${'name'.padEnd(width)} ${'format'.padEnd(8)} ${'tokens'.padStart(8)} ${'bytes'.padStart(14)}  ${'modified'.padEnd(24)} status`);
    for (const r of [...rows, ...temps]) {
      out.log(`${r.name.padEnd(width)} ${(r.format || '-').padEnd(8)} ${String(r.tokens).padStart(8)} ${String(r.bytes).padStart(14)}  ${r.mtime.padEnd(24)} ${r.status}`);
    }
    const others = ['foreign', 'tooLarge', 'unreadable'].filter((k) => totals[k]).map((k) => `, ${totals[k]} ${k === 'tooLarge' ? 'too large' : k}`).join('');
    out.log(`${counted(totals.blobs, 'blob')}, ${counted(totals.bytes, 'byte')}: ${totals.ok} ok, ${totals.stale} stale, ${totals.corrupt} corrupt${others}` +
      (temps.length ? `; ${counted(temps.length, 'save temporary', 'save temporaries')}, ${counted(totals.tempBytes, 'byte')}` : ''));
    return 0;
  },

  async prune(rlx, args, out) {
    const { flags, rest } = parse(args, { bool: ['--dry-run'], value: ['--fingerprint', '--max-bytes'] });
    if (flags.help) return out.log(HELP.prune);
    if (rest.length !== 1) throw new UsageError('prune needs one DIR');
    const fp = parseFingerprint(flags.fingerprint);
    const maxBytes = flags['max-bytes'] === undefined ? Infinity : parseBytes(flags['max-bytes']);
    const dryRun = !!flags['dry-run'];
    const { before, report, after } = await withStore(rlx, rest[0], async (store) => {
      const before = store.list(fp);
      const report = await store.prune(fp, { maxBytes, stale: fp !== undefined, dryRun });
      return { before, report, after: dryRun ? null : store.list(fp) };
    });
    const gone = dryRun ? null : new Set(after.map((b) => b.name));
    const verb = dryRun ? 'would remove' : 'removed';
    if (!dryRun) {
      for (const b of before.filter((x) => !gone.has(x.name))) out.log(`${verb} ${b.name} (${b.status}, ${b.bytes} bytes)`);
    }
    out.log(`${verb} ${counted(report.removed, 'blob')} (${counted(report.removedBytes, 'byte')}); kept ${report.kept} (${counted(report.keptBytes, 'byte')})` +
      (report.tempsRemoved || report.tempsKept
        ? `; ${verb} ${counted(report.tempsRemoved, 'abandoned temporary', 'abandoned temporaries')} (${counted(report.tempsRemovedBytes, 'byte')}), ${report.tempsKept} live kept (${counted(report.tempsKeptBytes, 'byte')})`
        : ''));
    return 0;
  },

  async fingerprint(rlx, args, out) {
    const { flags, rest } = parse(args, {});
    if (flags.help) return out.log(HELP.fingerprint);
    if (rest.length !== 1) throw new UsageError('fingerprint needs one TEXT (quote it)');
    out.log(`0x${rlx.fingerprintOf(rest[0]).toString(16).padStart(16, '0')}`);
    return 0;
  },

  async tokens(rlx, args, out) {
    const { flags, rest } = parse(args, {});
    if (flags.help) return out.log(HELP.tokens);
    if (rest.length !== 1) throw new UsageError('tokens needs one FILE');
    out.log(JSON.stringify([...decodeBlob(readBlobFile(rest[0])).tokens]));
    return 0;
  },

  async publish(rlx, args, out) {
    const { flags, rest } = parse(args, { value: ['--layout', '--fingerprint', '--page-tokens', '--dtype', '--as-fingerprint'] });
    if (flags.help) return out.log(HELP.publish);
    if (rest.length < 2) throw new UsageError('publish needs at least one STORE_OR_BLOB and OUTDIR');
    const m = /^(head-major|token-major),(\d+),(\d+)$/.exec(flags.layout || '');
    if (!m) throw new UsageError(`--layout: ORDER,HEADS,HEAD_DIM (e.g. head-major,3,64), got ${flags.layout ?? 'none'}`);
    const layout = { order: m[1], heads: Number(m[2]), headDim: Number(m[3]), layers: 0 };
    const pageTokens = flags['page-tokens'] === undefined ? undefined : Number(flags['page-tokens']);
    if (pageTokens !== undefined && !(Number.isSafeInteger(pageTokens) && pageTokens > 0)) throw new UsageError(`--page-tokens: a positive integer, got ${flags['page-tokens']}`);
    if (flags.dtype !== undefined && !['f32', 'f16', 'q8'].includes(flags.dtype)) throw new UsageError(`--dtype: f32, f16 or q8, got ${flags.dtype}`);
    if (flags['as-fingerprint'] !== undefined && flags.fingerprint === undefined) throw new UsageError('--as-fingerprint needs --fingerprint: the one model whose entries it renames');
    const sources = rest.slice(0, -1).map((p) => (isDirectory(p) ? { storage: 'fs', path: p } : p));
    const { publishPages } = await import('../store/publish.js');
    const report = await publishPages(rlx, sources, rest.at(-1), {
      layout, fingerprint: parseFingerprint(flags.fingerprint) ?? null, pageTokens, dtype: flags.dtype ?? null,
      asFingerprint: parseFingerprint(flags['as-fingerprint']) ?? null,
    });
    for (const p of report.pages) out.log(`${p.name} ${String(p.tokens).padStart(8)} tokens ${String(p.bytes).padStart(12)} bytes`);
    out.log(`${counted(report.pages.length, 'page')}, ${counted(report.bytes, 'byte')}` +
      (report.hints ? `; ${counted(report.hints, 'hint file')} of where entries end (.ends)` : '') +
      (report.skipped ? `; ${counted(report.skipped, 'entry', 'entries')} shorter than a page left out` : ''));
    if (report.unread) {
      out.error(`${counted(report.unread, 'entry', 'entries')} of the stores could not be read with --layout ${flags.layout} (another head count or head size, or damaged): not published`);
      return 1;
    }
    return 0;
  },

  async rewrite(rlx, args, out) {
    const { flags, rest } = parse(args, { value: ['--as'] });
    if (flags.help) return out.log(HELP.rewrite);
    if (rest.length !== 2) throw new UsageError('rewrite needs IN and OUT');
    if (flags.as !== undefined && flags.as !== 'RLXKV001') throw new UsageError(`--as: only RLXKV001, not ${flags.as}`);
    const [from, outPath] = rest;
    const e = decodeBlob(readBlobFile(from));
    const bytes = encodeBlob(e.tokens, [...e.k, ...e.v], e.fingerprint, undefined, { as: flags.as });
    let to = outPath;
    if (isDirectory(outPath)) {
      // Into a store: under the name a cache's save gives it, by the
      // store's own save (a killed rewrite leaves what a killed save does).
      const name = rlx.pageName(e.tokens, e.fingerprint, flags.as ? 'f32' : e.dtype);
      to = join(outPath, name);
      try {
        const blobs = await FsBlobs.open(outPath);
        await blobs.write([{ name, parts: [bytes] }]);
        await blobs.close();
      } catch (err) {
        throw new Error(`writing ${to}: ${err.cause?.message ?? err.message}`);
      }
    } else {
      const tmp = `${outPath}.tmp-${process.pid}`;
      try {
        writeFileSync(tmp, bytes, { flag: 'wx' });
        renameSync(tmp, to);
      } catch (err) {
        try { unlinkSync(tmp); } catch { /* never made */ }
        throw new Error(`writing ${to}: ${err.message}`);
      }
    }
    out.log(`${from} -> ${to}: ${bytes.length} bytes, ${e.tokens.length} tokens (${flags.as || e.format})`);
    return 0;
  },
};

/**
 * verify of a published tree (rlxkv publish) or a store directory: every
 * .rlxkv file in `dir` a valid blob or page (of fp, if given) under its
 * own name (ownName, by `naming`: a NativeCache), every page's parent in
 * `dir`, and every end a hint file (.ends) lists a page after its grid
 * page. The number of bad files.
 */
function verifyTree(rlx, naming, dir, fp, out) {
  const files = readdirSync(dir);
  const names = files.filter((n) => n.endsWith('.rlxkv'));
  const present = new Set(names);
  const children = new Map(); // a page's name -> the token counts of the pages after it
  let bad = 0;
  const fail = (msg) => {
    bad++;
    out.error(msg);
  };
  for (const name of names) {
    const file = join(dir, name);
    try {
      const e = decodeAny(readBlobFile(file));
      if (fp !== undefined && e.fingerprint !== fp) throw new Error(`stale: fingerprint ${hex(e.fingerprint)}, expected ${hex(fp)}`);
      const dtype = e.format === 'RLXKVPQ8' ? 'q8' : e.dtype;
      if (!ownName(naming, { name, tokens: e.tokens, dtype, fingerprint: e.fingerprint })) {
        throw new Error(`not under its own name (${rlx.pageName(e.tokens, e.fingerprint, dtype)})`);
      }
      if (e.page && !present.has(nameOfKey(e.page.parent))) {
        throw new Error(`its parent ${nameOfKey(e.page.parent)} (${e.page.parentN} tokens) is not in ${dir}`);
      }
      if (e.page) children.set(nameOfKey(e.page.parent), [...(children.get(nameOfKey(e.page.parent)) ?? []), e.tokens.length]);
    } catch (err) {
      fail(`${file}: ${err.message}`);
    }
  }
  for (const hint of files.filter((n) => n.endsWith('.ends'))) {
    const grid = hint.replace(/\.ends$/, '.rlxkv');
    const ends = readFileSync(join(dir, hint), 'utf8').split('\n').filter(Boolean);
    const missing = ends.filter((e) => !/^\d+$/.test(e) || !(children.get(grid) ?? []).includes(Number(e)));
    if (!present.has(grid)) fail(`${join(dir, hint)}: its grid page ${grid} is not in ${dir}`);
    else if (missing.length) fail(`${join(dir, hint)}: no page after ${grid} ends at ${missing.join(', ')}`);
  }
  out.log(`${dir}: ${counted(names.length - bad, 'page')} ok${bad ? `, ${bad} bad` : ''}`);
  return bad;
}

/** A blob or page of any format, an 8-bit page's (RLXKVPQ8) among them, checked whole; its errors as decodeBlob's. */
const decodeAny = (bytes) => (isQ8(bytes.subarray(0, 8)) ? decodeQ8(bytes) : decodeBlob(bytes));

/** n and its noun, singular for one: '1 blob', '2 blobs'. */
const counted = (n, one, many = `${one}s`) => `${n} ${n === 1 || n === 1n ? one : many}`;

function isDirectory(path) {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** A cache that holds nothing, of the module init() shares: the C naming (pageName, blobName) stores judge names by. Free it. */
async function namer() {
  return new NativeCache(await loadCore(), { capBytes: 0, fingerprint: 0n, layout: null, f16As: 'Uint16Array' });
}

async function withStore(rlx, dir, fn) {
  let st;
  try {
    st = statSync(dir);
  } catch (err) {
    if (err.code === 'ENOENT') throw new Error(`${dir}: no such directory`);
    // ENOTDIR (a file on the way), EACCES (a directory on the way we may not search)...
    throw new Error(`${dir}: cannot open the directory: ${err.code}`);
  }
  if (!st.isDirectory()) throw new Error(`${dir}: not a directory`);
  let store;
  try {
    store = await rlx.openStore({ storage: 'fs', path: dir });
  } catch (err) {
    // A directory it may not read: the errno, as the OS names it.
    if (err instanceof RlxkvError && err.code === 'IO' && err.cause?.code) throw new Error(`listing the store ${dir}: I/O error: ${err.cause.code}`);
    throw err;
  }
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** Runs the CLI; returns the exit code. `out` has log and error. */
export async function main(argv, out = console) {
  const [cmd, ...args] = argv;
  if (!cmd || cmd === '--help' || cmd === '-h' || cmd === 'help') {
    out.log(HELP.main);
    return cmd ? 0 : 2;
  }
  const run = commands[cmd];
  if (!run) {
    out.error(`rlxkv: unknown command "${cmd}"\n\n${HELP.main}`);
    return 2;
  }
  try {
    const rlx = await init();
    const code = await run(rlx, args, out);
    return typeof code === 'number' ? code : 0;
  } catch (err) {
    if (err instanceof UsageError) {
      out.error(`rlxkv ${cmd}: ${err.message}\n\n${HELP[cmd]}`);
      return 2;
    }
    out.error(`rlxkv ${cmd}: ${err.message}`);
    return 1;
  }
}

function invokedDirectly() {
  try {
    return import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    return false;
  }
}
if (invokedDirectly()) {
  main(process.argv.slice(2)).then((code) => { process.exitCode = code; });
}
