// Read-only OPFS sync handles kept open after a read, for the next hit on
// the same blob (opening one is much of a small read's time): the one set
// of rules that a worker's OpfsBlobs (store/opfs-blobs.js) and a window's
// helper worker (store/opfs-helper.js, which runs this class's source in
// its own Blob worker: so it must stay self-contained, no imports and
// nothing from outside it) both keep.
//   - At most maxOpen handles, each closed once unused for keepMs, the
//     least recently used first.
//   - Only read-only handles (an exclusive one would lock out other
//     readers), and only while the directory's BroadcastChannel exists: an
//     open handle locks the file against moves and removals, so a writer
//     that finds it locked asks on that channel ({ release: name }) and
//     the handle is closed at once.
//   - A name a writer asked for is not kept again, and the next read of it
//     waits for the writer (wasAsked(): under the shared Web Lock, which
//     the writer holds until it is done).
export class KeptHandles {
  #open = new Map(); // name -> { s, timer }, last used last
  #asked = new Set();
  #maxOpen;
  #keepMs;
  #listener = null;

  /** channel: the directory's BroadcastChannel name; maxNames: how many asked names are remembered. */
  constructor(channel, { maxOpen, keepMs, maxNames = 4096 }) {
    this.#maxOpen = maxOpen;
    this.#keepMs = keepMs;
    if (typeof BroadcastChannel !== 'function' || !(maxOpen > 0)) return;
    this.#listener = new BroadcastChannel(channel);
    this.#listener.onmessage = (e) => {
      const name = e.data && e.data.release;
      if (typeof name !== 'string' || !this.#open.has(name)) return; // a read that opens it meanwhile makes the writer ask again
      if (this.#asked.size >= maxNames) this.#asked.clear();
      this.#asked.add(name);
      this.letGo(name);
    };
  }

  has(name) { return this.#open.has(name); }

  /** The handle of `name` kept open, taken out (the caller keeps it again or closes it); null if none is. */
  take(name) {
    const k = this.#open.get(name);
    if (!k) return null;
    this.#open.delete(name);
    clearTimeout(k.timer);
    return k.s;
  }

  /** Keeps sync handle s of `name` open for the next read, or closes it (also when the caller says `refuse`). */
  keep(name, s, refuse = false) {
    if (refuse || !this.#listener || s.mode !== 'read-only' || this.#asked.has(name) || this.#open.has(name)) return s.close();
    this.#open.set(name, { s, timer: setTimeout(() => this.letGo(name), this.#keepMs) });
    if (this.#open.size > this.#maxOpen) this.letGo(this.#open.keys().next().value);
  }

  /** Closes the handle of `name` kept open, if one is. */
  letGo(name) {
    const s = this.take(name);
    if (s) s.close();
  }

  letGoAll() {
    for (const name of [...this.#open.keys()]) this.letGo(name);
  }

  /** Whether a writer asked for `name` since its last read, forgetting it: that read waits for the writer. */
  wasAsked(name) { return this.#asked.delete(name); }

  close() {
    this.letGoAll();
    if (this.#listener) this.#listener.close();
    this.#listener = null;
  }
}
