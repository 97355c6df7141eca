// Blob files in a Node directory, with node:fs/promises: what the tiered
// store (store/tiers.js) reads and writes in Node. Bytes only, no format: one
// file per blob, named by its caller; saves are atomic (a temporary file in
// the same directory, synced, then renamed over the name), so a blob is old
// or new, never torn. The one writer of a Node store directory: caches,
// rlx.openStore and the CLI (rlxkv rewrite) all save through write() here.
// All I/O is async, in chunks, so a large flush never blocks the event loop
// for long.
import { RlxkvError } from '../wasm/errors.js';
import { commitFiles } from './backend.js';

const CHUNK = 4 << 20; // bytes per read or write call: each is one await
const IOV_BATCH = 512; // buffers per readv call, below Linux's IOV_MAX (1,024)
const SUFFIX = '.rlxkv';

/** Fills buffer from file offset `at` of fd with synchronous reads; the bytes read (fewer at the file's end). */
function readFully(fd, buffer, at) {
  let got = 0;
  while (got < buffer.length) {
    const n = fsSync.readSync(fd, buffer, got, Math.min(CHUNK, buffer.length - got), at + got);
    if (!n) break;
    got += n;
  }
  return got;
}

/**
 * Temporary files, the one rule (FORMATS.md, "A store directory"): a save
 * writes NAME.rlxkv.<pid>-<time>-<seq>.tmp (hex: the writer's process id,
 * the low 24 bits of Date.now(), a counter), an index update
 * .rlxkv-index.<pid>-<time>-<seq>.tmp. Nothing else is ever taken for one.
 * One is abandoned (isAbandoned) once no live writer can own it: its
 * process is gone (this machine's, by its pid), or it is ABANDONED_MS old
 * whoever wrote it (a save writes its file in one go).
 */
const TEMP = /^[0-9a-f]{16}(?:[0-9a-f]{16})?\.rlxkv\.([0-9a-f]{1,8})-[0-9a-f]{1,16}-[0-9a-f]{1,16}\.tmp$/;
const ABANDONED_MS = 3600e3;
/**
 * The directory's index (format/store-index.js: RLXKVIX4, FORMATS.md), so that an
 * open reads one file and the listing of names, not every blob's first
 * bytes. Only a cache of what the directory holds: a name no blob has,
 * replaced whole by a temporary file and a rename, its temporary named
 * apart from blobs' so that no reader takes it for one.
 */
const INDEX_NAME = '.rlxkv-index';
/**
 * An index known to describe the directory carries its directory's mtime,
 * less STAMP_MS, as its own mtime (stampIndex()): an offset no write and
 * rename of the index makes, so that a fresh index is never taken for a
 * stamped one. Stamped only when the directory was STAMP_AGE_MS old when
 * its listing began: any change after the listing then moves the
 * directory's mtime past it (whatever the file system's timestamp tick:
 * git's rule for racily clean entries), and the stamp no longer matches.
 */
const STAMP_MS = 0.777, STAMP_AGE_MS = 2000;
const INDEX_TEMP = /^\.rlxkv-index\.([0-9a-f]{1,8})-[0-9a-f]{1,16}-[0-9a-f]{1,16}\.tmp$/;

let seq = 0;
/** The temporary file of a write of `name` (a blob's, or the index's), by the rule above. */
const tempName = (name) => `${name}.${process.pid.toString(16)}-${(Date.now() & 0xffffff).toString(16)}-${(seq++).toString(16)}.tmp`;

/** Whether process pid runs here (signal 0 probes; EPERM: it runs, as another user). */
function alive(pid) {
  if (!pid || pid === process.pid) return pid === process.pid;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

let fsp = null;
let fsSync = null;
let pathMod = null;
async function nodeFs() {
  // process.getBuiltinModule (Node 20.16+, 22.3+) hands over the modules as
  // they are; import('node:fs') first builds an ES namespace of every export,
  // whose getters load fs's streams: 2-3 ms of a process's first open.
  const get = globalThis.process?.getBuiltinModule;
  if (!fsp && get) {
    fsSync = get('node:fs');
    fsp = fsSync.promises;
    pathMod = get('node:path');
  }
  if (!fsp) {
    fsp = await import('node:fs/promises');
    fsSync = await import('node:fs');
    pathMod = await import('node:path');
  }
  return fsp;
}

/** An fs error as an RlxkvError: QUOTA when the disk is full, else IO. */
export function fsError(err, what) {
  if (err instanceof RlxkvError) return err; // a caller's own, passed through
  const quota = err && (err.code === 'ENOSPC' || err.code === 'EDQUOT');
  return new RlxkvError(quota ? 'QUOTA' : 'IO', `${what}: ${err && err.message}`, { cause: err });
}

/**
 * The absolute path of store directory `dir`, made if missing: IO (naming
 * it) when it cannot be made or is not a directory.
 */
export async function storeDirectory(dir) {
  const fs = await nodeFs();
  const root = pathMod.resolve(dir);
  try {
    await fs.mkdir(root, { recursive: true });
    if (!(await fs.stat(root)).isDirectory()) throw new Error('not a directory');
  } catch (err) {
    throw new RlxkvError('IO', `cannot use directory ${root}: ${err.message}`, { cause: err });
  }
  return root;
}

export class FsBlobs {
  /** Opens (creating if missing) the directory `dir`. */
  static async open(dir) {
    const root = await storeDirectory(dir);
    const fs = await nodeFs();
    const readOnly = await fs.access(root, fs.constants.W_OK).then(() => false, () => true);
    return new FsBlobs(root, readOnly);
  }

  #prefix; // the directory's path and a separator

  constructor(root, readOnly) {
    this.kind = 'fs';
    this.root = root;
    this.#prefix = root.endsWith(pathMod.sep) ? root : root + pathMod.sep; // resolved: no join needed
    /** The directory cannot be written: blobs can be read, never saved or removed. */
    this.readOnly = readOnly;
    // The capabilities of store/backend.js's contract.
    this.direct = true;
    this.pieces = true;
    this.indexComplete = false;
    this.headReads = 32; // each holds a file open (ulimit -n)
  }

  /**
   * fn({ size, read(buffer, at), readv(buffers, at) }) over blob `name`
   * (size: fstat's, asked on first use; reading it throws EINVAL for a file
   * that is not regular), whose read() fills
   * buffer from offset `at` with synchronous reads (so that it can be a
   * view of the wasm heap, which may not move under an await) and returns
   * the bytes read, and whose readv(buffers, at) fills the buffers one after
   * another in one call; fn's result, or null if the blob is gone. One hit's
   * blob is read in one go: the event loop waits that long (about 5 ms
   * per 24 MB here), in exchange for no copy of it in JS memory.
   */
  async readWith(name, fn) {
    let fd;
    try {
      fd = fsSync.openSync(this.#path(name), fsSync.constants.O_RDONLY | fsSync.constants.O_NONBLOCK);
    } catch (err) {
      if (err.code === 'ENOENT') return null;
      throw fsError(err, `opening ${name}`);
    }
    try {
      // Asked only by a caller that needs it: a load that knows the blob's
      // size reads past it instead.
      let size = -1;
      const sizeOf = () => {
        if (size < 0) {
          const st = fsSync.fstatSync(fd);
          if (!st.isFile()) throw Object.assign(new Error('not a regular file'), { code: 'EINVAL' });
          size = st.size;
        }
        return size;
      };
      const read = (buffer, at) => readFully(fd, buffer, at);
      // One scatter read (preadv) for many buffers, IOV_BATCH at a time,
      // on until they are full or the file ends.
      const readv = (buffers, at) => {
        let got = 0, i = 0, into = 0; // buffers[i] filled up to into
        while (i < buffers.length) {
          const batch = buffers.slice(i, i + IOV_BATCH);
          if (into) batch[0] = batch[0].subarray(into);
          const n = fsSync.readvSync(fd, batch, at + got);
          if (!n) break;
          got += n;
          let left = n;
          while (i < buffers.length && left >= buffers[i].length - into) {
            left -= buffers[i].length - into;
            into = 0;
            i++;
          }
          into += left;
        }
        return got;
      };
      return fn({ get size() { return sizeOf(); }, read, readv });
    } catch (err) {
      if (err instanceof RlxkvError || err instanceof RangeError) throw err;
      throw fsError(err, `reading ${name}`);
    } finally {
      fsSync.closeSync(fd);
    }
  }

  /** The file of blob `name` (a caller's name, no separators). */
  #path(name) { return this.#prefix + name; }

  /**
   * The blobs: regular files named *.rlxkv, { name, bytes, mtimeMs } (a
   * fifo, socket or directory of that name is no blob and is never opened;
   * a symlink is not followed). And the temporary files of saves and of
   * index updates: { name, bytes, mtimeMs, pid } (pid: the writer's
   * process id). only: of these names alone, not the whole listing.
   */
  async list(only = null) {
    let names = only;
    try {
      names ??= await fsp.readdir(this.root);
    } catch (err) {
      throw fsError(err, `listing ${this.root}`);
    }
    const blobs = [], temporaries = [];
    await Promise.all(names.map(async (name) => {
      const temp = TEMP.exec(name) ?? INDEX_TEMP.exec(name);
      if (!temp && !name.endsWith(SUFFIX)) return;
      try {
        const st = await fsp.lstat(this.#path(name));
        if (!st.isFile()) return;
        if (temp) temporaries.push({ name, bytes: st.size, mtimeMs: st.mtimeMs, pid: parseInt(temp[1], 16) });
        else blobs.push({ name, bytes: st.size, mtimeMs: st.mtimeMs });
      } catch { /* gone meanwhile */ }
    }));
    return { blobs, temporaries };
  }

  /**
   * The listing's names alone, one readdir and no stat (an open's, against
   * the index): { blobs: names of *.rlxkv (a name that is no regular file
   * is found so when it is read), temporaries: the temporary files of live
   * writers (stat'ed: they are few), swept: how many of dead writers were
   * deleted (sweep()) }.
   */
  async names({ sweep = true } = {}) {
    let names;
    try {
      names = await fsp.readdir(this.root);
    } catch (err) {
      throw fsError(err, `listing ${this.root}`);
    }
    const blobs = [], temps = [];
    for (const name of names) {
      if (name.endsWith(SUFFIX)) blobs.push(name);
      else if (name.endsWith('.tmp') && (TEMP.test(name) || INDEX_TEMP.test(name))) temps.push(name);
    }
    const temporaries = temps.length ? (await this.list(temps)).temporaries : [];
    const swept = sweep ? await this.sweep(temporaries) : [];
    return { blobs, temporaries: temporaries.filter((t) => !swept.includes(t.name)), swept: swept.length };
  }

  /** Backend.openIndex: the index file (read into `into`'s memory), vouched for by its stamp (indexState()). */
  async openIndex(into) {
    const [bytes, state] = await Promise.all([into ? this.#readIndexInto(into) : this.readIndex(), this.indexState()]);
    return { bytes, describes: () => state.stamped, state };
  }

  /** Backend.opened: a listing that agreed with the index, with no writer's temporary left, stamps it (state: indexState()'s). */
  async opened({ listed, current, temporaries, state }) {
    if (listed && current && !temporaries) await this.stampIndex(state);
  }

  /** The index file's bytes, or null if there is none or it cannot be read (the open rebuilds it). */
  async readIndex() {
    try {
      const b = await fsp.readFile(this.#path(INDEX_NAME));
      return new Uint8Array(b.buffer, b.byteOffset, b.length);
    } catch {
      return null;
    }
  }

  /**
   * The index file read with synchronous reads into into(its size) (a
   * view of wasm memory, which may not move under an await), or null as
   * readIndex() gives it.
   */
  #readIndexInto(into) {
    let fd;
    try {
      fd = fsSync.openSync(this.#path(INDEX_NAME), fsSync.constants.O_RDONLY | fsSync.constants.O_NONBLOCK);
      const st = fsSync.fstatSync(fd);
      if (!st.isFile()) return null;
      const bytes = into(st.size);
      return readFully(fd, bytes, 0) === bytes.length ? bytes : null; // shorter: rewritten in place by another program
    } catch {
      return null;
    } finally {
      if (fd !== undefined) fsSync.closeSync(fd);
    }
  }

  /**
   * Replaces the index file with update(its bytes or null, the set of
   * `names` whose files exist now) (no change if it returns nothing; its
   * { bytes } if it says more), by a temporary file and a rename. Writers
   * of other processes are not waited for: the last one's index wins, and
   * an open reads it against the listing (store/open.js), so whatever it
   * misses or says of files gone costs a repair, not a blob. Not synced:
   * after a crash it may be old or empty, which the open repairs or
   * rebuilds alike. Nothing in a read-only directory.
   */
  async updateIndex(update, names = []) {
    if (this.readOnly) return;
    const [cur, found] = await Promise.all([this.readIndex(), Promise.all(names.map((n) => this.stat(n).catch(() => null)))]);
    let next = update(cur, new Set(found.filter(Boolean).map((f) => f.name)));
    if (next && next.bytes) next = next.bytes;
    if (!next) return;
    const tmp = this.#path(tempName(INDEX_NAME));
    try {
      await fsp.writeFile(tmp, next, { mode: 0o644 });
      await fsp.rename(tmp, this.#path(INDEX_NAME));
    } catch (err) {
      await fsp.unlink(tmp).catch(() => {});
      throw fsError(err, `updating the index of ${this.root}`);
    }
  }

  /**
   * Whether the index describes the directory as it is (stampIndex() was
   * given its mtime, and nothing was added, removed or renamed since): two
   * stats, no listing. { stamped, dirMtimeMs, since: Date.now() before
   * the stats }.
   */
  async indexState() {
    const since = Date.now();
    const [dir, index] = await Promise.all([fsp.stat(this.root).catch(() => null), fsp.stat(this.#path(INDEX_NAME)).catch(() => null)]);
    if (!dir || !index) return { stamped: false, dirMtimeMs: null, since };
    return { stamped: Math.abs(dir.mtimeMs - STAMP_MS - index.mtimeMs) < 0.01, dirMtimeMs: dir.mtimeMs, since };
  }

  /**
   * Stamps the index as describing the directory, when a listing that
   * began at `since` (Date.now()) of the directory of mtime dirMtimeMs
   * (indexState()'s) found it so, and the directory was old enough then;
   * else nothing. Never rejects: a stamp is a hint.
   */
  async stampIndex({ dirMtimeMs, since }) {
    if (this.readOnly || dirMtimeMs === null || since - dirMtimeMs < STAMP_AGE_MS) return;
    const mtime = (dirMtimeMs - STAMP_MS) / 1000;
    await fsp.utimes(this.#path(INDEX_NAME), since / 1000, mtime).catch(() => {});
  }

  /** Whether no live writer can own temporary file { pid, mtimeMs } (list()'s), by the rule above. */
  isAbandoned({ pid, mtimeMs }) {
    return Date.now() - mtimeMs > ABANDONED_MS || !alive(pid);
  }

  /** Deletes the temporary files no live writer can own (isAbandoned). The names deleted. */
  async sweep(temporaries) {
    if (this.readOnly) return [];
    return this.remove(temporaries.filter((t) => this.isAbandoned(t)).map((t) => t.name));
  }

  /**
   * A tool store (TieredStore asToolStore: listAll, pruneAll, close) with
   * the temporary files its open found (list()'s, none swept): listed
   * beside its blobs, in name order, 'temp' or 'abandoned' (isAbandoned,
   * judged at each call); a prune removes the abandoned ones and counts the
   * live ones against its budget (its report's temps* counts).
   */
  toolStore(tool, temporaries) {
    let temps = temporaries;
    const bytes = (ts) => ts.reduce((n, t) => n + t.bytes, 0);
    const info = (t) => ({
      name: t.name, tokens: 0, bytes: t.bytes, mtime: new Date(t.mtimeMs), fingerprint: 0n,
      status: this.isAbandoned(t) ? 'abandoned' : 'temp', error: 0, dtype: null, kvBytes: 0, page: false,
    });
    return {
      listAll: (fp, any) => [...tool.listAll(fp, any), ...temps.map(info)].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
      pruneAll: async (fp, opts) => {
        const dead = temps.filter((t) => this.isAbandoned(t)), live = temps.filter((t) => !dead.includes(t));
        const report = await tool.pruneAll(fp, { ...opts, maxBytes: opts.maxBytes - bytes(live) });
        if (!opts.dryRun && dead.length) {
          await this.remove(dead.map((t) => t.name));
          temps = live;
        }
        return { ...report, tempsRemoved: dead.length, tempsRemovedBytes: bytes(dead), tempsKept: live.length, tempsKeptBytes: bytes(live) };
      },
      close: () => tool.close(),
    };
  }

  /** Up to n bytes from the start of blob `name`; null if it is gone. */
  head(name, n) {
    return this.#reading(name, async (fh) => {
      const buf = new Uint8Array(n);
      const { bytesRead } = await fh.read(buf, 0, n, 0);
      return buf.subarray(0, bytesRead);
    });
  }

  /** The whole blob, read in chunks into one buffer of the size it had when opened; null if it is gone. */
  read(name) {
    return this.#reading(name, async (fh) => {
      const { size } = await fh.stat();
      const buf = new Uint8Array(size);
      for (let at = 0; at < size;) {
        const { bytesRead } = await fh.read(buf, at, Math.min(CHUNK, size - at), at);
        if (!bytesRead) throw new Error(`file shrank to ${at} bytes while read`);
        at += bytesRead;
      }
      return buf;
    });
  }

  /** fn(a file handle on blob `name`), closed after; null if the blob is gone; IO naming it if a read fails. */
  async #reading(name, fn) {
    let fh;
    try {
      fh = await this.#openRead(name);
    } catch (err) {
      if (err.cause?.code === 'ENOENT') return null;
      throw err;
    }
    try {
      return await fn(fh);
    } catch (err) {
      throw fsError(err, `reading ${name}`);
    } finally {
      await fh.close();
    }
  }

  async #openRead(name) {
    try {
      // O_NONBLOCK: a fifo put there under a blob's name must not hang us.
      const fh = await fsp.open(this.#path(name), fsp.constants.O_RDONLY | fsp.constants.O_NONBLOCK);
      if (!(await fh.stat()).isFile()) {
        await fh.close();
        throw Object.assign(new Error('not a regular file'), { code: 'EINVAL' });
      }
      return fh;
    } catch (err) {
      throw fsError(err, `opening ${name}`);
    }
  }

  /**
   * Writes each { name, parts } (parts: Uint8Arrays written one after
   * another, or an iterator of them, asked for the next only once the one
   * before is written; items: an array or an iterator, sync or async)
   * atomically, one after the other. Calls done(item) after each rename.
   * An item whose parts throw CHANGED is skipped (skipped(item)). Rejects with QUOTA or IO
   * (or what the iterator throws) at the first failure, having removed its
   * temporary file; blobs written before stay.
   */
  async write(items, done = () => {}, skipped = () => {}) {
    for await (const item of items) {
      if (this.readOnly) throw new RlxkvError('IO', `saving ${item.name}: the store ${this.root} is read-only`);
      const tmp = this.#path(tempName(item.name));
      let fh = null;
      try {
        fh = await fsp.open(tmp, 'wx', 0o644).catch(async (err) => {
          // The directory deleted under an open cache (rlx.deleteStore): the store goes on, empty.
          if (err.code !== 'ENOENT') throw err;
          await fsp.mkdir(this.root, { recursive: true });
          return fsp.open(tmp, 'wx', 0o644);
        });
        for (const part of item.parts) {
          for (let at = 0; at < part.length; at += CHUNK) {
            const piece = part.subarray(at, Math.min(at + CHUNK, part.length));
            for (let off = 0; off < piece.length;) off += (await fh.write(piece, off, piece.length - off)).bytesWritten;
          }
        }
        await fh.sync();
        await fh.close();
        fh = null;
        await fsp.rename(tmp, this.#path(item.name));
      } catch (err) {
        if (fh) await fh.close().catch(() => {});
        await fsp.unlink(tmp).catch(() => {});
        if (err instanceof RlxkvError && err.code === 'CHANGED') { // its parts are no longer the entry's: skipped
          skipped(item);
          continue;
        }
        throw fsError(err, `saving ${item.name}`);
      }
      done(item);
    }
  }

  /**
   * Removes blobs, calling done(name) after each is gone (removed, or not
   * there); the names that were there. Rejects with IO at the first
   * failure (that one and those after stay as they were).
   */
  async remove(names, done = () => {}) {
    if (this.readOnly && names.length) throw new RlxkvError('IO', `removing ${names[0]}: the store ${this.root} is read-only`);
    const removed = [];
    for (const name of names) {
      try {
        await fsp.unlink(this.#path(name));
        removed.push(name);
      } catch (err) {
        if (err.code !== 'ENOENT') throw fsError(err, `removing ${name}`);
      }
      done(name);
    }
    return removed;
  }

  /** Backend.commit (store/backend.js). */
  commit(changes, calls) { return commitFiles(this, changes, calls); }

  /** Blob `name` as list() gives it, { name, bytes, mtimeMs }, or null if there is none. */
  async stat(name) {
    try {
      const st = await fsp.lstat(this.#path(name));
      return st.isFile() ? { name, bytes: st.size, mtimeMs: st.mtimeMs } : null;
    } catch (err) {
      if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return null;
      throw fsError(err, `reading ${name}`);
    }
  }

  /** Records a use of blob `name` in its mtime (what the store's budget prunes by). */
  async touch(name) {
    const now = new Date();
    await fsp.utimes(this.#path(name), now, now).catch(() => {});
  }

  /**
   * Deletes the store: every blob and saves' temporary file (a live
   * writer's save then fails), then the directory, if nothing else is in
   * it (files of others stay, and so does it). The blob names deleted.
   */
  async destroy() {
    const { blobs, temporaries } = await this.list();
    const names = await this.remove(blobs.map((b) => b.name));
    await this.remove([...temporaries.map((t) => t.name), INDEX_NAME]);
    await fsp.rmdir(this.root).catch(() => {});
    return names;
  }

  async close() {}
}
