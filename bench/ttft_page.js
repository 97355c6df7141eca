// The in-page half of bench/bench_ttft.mjs: one dedicated module worker
// (bench/ttft_worker.js) per page load, which does all the work; call()
// posts it one phase and resolves to its result.
let worker = null;

export function call(phase, args = {}) {
  worker ??= new Worker('/bench/ttft_worker.js', { type: 'module' });
  return new Promise((resolve, reject) => {
    worker.onmessage = ({ data }) => (data && data.error ? reject(new Error(data.error)) : resolve(data));
    worker.onerror = (e) => reject(new Error(`worker: ${e.message || e}`));
    worker.postMessage({ phase, ...args });
  });
}
