// Browser test: the package as an app gets it from npm (npm pack's
// tarball, unpacked into the app's node_modules), under bundlers with no
// configuration of theirs for rlxkv: Vite's dev server and `vite build`
// (Vite 6, 7 and 8), and a webpack 5 build. Each app (fixtures/bundler-app)
// is loaded in Chromium and reloaded: the first load inserts and flushes an
// entry to IndexedDB, the second finds it with match(). Builds must print
// no warnings, dev servers none either.
//
// RLXKV_TARBALL=path.tgz tests that tarball instead of packing the worktree.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as netServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Session } from './helpers.js';
import { repoRoot, serve } from '../../scripts/serve.mjs';

const FIXTURE = fileURLToPath(new URL('./fixtures/bundler-app', import.meta.url));

let work, tarball, session;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'rlxkv-bundlers-'));
  tarball = process.env.RLXKV_TARBALL ? resolve(process.env.RLXKV_TARBALL) : pack(work);
  session = new Session('http://127.0.0.1');
  await session.launch();
});

after(async () => {
  await session?.dispose();
  if (work) rmSync(work, { recursive: true, force: true });
});

/** npm pack of the worktree into dir: the tarball's path. */
function pack(dir) {
  const out = execFileSync('npm', ['pack', '--pack-destination', dir, '--json'], { cwd: repoRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return join(dir, JSON.parse(out)[0].filename);
}

/** A fresh copy of the fixture app with the tarball installed (unpacked: rlxkv has no dependencies). */
function makeApp(name) {
  const app = join(work, name);
  cpSync(FIXTURE, app, { recursive: true });
  mkdirSync(join(app, 'node_modules'));
  execFileSync('tar', ['xzf', tarball, '-C', join(app, 'node_modules')]);
  renameSync(join(app, 'node_modules/package'), join(app, 'node_modules/rlxkv'));
  return app;
}

/** Loads url, then reloads it: the app inserts, then finds its entry. */
async function insertThenFind(url) {
  const page = await session.context.newPage();
  const result = async () => {
    await page.waitForFunction(() => window.result);
    return page.evaluate(() => window.result);
  };
  try {
    await page.goto(url);
    assert.deepEqual(await result(), { inserted: 8 }, 'first load: the entry is inserted and flushed');
    await page.reload();
    assert.deepEqual(await result(), { found: 8, k0: 0.5 }, 'after the reload: match() finds the entry in IndexedDB');
  } catch (err) {
    err.message += `\n--- browser console ---\n${session.log.join('\n') || '(nothing logged)'}`;
    throw err;
  } finally {
    await page.close();
  }
}

/** A free TCP port on 127.0.0.1 (each server its own origin: its own IndexedDB). */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = netServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    }).on('error', reject);
  });
}

/** Vite's logger, recording what it would print at warn level and above. */
function recordingLogger(lines) {
  const warned = new Set();
  return {
    hasWarned: false,
    info() {},
    warn(msg) { this.hasWarned = true; lines.push(`warn: ${msg}`); },
    warnOnce(msg) { if (!warned.has(msg)) { warned.add(msg); this.warn(msg); } },
    error(msg) { lines.push(`error: ${msg}`); },
    clearScreen() {},
    hasErrorLogged: () => false,
  };
}

async function viteDev(pkg) {
  const vite = await import(pkg);
  const app = makeApp(`${pkg}-dev`);
  const lines = [];
  const server = await vite.createServer({
    root: app, configFile: false, customLogger: recordingLogger(lines), clearScreen: false,
    server: { host: '127.0.0.1', port: await freePort(), strictPort: true },
  });
  await server.listen();
  try {
    await insertThenFind(server.resolvedUrls.local[0]);
  } finally {
    await server.close();
  }
  assert.deepEqual(lines, [], 'the dev server logs no warnings');
}

/** `vite build` as a user runs it (the CLI, in the app, no config): what it prints at --logLevel warn. */
async function viteBuild(pkg) {
  const app = makeApp(`${pkg}-build`);
  const bin = join(repoRoot, 'node_modules', pkg, 'bin/vite.js');
  const run = spawnSync(process.execPath, [bin, 'build', '--logLevel', 'warn'], { cwd: app, encoding: 'utf8' });
  assert.equal(run.status, 0, `vite build exits 0\n${run.stdout}${run.stderr}`);
  assert.equal(`${run.stdout}${run.stderr}`.trim(), '', 'vite build prints no warnings');
  await serveAndCheck(join(app, 'dist'));
}

async function webpackBuild() {
  const { default: webpack } = await import('webpack5');
  const app = makeApp('webpack5');
  // The least any webpack app configures: the mode and its entry.
  const compiler = webpack({ mode: 'production', context: app, entry: './main.js', output: { path: join(app, 'dist') } });
  const stats = await new Promise((resolve, reject) => compiler.run((err, s) => compiler.close(() => (err ? reject(err) : resolve(s)))));
  const { errors, warnings } = stats.toJson({ all: false, errors: true, warnings: true });
  assert.deepEqual([...errors, ...warnings].map((w) => w.message), [], 'webpack reports no errors or warnings');
  writeFileSync(join(app, 'dist/index.html'), '<!doctype html>\n<meta charset="utf-8">\n<script src="main.js"></script>\n');
  await serveAndCheck(join(app, 'dist'));
}

/** Serves a build's output (root), which holds one copy of the wasm, and runs the app there. */
async function serveAndCheck(root) {
  const wasm = readdirSync(root, { recursive: true }).filter((f) => f.endsWith('.wasm'));
  assert.equal(wasm.length, 1, `one wasm in the build's output: ${wasm.join(', ')}`);
  const { server, url } = await serve({ root, port: 0 });
  try {
    await insertThenFind(`${url}/`);
  } finally {
    server.closeAllConnections?.();
    await new Promise((r) => server.close(r));
  }
}

const CASES = [
  ['Vite 8: dev server', () => viteDev('vite8')],
  ['Vite 8: vite build', () => viteBuild('vite8')],
  // Vite 6 and 7's dev servers pre-bundle rlxkv into their cache, away from its wasm.
  ['Vite 7: dev server', () => viteDev('vite7')],
  ['Vite 7: vite build', () => viteBuild('vite7')],
  ['Vite 6: dev server', () => viteDev('vite6')],
  ['Vite 6: vite build', () => viteBuild('vite6')],
  ['webpack 5: production build', webpackBuild],
];

for (const [name, run] of CASES) {
  test(`the packed package, unconfigured, inserts and finds across a reload: ${name}`, { timeout: 120000 }, run);
}
