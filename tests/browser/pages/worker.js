// Browser-test module worker: runs the test API (api.js) over rlxkv inside
// a dedicated Web Worker. Messages { call, fn, args } → { call, result } or
// { call, error }. 'ping' answers once init() is done. It runs the
// page's package: /js/index.js, or with ?lib=bundle the browser bundle (as
// the harness page does).
import { makeApi } from './api.js';

const LIBS = { index: '/js/index.js', bundle: '/wasm/dist/rlxkv.browser.js' };
const lib = new URL(import.meta.url).searchParams.get('lib') || 'index';
const ready = import(LIBS[lib]).then(({ default: init }) => init()).then((rlx) => makeApi(rlx));

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
