// Shared by the browser tests (not a test file): the static server, a
// Chromium (Debian's, driven by playwright-core) on a fresh temporary
// profile that can be quit and started again on the same profile, pages
// of pages/harness.html, and the browser console kept for failure reports.
import { test } from 'node:test';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { serve } from '../../scripts/serve.mjs';

export const CHROMIUM = process.env.RLXKV_CHROMIUM || '/usr/bin/chromium';
const ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run', '--disable-quic',
];
export const HARNESS = '/tests/browser/pages/harness.html';
const MAX_LOG_LINES = 200;

/** A browser profile, a browser on it (restartable), and its console log. */
export class Session {
  /** args: Chromium flags beyond the usual ones (e.g. WebGPU's). */
  constructor(url, { args = [] } = {}) {
    this.url = url;
    this.args = args;
    this.origin = new URL(url).origin;
    this.profile = mkdtempSync(join(tmpdir(), 'rlxkv-chromium-'));
    this.context = null;
    this.log = [];
    this.launches = 0;
  }

  note(line) {
    this.log.push(line);
    if (this.log.length > MAX_LOG_LINES) this.log.splice(0, this.log.length - MAX_LOG_LINES);
  }

  watch(page) {
    const tag = () => `[launch ${this.launches} ${page.url().replace(this.origin, '')}]`;
    // Workers' console messages arrive here too, with m.worker() set.
    page.on('console', (m) => {
      const from = typeof m.worker === 'function' && m.worker() ? ' worker' : '';
      this.note(`${tag()}${from} console.${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => this.note(`${tag()} pageerror: ${(e && e.stack) || e}`));
    page.on('crash', () => this.note(`${tag()} page crashed`));
    page.on('worker', (w) => this.note(`${tag()} worker started: ${w.url().replace(this.origin, '')}`));
  }

  /** Starts the browser on this session's profile (again, after quit()). */
  async launch() {
    if (this.context) throw new Error('browser already running');
    this.launches++;
    this.context = await chromium.launchPersistentContext(this.profile, {
      executablePath: CHROMIUM, headless: true, args: [...ARGS, ...this.args], timeout: 30000,
    });
    this.context.setDefaultTimeout(30000);
    for (const p of this.context.pages()) this.watch(p);
    this.context.on('page', (p) => this.watch(p));
    return this.context;
  }

  /** Quits the browser, as a user closing it would (the profile stays). */
  async quit() {
    const ctx = this.context;
    this.context = null;
    if (ctx) await ctx.close();
  }

  /**
   * Kills this session's browser process with SIGKILL, as a crash or a
   * power cut would (Linux: found through /proc by its profile directory;
   * the renderers go with it). The profile stays.
   */
  async crash() {
    const pid = this.browserPid();
    if (!pid) throw new Error(`no browser process found for profile ${this.profile}`);
    const ctx = this.context;
    this.context = null;
    const family = [pid, ...descendants(pid)].map(procOf).filter(Boolean);
    const gone = new Promise((resolve) => ctx.once('close', resolve));
    process.kill(pid, 'SIGKILL');
    await gone;
    await ctx.close().catch(() => {});
    // Its children (zygotes, renderers) exit when it dies; make sure.
    for (let i = 0; i < 50 && family.some(alive); i++) await new Promise((r) => setTimeout(r, 100));
    for (const p of family.filter(alive)) {
      try { process.kill(p.pid, 'SIGKILL'); } catch { /* exited meanwhile */ }
    }
  }

  /** The pid of the browser (not a renderer or helper) started on this profile. */
  browserPid() {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      let args;
      try { args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0'); } catch { continue; }
      if (args.includes(`--user-data-dir=${this.profile}`) && !args.some((a) => a.startsWith('--type='))) {
        return Number(entry);
      }
    }
    return 0;
  }

  /** Quit and start again on the same profile. */
  async restart() {
    await this.quit();
    await this.launch();
  }

  /** A new tab on the harness page, once its rlxkv init() is done. */
  async open(path = HARNESS) {
    const page = await this.context.newPage();
    await this.load(page, path);
    return page;
  }

  async load(page, path = HARNESS) {
    await page.goto(this.url + path);
    await page.waitForFunction(() => window.T && window.T.ready);
    await page.evaluate(() => window.T.ready);
    return page;
  }

  async reload(page) {
    await page.reload();
    await page.waitForFunction(() => window.T && window.T.ready);
    await page.evaluate(() => window.T.ready);
    return page;
  }

  /**
   * Overrides Chromium's storage quota for this origin (bytes; null restores
   * the default). The override lives as long as the CDP session that set it,
   * so that session is kept open until the browser quits.
   */
  async setQuota(page, quotaSize) {
    const cdp = await this.cdp(page);
    const params = { origin: this.origin };
    if (quotaSize !== null) params.quotaSize = quotaSize;
    await cdp.send('Storage.overrideQuotaForOrigin', params);
    return this.storageUsage(page);
  }

  /** { usage, quota, overrideActive } of this origin, as Chromium counts them. */
  async storageUsage(page) {
    const cdp = await this.cdp(page);
    const { quota, usage, overrideActive } = await cdp.send('Storage.getUsageAndQuota', { origin: this.origin });
    return { quota, usage, overrideActive };
  }

  async cdp(page) {
    if (!this.cdpSession || this.cdpContext !== this.context) {
      this.cdpSession = await this.context.newCDPSession(page);
      this.cdpContext = this.context;
    }
    return this.cdpSession;
  }

  async dispose() {
    try {
      await this.quit();
    } finally {
      rmSync(this.profile, { recursive: true, force: true });
    }
  }
}

/** Pids of the live descendants of pid (Linux /proc). */
function descendants(pid) {
  const children = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    try { stat = readFileSync(`/proc/${entry}/stat`, 'utf8'); } catch { continue; }
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (!children.has(ppid)) children.set(ppid, []);
    children.get(ppid).push(Number(entry));
  }
  const out = [];
  const walk = (p) => { for (const c of children.get(p) || []) { out.push(c); walk(c); } };
  walk(pid);
  return out;
}

/**
 * Process pid as /proc shows it now: { pid, state, start }, or null. Its
 * start time tells it from a later process given the same pid (pid_max may
 * be 32768: on a machine busy with builds, pids come round).
 */
function procOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // from field 3, the state
    return { pid, state: fields[0], start: fields[19] }; // field 22: starttime
  } catch {
    return null;
  }
}

/** Whether that process (procOf) still runs: the same pid and start time, not a zombie. */
function alive({ pid, start }) {
  const now = procOf(pid);
  return !!now && now.start === start && now.state !== 'Z';
}

/** Starts the static server (the repo root; serveOpts: serve()'s, e.g. modelDir) on a free port. */
async function startServer(serveOpts = {}) {
  const { server, url } = await serve({ ...serveOpts, port: 0 });
  return {
    url,
    close: () => new Promise((resolve) => {
      server.closeAllConnections?.();
      server.close(() => resolve());
    }),
  };
}

/**
 * Runs fn(session) with its own server and a launched browser on a fresh
 * profile (sessionOpts: Session's); on failure the browser console is added
 * to the error. Everything is closed and removed afterwards, pass or fail.
 */
export async function withBrowser(fn, serveOpts = {}, sessionOpts = {}) {
  const server = await startServer(serveOpts);
  const session = new Session(server.url, sessionOpts);
  try {
    await session.launch();
    return await fn(session);
  } catch (err) {
    const lines = session.log.length ? session.log.join('\n') : '(nothing logged)';
    if (err && typeof err === 'object') {
      err.message = `${err.message}\n--- browser console ---\n${lines}`;
    }
    throw err;
  } finally {
    await session.dispose().catch(() => {});
    await server.close();
  }
}

/**
 * A node:test test around withBrowser: fn(t, session). opts: test options,
 * `serve` for the server and `chromiumArgs` for more Chromium flags.
 */
export function browserTest(name, fn, { serve: serveOpts, chromiumArgs = [], ...opts } = {}) {
  test(name, { timeout: 90000, ...opts }, (t) => withBrowser((session) => fn(t, session), serveOpts, { args: chromiumArgs }));
}

/**
 * Refuses (and records in `outside`) every request of the browser that
 * leaves the test server, workers' included; `seen`, if given, collects the
 * paths of the local ones. Set again after a restart.
 */
export async function localOnly(session, outside, seen = null) {
  await session.context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(`${session.url}/`)) {
      if (seen) seen.push(url.slice(session.url.length));
      return route.continue();
    }
    if (url.startsWith('data:') || url.startsWith('blob:')) return route.continue();
    outside.push(url);
    return route.abort();
  });
}

/** page.evaluate of T[fn](...args) in the page. */
export function call(page, fn, ...args) {
  return page.evaluate(([f, a]) => window.T[f](...a), [fn, args]);
}
