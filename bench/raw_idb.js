// Raw IndexedDB for the browser benches' baselines: a request as a promise,
// and a database of one object store, 'blobs', of the records they time.
export function request(r) {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

export function openRaw(name) {
  const r = indexedDB.open(name, 1);
  r.onupgradeneeded = () => r.result.createObjectStore('blobs');
  return request(r);
}
