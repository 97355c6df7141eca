// One page of this checkout, served on 127.0.0.1, in a headless Chromium
// (Debian's, or RLXKV_CHROMIUM) for the browser benchmarks: every request
// to another origin refused and recorded, page errors recorded.
import { chromium } from 'playwright-core';
import { serve } from '../scripts/serve.mjs';

export const EXECUTABLE = process.env.RLXKV_CHROMIUM || '/usr/bin/chromium';

/**
 * Opens `path` (e.g. '/bench/webgpu_page.html') with Chromium's `args`:
 * { page, browser, outside, pageErrors, check, close }. check() throws if
 * anything went to another origin or the page threw; close() ends it all.
 */
export async function openBenchPage(path, { args, timeoutMs = 300000 }) {
  const { server, url } = await serve({ port: 0 });
  const browser = await chromium.launch({ executablePath: EXECUTABLE, args, headless: true, timeout: 60000 });
  const outside = [], pageErrors = [];
  const close = async () => {
    await browser.close();
    server.close();
  };
  try {
    const context = await browser.newContext();
    await context.route('**/*', (route) => {
      if (route.request().url().startsWith(`${url}/`)) return route.continue();
      outside.push(route.request().url());
      return route.abort();
    });
    const page = await context.newPage();
    page.setDefaultTimeout(timeoutMs);
    page.on('pageerror', (e) => pageErrors.push(String((e && e.stack) || e)));
    await page.goto(`${url}${path}`);
    const check = () => {
      if (outside.length) throw new Error(`requests to other origins: ${outside.join(', ')}`);
      if (pageErrors.length) throw new Error(`page errors: ${pageErrors.join('\n')}`);
    };
    return { page, browser, outside, pageErrors, check, close };
  } catch (err) {
    await close();
    throw err;
  }
}
