// Reads rlxkv's wasm in Node, where 3.1.6's glue would fetch() the file and
// fail. Node only: the browser bundle gets a stub (web/bundle.mjs), and
// node: modules are imported when it runs, so browsers that load js/index.js
// never fetch them.
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
