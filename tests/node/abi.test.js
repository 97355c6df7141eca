// The numbers JS and C must agree on, read from the C sources themselves:
// statuses and enums from src/rlxkv.h, the result record from
// wasm/boundary.c. A change on one side without the other fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { STATUS } from '../../wasm/errors.js';
import { REC, DTYPE, ORDER, STATS, STORED_HEAD } from '../../wasm/native-cache.js';

const header = readFileSync(new URL('../../src/rlxkv.h', import.meta.url), 'utf8');
const boundary = readFileSync(new URL('../../wasm/boundary.c', import.meta.url), 'utf8');

/** NAME = value pairs of the C enum whose typedef name is given. */
function cEnum(src, name) {
  const m = src.match(new RegExp(`typedef enum ${name} \\{([^}]*)\\}`)) || src.match(new RegExp(`enum \\{([^}]*REC_HEAD[^}]*)\\}`));
  assert.ok(m, `enum ${name} not found`);
  const out = {};
  for (const [, key, value] of m[1].matchAll(/(\w+)\s*=\s*(-?\d+)/g)) out[key] = Number(value);
  return out;
}

test('every rlxkv_status has the same value in wasm/errors.js', () => {
  const c = cEnum(header, 'rlxkv_status');
  const js = Object.fromEntries(Object.entries(STATUS).map(([k, v]) => [v < 0 ? `RLXKV_ERR_${k}` : `RLXKV_${k}`, v]));
  assert.deepEqual(js, c);
});

test('dtypes and orders match the header', () => {
  assert.deepEqual(cEnum(header, 'rlxkv_dtype'), { RLXKV_F32: DTYPE.f32, RLXKV_F16: DTYPE.f16 });
  assert.deepEqual(cEnum(header, 'rlxkv_order'),
    { RLXKV_ORDER_ANY: ORDER.any, RLXKV_TOKEN_MAJOR: ORDER['token-major'], RLXKV_HEAD_MAJOR: ORDER['head-major'] });
});

test('the lookup record is read at the offsets wasm/boundary.c writes', () => {
  const c = cEnum(boundary, 'rec');
  const js = Object.fromEntries(Object.entries(REC).map(([k, v]) => [`REC_${k}`, v]));
  assert.deepEqual(js, c);
});

test('stats are read as many doubles as wasm/boundary.c writes', () => {
  assert.equal(STATS.length, Number(boundary.match(/STATS_FIELDS = (\d+)/)[1]));
});

test('stored entries are described in heads of the words wasm/boundary.c reads', () => {
  assert.equal(STORED_HEAD, Number(boundary.match(/STORED_HEAD = (\d+)/)[1]));
});
