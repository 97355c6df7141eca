// Browser-test module worker: runs the test API (api.js) over rlxkv inside
// a dedicated Web Worker. Messages { call, fn, args } → { call, result } or
// { call, error }. 'ping' answers once init() is done.
import init from '/js/index.js';
import { makeApi } from './api.js';

const ready = init().then((rlx) => makeApi(rlx));

self.onmessage = async ({ data }) => {
  const { call, fn, args } = data;
  try {
    const api = await ready;
    if (fn === 'ping') {
      self.postMessage({ call, result: { indexedDB: typeof indexedDB, locks: !!(navigator.locks) } });
      return;
    }
    if (typeof api[fn] !== 'function') throw new Error(`no such test call: ${fn}`);
    self.postMessage({ call, result: await api[fn](...args) });
  } catch (e) {
    self.postMessage({ call, error: String((e && e.stack) || e) });
  }
};
