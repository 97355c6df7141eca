// rlx.copyStore's copy: every blob of one store into another (any two
// backends), with the index records of what it wrote. A chunk of its own
// in the browser bundle, loaded by the apps that copy: it imports nothing,
// the main file's modules it uses come in as `uses` (so that the bundle's
// split shares no module between them).

/**
 * Copies every blob of store `from` into store `to` ({ kind, path }, kinds
 * of BACKENDS), bytes unchanged, least recently used first (by the source
 * index's last uses, else the blobs' times; so that a directory's file
 * times keep their order), one blob in memory at a time but for
 * IndexedDB's batches, each with the index records of its blobs (a
 * backend's commit: store/backend.js). isOwn(record) judges a valid
 * blob's name (ownName). Resolves to { copied, bytes }; rejects with
 * QUOTA / IO, what was copied before staying. uses: [BACKENDS
 * (store/backends.js), parseIndex and mergeIndex (format/store-index.js),
 * recordOf (store/records.js), blobHead (format/blob.js)], in that order
 * (an array: the main file's minifier shortens its names, not an object's
 * keys).
 */
export async function copyBlobs(from, to, isOwn, [BACKENDS, parseIndex, mergeIndex, recordOf, blobHead]) {
  const src = await BACKENDS[from.kind].open(from.path);
  let dst = null;
  try {
    dst = await BACKENDS[to.kind].open(to.path, null); // (null: its index is not read)
    const uses = parseIndex(await src.readIndex()) ?? new Map();
    const { blobs: names } = await src.names({ sweep: false });
    // A directory records uses in its files' times too (touch), more often
    // than in its index: the later of the two. Elsewhere the index's, and
    // the blob's time where the index lacks it.
    const timed = src.touch ? names : names.filter((n) => !uses.has(n));
    const times = new Map(timed.length ? (await src.list(timed)).blobs.map((b) => [b.name, b.mtimeMs]) : []);
    const order = names.map((n) => [n, Math.max(uses.get(n)?.lastUse ?? 0, times.get(n) ?? 0)]).sort((a, b) => a[1] - b[1]);
    let copied = 0, bytes = 0;
    const items = async function* () {
      for (const [name, lastUse] of order) {
        const blob = await src.read(name);
        if (!blob) continue; // gone meanwhile
        const record = recordOf(name, blob.length, lastUse || Date.now(), blobHead(blob, blob.length));
        // A blob under a name not its own stays foreign in the copy's index (never counted, never served).
        if (record.status === 'ok' && !isOwn(record)) record.status = 'foreign';
        yield { name, parts: [blob], bytes: blob.length, record };
      }
    };
    await dst.commit({
      items: items(),
      update: (cur, present, saved) => (saved.length ? mergeIndex(parseIndex(cur), { set: saved.map((it) => it.record), present }) : undefined),
    }, {
      onSaved: (item) => {
        copied++;
        bytes += item.bytes;
      },
    });
    return { copied, bytes };
  } finally {
    await src.close();
    if (dst) await dst.close();
  }
}
