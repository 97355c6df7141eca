// The worker of bench/opfs_page.js: runs workerPhase (or the open's or the flush's phases) on a message and posts its result (or { error }).
import { flushPhase, openPhase, setupOpen, workerPhase } from './opfs_page.js';

const PHASES = { open: openPhase, setupOpen, flush: flushPhase };

self.onmessage = async ({ data }) => {
  try {
    self.postMessage(await (PHASES[data.phase] || workerPhase)(data));
  } catch (e) {
    self.postMessage({ error: String((e && e.stack) || e) });
  }
};
