// Types for rlxkv: a prompt KV-cache for in-browser and Node LLM apps.

/** Stable failure codes of RlxkvError. */
export type RlxkvErrorCode =
  | 'BAD_MAGIC' | 'TRUNCATED' | 'CORRUPT' | 'NOSPACE' | 'QUOTA' | 'IO' | 'NOMEM'
  | 'INVALID' | 'NOTFOUND' | 'SHAPE' | 'CHANGED' | 'LIMIT' | 'STALE' | 'STALE_VIEW'
  /** init() could not fetch, read or instantiate the .wasm; the message names the URL and what came instead. */
  | 'WASM_LOAD';

/** Every failure that is not a wrong argument (those are TypeError/RangeError). */
export class RlxkvError extends Error {
  readonly name: 'RlxkvError';
  readonly code: RlxkvErrorCode;
  constructor(code: RlxkvErrorCode, message: string, options?: { cause?: unknown });
}

/** Token ids: u32 each. Arrays are checked and copied; a Uint32Array is used as is. */
export type Tokens = Uint32Array | readonly number[];

/** Float16Array, where the engine has one (TypeScript's lib names it from 5.7 on). */
export type Float16ArrayLike = ArrayBufferView & { readonly length: number; readonly BYTES_PER_ELEMENT: 2; [index: number]: number };
/**
 * A 16-bit KV block: IEEE binary16 bit patterns in a Uint16Array, or a
 * Float16Array where the engine has one (Chromium 135+, Node 24+). Kept
 * exactly: no rounding, NaN payloads and signed zeros preserved.
 */
export type F16Block = Uint16Array | Float16ArrayLike;
export type KVBlock = Float32Array | F16Block;

/**
 * One K and one V block per layer, all f32 (Float32Array) or all f16
 * (F16Block) within one entry. Without a layout, blocks may differ in length.
 */
export interface KV {
  k: readonly KVBlock[];
  v: readonly KVBlock[];
}

/**
 * How a model's K and V blocks are shaped (per layer, batch 1):
 * 'head-major' is [heads, tokens, headDim] (ONNX Runtime, transformers.js,
 * PyTorch: [batch, kv_heads, seq, head_dim]); 'token-major' is
 * [tokens, heads * headDim]. With a layout every insert and import is
 * checked against it, and partial hits are cut right for either order.
 * Without one, blocks may have any length and a partial hit takes the
 * first rows of each block as token-major (only entries whose blocks are
 * multiples of their token count are cut).
 */
export interface Layout {
  order: 'head-major' | 'token-major';
  /** KV heads (num_key_value_heads). */
  heads: number;
  /** Values per head per token. */
  headDim: number;
  /** Layers every entry has; omitted or 0: any number. */
  layers?: number;
  /**
   * A model whose cache holds state as well as KV (conv, linear-attention or Mamba layers: LFM2, Qwen3.5;
   * layoutOf from rlxkv/transformers gives it): each state tensor, in order, by the name transformers.js
   * gives it (past_conv.N, past_recurrent.N) and its shape without the batch. Such a cache (openCache only)
   * keeps, beside the KV, the state after exactly each insert's tokens (a checkpoint), and a hit is the
   * longest prefix at which it holds both: never KV without its state. Checkpoints persist in PATH/state.
   */
  state?: readonly StateTensor[];
  /** With state: the model layer of each KV layer (the attention layers), for adapters naming tensors. */
  attention?: readonly number[];
}

export interface StateTensor {
  name: string;
  shape: readonly number[];
}

export interface Hit {
  /** Query tokens covered by the hit (the prefix to skip in prefill). */
  matched: number;
  /** 'f32' (Float32Array blocks) or 'f16' (Uint16Array or Float16Array blocks, see f16As). */
  dtype: 'f32' | 'f16';
  /** The `matched` tokens. (tokens, k and v are getters on a view: read-only.) */
  readonly tokens: Uint32Array;
  /**
   * Per layer: the whole block, or for a partial hit the values of its first
   * `matched` tokens, in the same layout (head-major: `matched` rows of every
   * head, heads one after another, so [heads, matched, headDim]).
   */
  readonly k: KVBlock[];
  readonly v: KVBlock[];
  /** A cache with layout.state: the state after exactly the `matched` tokens, one block per layout.state tensor (copies). */
  state?: KVBlock[];
  /** The dtype of `state`, which may differ from the KV's. */
  stateDtype?: 'f32' | 'f16';
  /**
   * Whether k, v and tokens are views of wasm memory, asked for with
   * `view: true`: where the hit lies in one entry's own values (one page,
   * or, with a layout, pages read back from storage together, which memory
   * holds as one entry) and they are contiguous (a whole hit, a token-major cut). Else
   * (a hit over several pages in memory, a head-major cut) copies, each
   * block gathered once, and view is false.
   */
  view: boolean;
  /**
   * For a view: false once the cache has freed an entry since the lookup
   * (an insert that replaced or evicted one, remove, clear, a smaller
   * capBytes, close); its getters then throw RlxkvError 'STALE_VIEW' rather than
   * read what lies there now. Always true for copies.
   */
  readonly valid: boolean;
}

export interface LookupOptions {
  /** Views into wasm memory instead of copies (see Hit.view, Hit.valid). */
  view?: boolean;
  /** Also reuse a longer entry, cut to the common prefix (see Layout for which entries can be cut). */
  partial?: boolean;
  /** With partial: match at most this many tokens (e.g. tokens.length - 1). */
  maxMatched?: number;
}

export interface MatchOptions extends LookupOptions {
  /** Stops the match (AbortError) before a stored entry is read, or after (then it stays read, in memory). A read is one operation: there is no progress to report. */
  signal?: AbortSignal;
}

export interface CacheStats {
  /** Entries in memory (resident) and their KV bytes: what capBytes bounds. */
  entries: number;
  bytes: number;
  capBytes: number;
  pinnedEntries: number;
  pinnedBytes: number;
  hits: number;
  misses: number;
  evictions: number;
  tokensReused: number;
  /** Entries known only in storage (stored-only), read on their first hit, and their KV bytes. */
  storedEntries: number;
  storedBytes: number;
  /** Blobs given up (remove(), a storageCapBytes prune) whose deletion has not succeeded yet: tried again at each flush, which meanwhile saves all the same. */
  pendingRemovals: number;
  /** Why the last try to delete them failed; null while none is pending. */
  removalError: Error | null;
  /** What the remote tier did (only with the remote option). */
  remote?: RemoteStats;
  /** With layout.state: the checkpoints (counted in bytes, capBytes, storedBytes above too). */
  state?: { entries: number; bytes: number; capBytes: number; storedEntries: number; storedBytes: number };
}

export interface RemoteStats {
  /** Pages asked for, arrived right and kept, and the bytes of every body read. */
  requests: number;
  pages: number;
  bytes: number;
  /** Answered 404 or 410: the run of pages ended there. */
  notFound: number;
  /** Network errors, other HTTP errors, no answer within timeoutMs. */
  failed: number;
  /** Bodies that were not the page their name says (format, fingerprint, tokens, parent, shape; a q8 page's scales). */
  refused: number;
  /** The last failure or refusal, with the page's name; null if none. */
  lastError: string | null;
}

/**
 * A read-only tier below memory and storage: pages published by `rlxkv
 * publish` (or rlx.pageName and the page format, FORMATS.md) under `url`,
 * fetched by name on match(). Nothing touches the network without it.
 */
export interface RemoteOptions {
  /** The directory the pages are served from (a trailing '/' is added), same origin or with CORS. */
  url: string | URL;
  /** The fetch to use (auth headers, tests); default globalThis.fetch. */
  fetch?: (url: string, init: RequestInit) => Promise<Response>;
  /** One match()'s remote requests time out together after this (default 10,000 ms): a shorter hit, not an error. */
  timeoutMs?: number;
  /** Pages asked for in one match() at most (default 64). */
  maxPages?: number;
  /** Requests in flight at once (default 6). */
  maxInFlight?: number;
  /** Aborts the remote requests under way (a shorter hit, not an error). */
  signal?: AbortSignal;
  /**
   * The dtype of the published pages to ask for (their names differ): 'f32' (default), 'f16', or 'q8':
   * 8-bit pages (`rlxkv publish --dtype q8`, FORMATS.md "8-bit pages"), a quarter of f32's bytes,
   * dequantized into entries of the dtype they were published from. **q8 is lossy**: the KV restored is
   * close to the model's (each value within half its row's scale, about 1/254 of its largest magnitude),
   * not equal, and it is kept in memory and local storage like computed KV. Open a cache that uses it
   * with a fingerprint of its own, e.g. `rlx.fingerprintOf('<model> remote-q8')`, and publish under
   * that one (`--as-fingerprint`), so that exact and approximate KV never share a fingerprint unknowingly.
   */
  dtype?: 'f32' | 'f16' | 'q8';
  /** Tokens a published page holds: the publisher's (default 256). */
  pageTokens?: number;
}

export interface RestoreReport {
  /** Entries of this fingerprint found in storage's index: known to the cache, not read; each is read on its first hit (match). */
  indexed: number;
  /** @deprecated 0.1's name for `indexed` (it counted entries found, not loaded); not listed by a spread or JSON. */
  readonly loaded: number;
  /** Blobs of other fingerprints, left untouched. */
  stale: number;
  /** Invalid blobs, skipped (a hit never reads them; prune removes them). */
  corrupt: number;
  /** Valid blobs the cache could not index (out of memory), left untouched. */
  skipped: number;
  /** Valid blobs under a name not their own (copied in by hand), left untouched. */
  foreign: number;
  /** Blobs past this reader's limits (over RLXKV_MAX_LAYERS layers), kept. */
  tooLarge: number;
  /** Blobs that could not be read (their file's permissions, say), kept as they are and read again at the next open. */
  unreadable: number;
  /** KV bytes of the entries found. */
  bytes: number;
  /** Entries read into memory at open (preload: true), else 0. */
  resident: number;
  /** The store can be read but not written (a read-only directory): flush and prune reject with IO. */
  readOnly: boolean;
  /** Temporary files of saves still there (a live writer's, less than an hour old: FORMATS.md, "A store directory"), and their bytes. Node directories only: 0 for IndexedDB and OPFS (OPFS removes dead writers' temporary files, judged by Web Lock, when an open lists the directory: after a writer died mid-save). */
  temporaries: number;
  temporaryBytes: number;
  /** Temporary files deleted at open: their writer's process is gone, or they were over an hour old. Node directories only. */
  swept: number;
  /** With layout.state: what opening the checkpoints' store (PATH/state) found. */
  state?: RestoreReport;
}

export interface BlobInfo {
  name: string;
  tokens: number;
  /** File (or record) bytes. */
  bytes: number;
  /** When it was last written or used. */
  mtime: Date;
  fingerprint: bigint;
  /**
   * ok / stale: valid, of this fingerprint or another; corrupt: invalid (prune removes it);
   * foreign: valid, under a name not its own (left alone); too-large: past this reader's limits
   * (RLXKV_MAX_LAYERS layers, or this process's memory), kept; unreadable: could not be read,
   * kept. Judged as a cache's open judges a blob: by the store's index and, for a blob it does not
   * describe, the blob's first bytes (a hit reads a blob whole, and refuses one that is not valid
   * after all; `rlxkv verify DIR` reads each whole). rlx.openStore on a Node directory also lists
   * its temporary files (FORMATS.md, "A store directory"): temp (its writer may be at it),
   * abandoned (prune removes it).
   */
  status: 'ok' | 'stale' | 'corrupt' | 'foreign' | 'too-large' | 'unreadable' | 'temp' | 'abandoned';
  /** The rlxkv_status behind the status: CORRUPT (corrupt), LIMIT (too-large), IO (unreadable), else 0. */
  error: number;
  /** KV bytes (values × 4 or 2), 0 where the blob is not valid. */
  kvBytes: number;
  /** A page (RLXKVPG1, RLXKVPH1: its own tokens' values, after a parent's) rather than a whole blob. */
  page: boolean;
  /** The values' type; null where the blob's header was not read as valid (corrupt, too-large, unreadable, temporary files). */
  dtype: 'f32' | 'f16' | null;
}

export interface PruneReport {
  removed: number;
  removedBytes: number;
  kept: number;
  keptBytes: number;
  /** Store.prune on a Node directory only: temporary files removed (abandoned: no live writer owns them) and kept, and their bytes. */
  tempsRemoved?: number;
  tempsRemovedBytes?: number;
  tempsKept?: number;
  tempsKeptBytes?: number;
}

export type Fingerprint = bigint | number;

export interface CacheOptions {
  /** Budget of KV bytes (4 per f32 value, 2 per f16 value). 0 disables the cache. */
  capBytes: number;
  /**
   * The model/config the KV belongs to (u64), e.g. rlx.fingerprintOf('org/model q4 f16'). openCache with
   * storage requires it (a TypeError without: stored KV outlives the page, and would serve another model);
   * a memory-only cache defaults to 0n.
   */
  fingerprint?: Fingerprint;
  /** The model's KV layout; omitted: any block lengths, token-major partial hits. */
  layout?: Layout;
  /** The array type of f16 hits: 'Float16Array' (the default where the engine has it) or 'Uint16Array' (bits; the default elsewhere). */
  f16As?: 'Float16Array' | 'Uint16Array';
  /** Told what the cache does (for a debug panel or the console); what it throws is ignored. */
  onEvent?: (event: CacheEvent) => void;
  /** Pages served over HTTP, fetched on match() past what memory and storage hold; needs a layout. */
  remote?: RemoteOptions;
}

/** What onEvent hears. ms: milliseconds it took; error: null unless it failed. */
export type CacheEvent =
  /** Opening read storage's index: entries indexed (not read), read at open (preload). */
  | { type: 'open'; storage: 'idb' | 'opfs' | 'fs'; path: string; indexed: number; resident: number; ms: number }
  /** A hit: from memory, or read from storage first (match). tokens matched, of an entry of entryTokens. */
  | { type: 'hit'; source: 'memory' | 'storage' | 'remote'; tokens: number; entryTokens: number; bytes: number; ms: number }
  /** A miss; stored: tokens of a stored, not resident entry that match() would have read (lookup() is memory-only). */
  | { type: 'miss'; tokens: number; stored: number }
  /** Entries evicted from memory to make room (stored ones stay stored). */
  | { type: 'evict'; entries: number }
  /** A stored entry that cannot fit in memory beside the pinned ones, or beside the pages it extends (capBytes): match() served a shorter hit. */
  | { type: 'nospace'; entryTokens: number }
  /** A flush: blobs saved and their bytes; removals still pending. */
  | { type: 'flush'; saved: number; bytes: number; pendingRemovals: number; ms: number; error: Error | null }
  /** A prune: prune() or the storageCapBytes budget. */
  | ({ type: 'prune'; reason: 'prune' | 'storageCapBytes'; error: Error | null } & PruneReport)
  /** Another cache on the store (another tab, worker, thread) saved or deleted blobs (watch: true). */
  | { type: 'heard'; saved: number; removed: number };

export interface OpenCacheOptions extends CacheOptions {
  /**
   * 'idb' (IndexedDB, IDBFS's record layout), 'opfs' (the Origin Private
   * File System: in a dedicated worker, sync access handles that read a hit
   * straight into wasm memory; in a window, a helper worker's (File reads
   * and createWritable where a CSP forbids it); read handles are kept open
   * for the next hit, and let go when a writer asks; needs
   * FileSystemFileHandle.move() and Web Locks), 'fs' (Node
   * directory), 'auto' (default: 'idb' in browsers and workers, also where
   * OPFS exists, so that existing stores and a page and its workers agree;
   * 'fs' in Node, unless a global indexedDB exists there; 'none' where
   * neither does) or 'none'.
   */
  storage?: 'auto' | 'idb' | 'opfs' | 'fs' | 'none';
  /** IndexedDB mount path or OPFS directory under the root (default '/rlxkv'), or Node directory (default './rlxkv-cache'). */
  path?: string;
  /**
   * Byte budget of this fingerprint's stored blobs, which may be far larger than capBytes: the least
   * recently used are pruned on open and flush (blobs of pinned entries are kept).
   */
  storageCapBytes?: number;
  /**
   * With layout.state: the part of capBytes (and the same share of storageCapBytes) the state checkpoints
   * get; default a quarter.
   */
  stateCapBytes?: number;
  /**
   * Also read stored entries into memory at open, most recently used first, while they fit capBytes.
   * Default false: open reads only the index, and match() reads each entry on its first hit.
   */
  preload?: boolean;
  /**
   * Learn at once of the blobs other caches on the same store save and delete (other tabs and workers of
   * the origin; in Node, other threads of the process), through a BroadcastChannel: their entries become
   * stored-only entries here, found by match(). Default false: what others save is found at the next open.
   */
  watch?: boolean;
}

/** A store as openCache names it: storage and path (default as openCache's). */
export interface StorePlace {
  /** Default 'auto', as openCache's. */
  storage?: 'auto' | 'idb' | 'opfs' | 'fs';
  path?: string;
}

export interface InsertOptions {
  /**
   * kv holds the KV of tokens[start..] only: for an app that has just the new tokens' KV (e.g. from
   * hit.matched on). The cache must hold the first `start` tokens: else RlxkvError 'NOTFOUND'.
   */
  start?: number;
}

export interface Cache {
  readonly fingerprint: bigint;
  readonly layout: Required<Layout> | null;
  readonly storage: 'idb' | 'opfs' | 'fs' | 'none';
  readonly closed: boolean;
  /**
   * Whether entries share the KV of their common prefixes (pages): an insert that extends a held
   * prefix copies and keeps only the new tokens' KV, and a flush writes it as a page of those tokens.
   */
  readonly paging: boolean;
  /** What opening found in storage; null for a memory-only cache. */
  readonly restoreReport: RestoreReport | null;
  readonly size: number;
  readonly bytes: number;
  /** The budget; setting it evicts to fit. */
  capBytes: number;
  readonly stats: CacheStats;

  /**
   * Stores the KV of a token prefix; an entry with the same tokens is replaced.
   * Blocks that do not fit the layout are a RangeError naming the block; nothing changes.
   * With paging, only the KV of tokens past the prefix the cache holds is copied (all of it, held whole,
   * where that prefix and these tokens together would not fit capBytes: the newest entry is kept, alone if need be).
   * With layout.state, kv.state is required: the state after exactly these tokens.
   */
  insert(tokens: Tokens, kv: KV & { state?: readonly KVBlock[] }, opts?: InsertOptions): void;
  /** The longest cached prefix of `tokens`, or null. */
  lookup(tokens: Tokens, opts?: LookupOptions): Hit | null;
  /**
   * The longest cached prefix in memory or in storage, as lookup() gives it (same options). A hit on
   * an entry that is only stored reads its one blob into memory first (least recently used entries
   * are evicted, and stay stored once flushed). Use this after a reload: opening reads only the index.
   */
  match(tokens: Tokens, opts?: MatchOptions): Promise<Hit | null>;
  /** The entry with exactly these tokens is never evicted (a stored-only one: once read). Throws NOTFOUND if absent. */
  pin(tokens: Tokens): void;
  unpin(tokens: Tokens): void;
  /** Whether an entry with exactly these tokens is known, in memory or stored-only. */
  has(tokens: Tokens): boolean;
  /** Whether the entry with exactly these tokens is cached and pinned. */
  isPinned(tokens: Tokens): boolean;
  /** Drops the entry from memory and the index at once; its blob is deleted by the next flush (which reports any error). */
  remove(tokens: Tokens): boolean;
  /**
   * Drops every entry from memory; stored ones stay known, stored-only (pinned ones still pinned).
   * With stored: true, forgets everything of this cache: every entry, pinned and stored-only ones
   * too, and every blob of its fingerprint in storage, deleted now (watching caches hear of it;
   * other fingerprints' blobs stay). Resolves once they are deleted; rejects with IO if one cannot
   * be (tried again at each flush: stats.pendingRemovals).
   */
  clear(opts?: { stored?: boolean }): Promise<void>;
  /** Resident entries (pinned first, then most recent first), then stored-only ones (most recent first). */
  entries(): { tokens: Uint32Array; bytes: number; pinned: boolean; dtype: 'f32' | 'f16'; resident: boolean }[];

  /**
   * The blob of the resident entry with exactly these tokens, or null (also for a stored-only one:
   * match() it first). RLXKV001 for f32 entries, RLXKVF16 for f16 ones; as: 'RLXKV001' widens f16
   * exactly, for tools that read only RLXKV001.
   */
  exportBlob(tokens: Tokens, opts?: { as?: 'RLXKV001' | 'RLXKVF16' }): Uint8Array | null;
  /**
   * Inserts an entry from a blob (bytes, a Response, or a URL / file path). STALE if of another
   * fingerprint, SHAPE if it does not fit the layout. `cached` is false when the cache is off (capBytes 0).
   */
  importBlob(
    source: Uint8Array | ArrayBuffer | ArrayBufferView | Response | URL | string,
    opts?: {
      pin?: boolean;
      /** Stops the fetch or read (AbortError). */
      signal?: AbortSignal;
      /** Hears a Response's body as it arrives (total: its Content-Length, null if unknown or encoded). */
      onProgress?: (progress: { loaded: number; total: number | null }) => void;
    },
  ): Promise<{ tokens: number; bytes: number; cached: boolean }>;

  /**
   * Makes every inserted entry durable. Rejects with QUOTA / IO; nothing stored before is lost,
   * and what failed is tried again by the next flush (remove() an entry to give it up).
   */
  flush(): Promise<void>;
  listBlobs(): BlobInfo[];
  prune(opts?: { maxBytes?: number; stale?: boolean; dryRun?: boolean }): Promise<PruneReport>;
  /** Flushes (unless flush: false) and frees the wasm memory. */
  close(opts?: { flush?: boolean }): Promise<void>;
}

export interface Entry {
  tokens: Tokens;
  /** All f32, or all f16 (see KV). */
  k: readonly KVBlock[];
  v: readonly KVBlock[];
}

export interface DecodedEntry {
  fingerprint: bigint;
  pastLen: number;
  /** 'RLXKV001' (f32) or 'RLXKVF16' (f16, FORMATS.md). */
  format: 'RLXKV001' | 'RLXKVF16';
  dtype: 'f32' | 'f16';
  /** Always a fresh array. */
  tokens: Uint32Array;
  /** Fresh copies, or with `view: true` views of the decoded bytes where aligned: Float32Array (f32) or Uint16Array bits (f16). */
  k: (Float32Array | Uint16Array)[];
  v: (Float32Array | Uint16Array)[];
}

export interface EncodeOptions {
  /** 'RLXKV001' writes f16 blocks widened exactly (default: each dtype's own format). */
  as?: 'RLXKV001' | 'RLXKVF16';
  /**
   * Write the blob at the start of this buffer instead of a new one, and
   * return that subarray. It must hold rlx.encodedSize(entry) bytes
   * (RangeError otherwise) and must not overlap the entry's arrays.
   */
  out?: Uint8Array;
}

export interface DecodeOptions {
  /** Expected fingerprint: a blob of another one decodes to null. */
  fingerprint?: Fingerprint;
  /**
   * K/V blocks as views of `bytes` (Float32Array for RLXKV001, Uint16Array
   * for RLXKVF16), sharing its memory (no copy), when the values are aligned
   * to their size on a little-endian host; copies otherwise (and always for
   * bytes in the module's wasm memory). Default false: fresh copies.
   */
  view?: boolean;
}

/**
 * The blobs of a store without a cache, for tools (rlx.openStore, the CLI): a Node directory,
 * IndexedDB or OPFS, opened as a cache opens it (store/open.js), so that a store lists the same
 * whoever reads it. Its list is the store as opened.
 */
export interface Store {
  /** Judged against `fingerprint`; omitted, every valid blob is 'ok'. In name order for a Node directory. */
  list(fingerprint?: Fingerprint): BlobInfo[];
  /**
   * Corrupt blobs, other fingerprints' (stale: true, with a fingerprint), then the least recently
   * used (pages after those that need them) until maxBytes. In a Node directory also the abandoned
   * temporary files, and the live ones count against maxBytes. Durable when it resolves.
   */
  prune(fingerprint?: Fingerprint, opts?: { maxBytes?: number | bigint; stale?: boolean; dryRun?: boolean }): Promise<PruneReport>;
  /** Kept for 0.1.0's callers of sync(): prune() is durable by itself. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

export interface Rlxkv {
  readonly RlxkvError: typeof RlxkvError;
  /** Bytes of wasm memory of this module instance. */
  readonly memoryBytes: number;
  createCache(opts: CacheOptions): Cache;
  openCache(opts: OpenCacheOptions): Promise<Cache>;
  /** A store without a cache, named as openCache names it. */
  openStore(place: StorePlace): Promise<Store>;
  /** @deprecated the form of 0.1: openStore({ storage, path }). */
  openStore(path: string, opts?: { storage?: 'auto' | 'fs' | 'idb' | 'opfs' }): Promise<Store>;
  /**
   * Deletes a whole store: every blob of every fingerprint, and the IndexedDB database, the OPFS
   * directory or (if nothing else is in it) the Node directory. Caches that watch it forget its
   * blobs; a cache open on it keeps its memory and saves into a new, empty store.
   */
  deleteStore(place: StorePlace): Promise<{ removed: number }>;
  /**
   * Copies every blob of one store into another, bytes unchanged (every
   * fingerprint, any status; a blob of the same name is replaced), one blob
   * in memory at a time: e.g. an 'idb' store to 'opfs' and back. A cache
   * open on `to` sees them once reopened. Rejects with RlxkvError QUOTA or
   * IO; blobs copied before stay copied.
   */
  copyStore(from: StorePlace, to: StorePlace): Promise<{ copied: number; bytes: number }>;
  /** The blob of an entry (RLXKV001 for f32, RLXKVF16 for f16, or opts.as): a new Uint8Array, or the filled start of opts.out. */
  encodeEntry(entry: Entry, fingerprint?: Fingerprint, opts?: EncodeOptions): Uint8Array;
  /** The byte length of encodeEntry(entry, fp, opts), to size an opts.out. */
  encodedSize(entry: Entry, opts?: { as?: 'RLXKV001' | 'RLXKVF16' }): number;
  /** null when opts.fingerprint is given and the blob's differs; malformed bytes throw RlxkvError. */
  decodeEntry(bytes: Uint8Array | ArrayBuffer | ArrayBufferView, opts?: DecodeOptions): DecodedEntry | null;
  /** A stable 64-bit hash of a string (UTF-8) or bytes. */
  fingerprintOf(input: string | Uint8Array | ArrayBuffer | ArrayBufferView): bigint;
  /**
   * The name a store and a remote tier give the page (or blob) that ends after these tokens: 32 hex digits
   * and '.rlxkv', a 128-bit key chained over the fingerprint, the tokens and the dtype (FORMATS.md, Names).
   */
  pageName(tokens: Tokens, fingerprint: Fingerprint, dtype?: 'f32' | 'f16' | 'q8'): string;
  /**
   * pageName of each prefix of `tokens` that ends at one of `ends` (ascending, none past the tokens), in
   * one pass over the tokens: a publisher's or client's grid of names costs the prompt's length once.
   */
  pageNames(tokens: Tokens, ends: number[], fingerprint: Fingerprint, dtype?: 'f32' | 'f16' | 'q8'): string[];
}

export interface InitOptions {
  /** The wasm's bytes (rlxkv_core.wasm): nothing is fetched or read. */
  wasmBinary?: ArrayBuffer | Uint8Array;
  /** Where rlxkv_core.wasm is (a URL, a path in Node), given its name and the glue's directory. */
  locateFile?: (name: string, prefix: string) => string;
  /** A separate module instance instead of the shared one. */
  newInstance?: boolean;
}

/**
 * Instantiates the wasm module: once, shared by later calls, unless newInstance, wasmBinary or locateFile is given.
 * Rejects with RlxkvError 'WASM_LOAD' when the wasm cannot be fetched, read or instantiated.
 */
export default function init(opts?: InitOptions): Promise<Rlxkv>;
export { init };
