#!/usr/bin/env node
// rlxkv: look into, check and manage RLXKV001 blobs and store directories.
import { readFileSync, writeFileSync, statSync, renameSync, realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import init from './index.js';

const HELP = {
  main: `usage: rlxkv <command> [options]

commands:
  inspect [--json] FILE...         what each blob holds
  verify [--fingerprint HEX] FILE...  exit 1 unless every file is a valid blob
  ls [--json] [--fingerprint HEX] DIR  the blobs of a store directory
  prune DIR [--fingerprint HEX] [--max-bytes N] [--dry-run]
                                   drop corrupt and stale blobs, then the oldest
  tokens FILE                      the token ids, as JSON
  rewrite IN OUT                   decode and encode again (validates, normalizes)

'rlxkv <command> --help' for more.`,
  inspect: `usage: rlxkv inspect [--json] FILE...
Per blob: fingerprint, past length, token count, layers, each K and V block
length, KV bytes, and whether every block is row-major (a multiple of the
token count). --json prints one object per file (an array for several).`,
  verify: `usage: rlxkv verify [--fingerprint HEX] FILE...
Exit 0 when every file is a valid RLXKV001 blob (of that fingerprint, if
given); else exit 1 with a line per bad file naming it and the reason.`,
  ls: `usage: rlxkv ls [--json] [--fingerprint HEX] DIR
The .rlxkv blobs of a store directory: name, tokens, bytes, modified time and
status (ok, stale for the given fingerprint, corrupt), then totals. Without
--fingerprint, every valid blob is ok.`,
  prune: `usage: rlxkv prune DIR [--fingerprint HEX] [--max-bytes N] [--dry-run]
Removes corrupt blobs, blobs of other fingerprints (when --fingerprint is
given), then the oldest blobs until they total at most N bytes, and the
temporary files of saves that crashed (over an hour old). Prints the blobs
it removed (or would, with --dry-run, which removes nothing).`,
  tokens: `usage: rlxkv tokens FILE
Prints the blob's token ids as a JSON array.`,
  rewrite: `usage: rlxkv rewrite IN OUT
Decodes IN and encodes it again to OUT (atomically): a valid blob comes out
byte-identical; an invalid one is refused.`,
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

function parseBytes(s) {
  const m = /^(\d+)([kmg]i?b?)?$/i.exec(s || '');
  if (!m) throw new UsageError(`--max-bytes: not a byte count: ${s}`);
  const unit = (m[2] || '').toLowerCase()[0];
  const scale = { k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[unit] || 1;
  return Number(m[1]) * scale;
}

const hex = (fp) => `0x${fp.toString(16).padStart(16, '0')}`;

function readBlobFile(file) {
  let st;
  try {
    st = statSync(file);
  } catch {
    throw new Error(`${file}: no such file`);
  }
  if (st.isDirectory()) throw new Error(`${file}: is a directory, not a blob file`);
  return readFileSync(file);
}

function describe(rlx, file) {
  const e = rlx.decodeEntry(readBlobFile(file));
  const kLens = e.k.map((b) => b.length);
  const vLens = e.v.map((b) => b.length);
  const n = e.tokens.length;
  return {
    file,
    fingerprint: hex(e.fingerprint),
    pastLen: e.pastLen,
    tokens: n,
    layers: e.k.length,
    kLens,
    vLens,
    kvBytes: 4 * [...kLens, ...vLens].reduce((s, l) => s + l, 0),
    rowMajor: n > 0 && [...kLens, ...vLens].every((l) => l % n === 0),
  };
}

const commands = {
  async inspect(rlx, args, out) {
    const { flags, rest } = parse(args, { bool: ['--json'] });
    if (flags.help) return out.log(HELP.inspect);
    if (!rest.length) throw new UsageError('inspect needs at least one FILE');
    const infos = rest.map((f) => describe(rlx, f));
    if (flags.json) return out.log(JSON.stringify(infos.length === 1 ? infos[0] : infos, null, 2));
    for (const i of infos) {
      out.log(`${i.file}
  fingerprint ${i.fingerprint}
  past length ${i.pastLen}, tokens ${i.tokens}, layers ${i.layers}
  K lengths   ${i.kLens.join(', ')}
  V lengths   ${i.vLens.join(', ')}
  KV bytes    ${i.kvBytes}
  row-major   ${i.rowMajor ? `yes (${i.tokens ? (i.kLens[0] || 0) / i.tokens : 0} floats per K row in layer 0)` : 'no'}`);
    }
    return 0;
  },

  async verify(rlx, args, out) {
    const { flags, rest } = parse(args, { value: ['--fingerprint'] });
    if (flags.help) return out.log(HELP.verify);
    if (!rest.length) throw new UsageError('verify needs at least one FILE');
    const fp = parseFingerprint(flags.fingerprint);
    let bad = 0;
    for (const file of rest) {
      try {
        const e = rlx.decodeEntry(readBlobFile(file));
        if (fp !== undefined && e.fingerprint !== fp) {
          throw new Error(`${file}: stale: fingerprint ${hex(e.fingerprint)}, expected ${hex(fp)}`);
        }
        out.log(`${file}: ok`);
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
    const blobs = await withStore(rlx, rest[0], (store) => store.list(fp));
    const rows = blobs.map((b) => ({
      name: b.name,
      tokens: b.tokens,
      bytes: b.bytes,
      mtime: b.mtime.toISOString(),
      fingerprint: b.status === 'corrupt' ? null : hex(b.fingerprint),
      status: b.status,
    }));
    const totals = {
      blobs: rows.length,
      bytes: rows.reduce((s, r) => s + r.bytes, 0),
      ok: rows.filter((r) => r.status === 'ok').length,
      stale: rows.filter((r) => r.status === 'stale').length,
      corrupt: rows.filter((r) => r.status === 'corrupt').length,
    };
    if (flags.json) return out.log(JSON.stringify({ dir: rest[0], blobs: rows, totals }, null, 2));
    out.log(`${'name'.padEnd(22)} ${'tokens'.padStart(8)} ${'bytes'.padStart(12)}  ${'modified'.padEnd(24)} status`);
    for (const r of rows) {
      out.log(`${r.name.padEnd(22)} ${String(r.tokens).padStart(8)} ${String(r.bytes).padStart(12)}  ${r.mtime.padEnd(24)} ${r.status}`);
    }
    out.log(`${totals.blobs} blobs, ${totals.bytes} bytes: ${totals.ok} ok, ${totals.stale} stale, ${totals.corrupt} corrupt`);
    return 0;
  },

  async prune(rlx, args, out) {
    const { flags, rest } = parse(args, { bool: ['--dry-run'], value: ['--fingerprint', '--max-bytes'] });
    if (flags.help) return out.log(HELP.prune);
    if (rest.length !== 1) throw new UsageError('prune needs one DIR');
    const fp = parseFingerprint(flags.fingerprint);
    const maxBytes = flags['max-bytes'] === undefined ? Infinity : parseBytes(flags['max-bytes']);
    const dryRun = !!flags['dry-run'];
    const { before, report, after } = await withStore(rlx, rest[0], (store) => {
      const before = store.list(fp);
      const report = store.prune(fp, { maxBytes, stale: fp !== undefined, dryRun });
      return { before, report, after: dryRun ? null : store.list(fp) };
    });
    const gone = dryRun ? null : new Set(after.map((b) => b.name));
    const verb = dryRun ? 'would remove' : 'removed';
    if (!dryRun) {
      for (const b of before.filter((x) => !gone.has(x.name))) out.log(`${verb} ${b.name} (${b.status}, ${b.bytes} bytes)`);
    }
    out.log(`${verb} ${report.removed} blobs (${report.removedBytes} bytes); kept ${report.kept} (${report.keptBytes} bytes)`);
    return 0;
  },

  async tokens(rlx, args, out) {
    const { flags, rest } = parse(args, {});
    if (flags.help) return out.log(HELP.tokens);
    if (rest.length !== 1) throw new UsageError('tokens needs one FILE');
    out.log(JSON.stringify([...rlx.decodeEntry(readBlobFile(rest[0])).tokens]));
    return 0;
  },

  async rewrite(rlx, args, out) {
    const { flags, rest } = parse(args, {});
    if (flags.help) return out.log(HELP.rewrite);
    if (rest.length !== 2) throw new UsageError('rewrite needs IN and OUT');
    const [from, to] = rest;
    const e = rlx.decodeEntry(readBlobFile(from));
    const bytes = rlx.encodeEntry(e, e.fingerprint);
    const tmp = `${to}.tmp-${process.pid}`;
    writeFileSync(tmp, bytes);
    renameSync(tmp, to);
    out.log(`${from} -> ${to}: ${bytes.length} bytes, ${e.tokens.length} tokens`);
    return 0;
  },
};

async function withStore(rlx, dir, fn) {
  let st;
  try {
    st = statSync(dir);
  } catch {
    throw new Error(`${dir}: no such directory`);
  }
  if (!st.isDirectory()) throw new Error(`${dir}: not a directory`);
  const store = await rlx.openStore(dir);
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
