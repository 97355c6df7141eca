// The worker of bench/opfs_page.js: runs workerPhase on a message and posts its result (or { error }).
import { workerPhase } from './opfs_page.js';

self.onmessage = async ({ data }) => {
  try {
    self.postMessage(await workerPhase(data));
  } catch (e) {
    self.postMessage({ error: String((e && e.stack) || e) });
  }
};
