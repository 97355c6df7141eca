// Whole files read in Node: rlxkv's wasm (where 3.1.6's glue would fetch()
// the file and fail) and importBlob's file. Node only: the browser bundle
// gets a stub (wasm/bundle.mjs), and node: modules are imported when it
// runs, so browsers that load js/index.js never fetch them.
import { RlxkvError } from './errors.js';

/**
 * The wasm's bytes and its path: `url` (the glue's file: URL of it), or
 * what locateFile(name, the glue's directory) says, as the glue would ask.
 */
export async function readWasm(url, locateFile) {
  const [{ readFile }, { fileURLToPath }] = await Promise.all([import('node:fs/promises'), import('node:url')]);
  const from = locateFile ? locateFile('rlxkv_core.wasm', fileURLToPath(new URL('.', url))) : url;
  try {
    return { bytes: await readFile(from), from };
  } catch (err) {
    throw new RlxkvError('WASM_LOAD', `cannot read rlxkv's wasm at ${from}: ${err.message}`, { cause: err });
  }
}

/** importBlob's source in Node, a path or a file: URL: its bytes; AbortError through signal, else IO naming it. */
export async function readPath(url, signal) {
  const { readFile } = await import('node:fs/promises');
  try {
    return new Uint8Array(await readFile(url.startsWith('file:') ? new URL(url) : url, { signal }));
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    throw new RlxkvError('IO', `cannot read ${url}: ${err.message}`, { cause: err });
  }
}
