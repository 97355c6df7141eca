// The worker of bench/pages_page.js: runs hitPhase on a message and posts its result (or { error }).
import { hitPhase } from './pages_page.js';

self.onmessage = async ({ data }) => {
  try {
    self.postMessage(await hitPhase(data));
  } catch (e) {
    self.postMessage({ error: String((e && e.stack) || e) });
  }
};
