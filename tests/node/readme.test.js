// The README's usage example runs as written (with 'rlxkv' resolved to this checkout).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { tempDir } from './helpers.js';

test('the README example prints 8 and leaves a blob in ./rlxkv-cache', () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const example = /```js\n([\s\S]*?)```/.exec(readme)[1];
  assert.match(example, /from 'rlxkv'/);
  const entry = new URL('../../js/index.js', import.meta.url).href;
  const cwd = tempDir();
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', example.replace(`'rlxkv'`, `'${entry}'`)], { cwd, encoding: 'utf8' });
  assert.equal(out.trim(), '8');
  assert.equal(readdirSync(join(cwd, 'rlxkv-cache')).filter((f) => f.endsWith('.rlxkv')).length, 1);
});
