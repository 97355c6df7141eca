// The dedicated worker of bench/chat_page.js: runs runStore on a message
// (importing chat_page.js installs the write counting first) and posts its
// result (or { error }); its progress lines go to the page as { log }.
import { runStore } from './chat_page.js';

console.log = (...a) => self.postMessage({ log: a.join(' ') });
self.onmessage = async ({ data }) => {
  try {
    self.postMessage(await runStore(data));
  } catch (e) {
    self.postMessage({ error: String((e && e.stack) || e) });
  }
};
