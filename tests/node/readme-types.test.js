// The README's js examples, and the fixtures in tests/node/types/, compile
// under tsc --strict against the package's own types: as a TypeScript user
// imports them ('rlxkv', 'rlxkv/browser' and 'rlxkv/transformers' through
// package.json's exports, and through typesVersions under node10's
// resolution), with transformers.js 4.x and 3.8 (the 'transformers-v3' alias).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, copyFileSync, symlinkSync, mkdirSync, readdirSync, existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from './helpers.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const fixtures = fileURLToPath(new URL('./types/', import.meta.url));
const require = createRequire(join(root, 'package.json'));
const tsc = require.resolve('typescript/bin/tsc');

/**
 * What each README section's example leaves to the reader, declared as the
 * reader's own code would have it (appended, so tsc's line numbers are the
 * block's). A js block under any other heading must compile as it stands.
 */
const GIVEN = {
  'Use it': '',
  'KV as a shipped asset': `
declare const rlx: import('rlxkv').Rlxkv;
declare const fingerprint: bigint;
declare const kv: import('rlxkv').KV;
declare const systemTokens: number[];
declare const promptTokens: number[];
declare function writeFileSync(file: string, data: string | ArrayBufferView): void; // node:fs's, without @types/node`,
  'KV from a server: the remote tier': `
declare const rlx: import('rlxkv').Rlxkv;
declare const fingerprint: bigint;
declare const layout: import('rlxkv').Layout;
declare const promptTokens: number[];
declare const systemTokens: number[];`,
  'Forget, wipe': `
declare const rlx: import('rlxkv').Rlxkv;
declare const cache: import('rlxkv').Cache;`,
  'See what it does': `
declare const rlx: import('rlxkv').Rlxkv;
declare const fingerprint: bigint;`,
  'With transformers.js': `
declare const id: string;
declare const prompt: string;`,
};

/** The README's js blocks: [{ section, code }], each under the last ## heading before it. */
function readmeBlocks() {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const blocks = [];
  let section = '';
  for (const m of readme.matchAll(/^## (.+)$|^```js\n([\s\S]*?)^```$/gm)) {
    if (m[1] !== undefined) section = m[1].trim();
    else blocks.push({ section, code: m[2] });
  }
  return blocks;
}

const slug = (s) => s.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');
/** 4.x source as 3.8's: the alias's name for the package. */
const asV3 = (code) => code.replaceAll(`'@huggingface/transformers'`, `'transformers-v3'`);

/** The directory of package `name` as Node finds it from `from` (the nearest node_modules up). */
function packageDir(name, from) {
  for (let d = from; ; d = dirname(d)) {
    const p = join(d, 'node_modules', name);
    if (existsSync(join(p, 'package.json'))) return p;
    assert.notEqual(dirname(d), d, `${name} is not installed (npm ci)`);
  }
}

/**
 * A project directory as a user's: package.json of type module, and
 * node_modules with rlxkv (this checkout), both transformers.js versions and
 * onnxruntime-common (the one 4.x depends on) linked in. Returns its path, the
 * count of README blocks and the .ts files written, by whether they need
 * transformers.js.
 */
function userProject() {
  const dir = tempDir('rlxkv-types-');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
  mkdirSync(join(dir, 'node_modules', '@huggingface'), { recursive: true });
  const hf = packageDir('@huggingface/transformers', root);
  const links = {
    rlxkv: root,
    '@huggingface/transformers': hf,
    'transformers-v3': packageDir('transformers-v3', root),
    'onnxruntime-common': packageDir('onnxruntime-common', hf),
  };
  for (const [name, target] of Object.entries(links)) symlinkSync(target, join(dir, 'node_modules', name), 'dir');

  const files = { readme: 0, withTransformers: [], plain: [] };
  for (const [i, { section, code }] of readmeBlocks().entries()) {
    assert.ok(section in GIVEN, `README block ${i + 1} is under "## ${section}": add that section to GIVEN in ${import.meta.url}`);
    const name = `readme-${i + 1}-${slug(section)}`;
    const source = `${code}${GIVEN[section]}\nexport {};\n`;
    const uses = source.includes(`'@huggingface/transformers'`);
    writeFileSync(join(dir, `${name}.ts`), source);
    files.readme++;
    (uses ? files.withTransformers : files.plain).push(`${name}.ts`);
    if (uses) {
      writeFileSync(join(dir, `${name}-v3.ts`), asV3(source));
      files.withTransformers.push(`${name}-v3.ts`);
    }
  }
  for (const f of readdirSync(fixtures).filter((f) => f.endsWith('.ts'))) copyFileSync(join(fixtures, f), join(dir, f));
  writeFileSync(join(dir, 'tensors-v3.ts'), asV3(readFileSync(join(fixtures, 'tensors.ts'), 'utf8')));
  files.withTransformers.push('tensors.ts', 'tensors-v3.ts');
  files.plain.push('nullable.ts', 'ort.ts', 'subpaths.ts');
  return { dir, files };
}

/** Runs tsc on one tsconfig in dir: its errors, or '' when it compiled. */
function compile(dir, name, compilerOptions, files) {
  const config = join(dir, `tsconfig.${name}.json`);
  writeFileSync(config, JSON.stringify({
    compilerOptions: { strict: true, noEmit: true, target: 'es2022', types: [], ...compilerOptions },
    files,
  }, null, 2));
  try {
    execFileSync(process.execPath, [tsc, '-p', config], { cwd: dir, encoding: 'utf8' });
    return '';
  } catch (err) {
    if (typeof err.stdout !== 'string' || !err.stdout) throw err;
    return `tsc --strict -p ${config}:\n${err.stdout}`;
  }
}

test('the README examples and the type fixtures compile under tsc --strict', () => {
  const { dir, files } = userProject();
  assert.ok(files.readme >= 3, `only ${files.readme} js blocks found in README.md`);
  const errors = [
    // A bundler's resolution with today's lib (Float16Array in it), over
    // transformers.js's types: those have errors of their own, so skipLibCheck.
    compile(dir, 'bundler', {
      module: 'esnext', moduleResolution: 'bundler', lib: ['esnext', 'dom'], skipLibCheck: true,
    }, [...files.plain, ...files.withTransformers]),
    // Node's own resolution with an older lib, and rlxkv's .d.ts checked too
    // (skipDefaultLibCheck skips only TypeScript's lib): without
    // transformers.js, whose types would take most of the time again.
    compile(dir, 'node16', {
      module: 'node16', moduleResolution: 'node16', lib: ['es2022', 'dom'], skipDefaultLibCheck: true,
    }, files.plain),
    // The resolution before exports maps (node10: main, types, typesVersions),
    // which older projects still use: every entry point found all the same.
    compile(dir, 'node10', {
      module: 'esnext', moduleResolution: 'node10', lib: ['es2022', 'dom'], skipDefaultLibCheck: true,
    }, ['subpaths.ts', 'nullable.ts']),
  ].filter(Boolean);
  if (errors.length) assert.fail(errors.join('\n'));
});
