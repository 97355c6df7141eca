// An OPFS store's writers' markers: how an open knows, without listing the
// directory, that the index file describes every blob. Before its first
// save or removal since its last index update, a writer puts a marker file
// in PENDING_DIR, held under its own exclusive Web Lock, and removes it
// after the index update that covers them. A marker whose lock is free is
// a writer that died in between: only then (or with no index) does an open
// list the directory and repair the index (store/open.js). A writer whose
// index update failed, or that found the index gone or damaged, is behind:
// its marker stays, live while it is open and dead after, so that the next
// open lists the directory. FORMATS.md ("A store directory") gives the
// names on disk.
import { storageError } from '../wasm/errors.js';

const PENDING_DIR = '.rlxkv-pending';
const isGone = (err) => err && (err.name === 'NotFoundError' || err.name === 'TypeMismatchError');

export class WriterMarks {
  #dir;
  #lock;
  #path;
  #pending = null; // promise of this writer's marker { name, release }, while it has one
  #unindexed = 0; // saves and removals since, that no index update has covered yet
  #behind = false; // see behind()
  #made = 0; // markers made, for their names

  /**
   * @param dir   the store's FileSystemDirectoryHandle
   * @param lock  (name, mode, fn, ifAvailable) => fn's promise, under the Web Lock of `name` in this directory
   * @param path  the store's path, for messages
   */
  constructor(dir, lock, path) {
    this.#dir = dir;
    this.#lock = lock;
    this.#path = path;
  }

  /**
   * The markers of writers that are gone (their locks free): each died
   * after a save or removal and before its index update, so the index may
   * not describe the directory; null if they cannot be read (as if some
   * were). See clear().
   */
  async dead() {
    try {
      const dir = await this.#dir.getDirectoryHandle(PENDING_DIR).catch((err) => (isGone(err) ? null : Promise.reject(err)));
      const dead = [];
      for await (const [name, h] of dir ? dir.entries() : []) {
        if (h.kind !== 'file') continue;
        await this.#lock(`${PENDING_DIR}/${name}`, 'exclusive', () => { dead.push(name); }, true);
      }
      return dead;
    } catch {
      return null; // unknown: the open lists the directory
    }
  }

  /** Removes dead markers (dead()), once the index describes the directory again. */
  async clear(names) {
    if (!names.length) return;
    const dir = await this.#dir.getDirectoryHandle(PENDING_DIR).catch(() => null);
    for (const name of names) await dir?.removeEntry(name).catch(() => {});
  }

  /**
   * Before a save or a removal: this writer's marker, held under its own
   * exclusive Web Lock until the index update that follows (or the
   * writer's end: a marker whose lock is free is a dead writer's).
   */
  mark() {
    this.#pending ??= (async () => {
      const name = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}${(this.#made++).toString(36)}`;
      let release;
      const held = new Promise((resolve) => { release = resolve; });
      await new Promise((granted, failed) => {
        this.#lock(`${PENDING_DIR}/${name}`, 'exclusive', () => { granted(); return held; }).catch(failed);
      });
      try {
        const dir = await this.#dir.getDirectoryHandle(PENDING_DIR, { create: true });
        await dir.getFileHandle(name, { create: true });
      } catch (err) {
        release();
        throw storageError(err, `saving to ${this.#path}`, 'OPFS');
      }
      return { name, release };
    })().catch((err) => {
      this.#pending = null;
      throw err;
    });
    return this.#pending;
  }

  /** A save or removal done under the marker, that the next index update must cover. */
  wrote() { this.#unindexed++; }

  /** An index update failed: what it would have described, no later update does. */
  updateFailed() {
    if (this.#unindexed) this.#behind = true;
  }

  /**
   * After an index update that covers every save and removal since
   * mark(), or (ifNothing) a failure before any: the marker goes.
   */
  async indexed(ifNothing = false) {
    if (!this.#pending || this.#behind || (ifNothing && this.#unindexed)) return;
    this.#unindexed = 0;
    const pending = this.#pending;
    this.#pending = null;
    const { name, release } = await pending;
    try {
      await (await this.#dir.getDirectoryHandle(PENDING_DIR)).removeEntry(name);
    } catch { /* left: the next open lists the directory once, nothing else */ }
    release();
  }

  /**
   * This writer's saves and removals may be missing from the index for
   * good (an update failed, or the index was found gone or damaged): its
   * marker stays, live while it is open and dead after.
   */
  async behind() {
    this.#behind = true;
    await this.mark().catch(() => {});
  }

  /** The writer closes: a marker it still has stays, dead, for the next open. */
  async close() {
    if (this.#pending) await this.#pending.then(({ release }) => release(), () => {});
    this.#pending = null;
  }
}
