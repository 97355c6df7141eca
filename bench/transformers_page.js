// The in-page half of bench/bench_transformers_browser.mjs: transformers.js
// 4.x (served from node_modules, onnxruntime-web's wasm backend) and rlxkv's
// browser bundle run bench/transformers_workload.js; a restart is a new
// cache opened on the IndexedDB path the entry was flushed to.
import init from '/wasm/dist/rlxkv.browser.js';
import * as adapter from '/js/transformers.js';
import { measure } from './transformers_workload.js';
import { summarize } from './transformers_summary.js';
import { localTransformers } from './transformers_local.js';

let ready = null;
function setup() {
  ready ??= (async () => {
    const tf = await localTransformers();
    return { tf, rlx: await init() };
  })();
  return ready;
}

export async function version() {
  const { tf } = await setup();
  return tf.env.version;
}

/** One workload's summary (bench/transformers_summary.js). */
export async function run(workload, reps) {
  const { tf, rlx } = await setup();
  const path = `/bench-tjs-${workload.id}-${workload.store}`;
  const open = (fingerprint, layout) => rlx.openCache({ capBytes: 256 << 20, fingerprint, layout, storage: 'idb', path });
  const r = await measure({ tf, rlx, adapter, device: 'wasm', open }, { ...workload, ...reps });
  return summarize(r, workload.label);
}
