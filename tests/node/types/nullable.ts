// What rlxkv's types say may be null (or absent) is null-checked by a strict
// caller: each @ts-expect-error below is a use without the check, which
// tsc --strict must refuse (an unused @ts-expect-error is an error too).
import init, { RlxkvError, type Hit, type BlobInfo } from 'rlxkv';

const rlx = await init();
const cache = rlx.createCache({ capBytes: 1 << 20 });

// @ts-expect-error lookup: null on a miss
cache.lookup([1]).matched;
// @ts-expect-error match: null on a miss
(await cache.match([1])).matched;
// @ts-expect-error exportBlob: null unless the entry is resident
const blob: Uint8Array = cache.exportBlob([1]);
// @ts-expect-error decodeEntry: null for a blob of another fingerprint
rlx.decodeEntry(new Uint8Array(0), { fingerprint: 1n }).tokens;
// @ts-expect-error layout: null for a cache created without one
cache.layout.heads;
// @ts-expect-error restoreReport: null for a memory-only cache
cache.restoreReport.loaded;
// @ts-expect-error removalError: null while no removal is pending
cache.stats.removalError.message;
// @ts-expect-error a blob's dtype: null when its header could not be read
const dtype: 'f32' | 'f16' = cache.listBlobs()[0].dtype;

// What is never null needs no check.
const hit: Hit | null = cache.lookup([1], { partial: true, maxMatched: 0 });
const tokens: Uint32Array | undefined = hit?.tokens;
const info: BlobInfo[] = cache.listBlobs();
const err = new RlxkvError('IO', 'x');
const code: string = err.code;

export { blob, dtype, tokens, info, code };
