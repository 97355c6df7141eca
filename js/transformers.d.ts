// Types for rlxkv/transformers: transformers.js (3.x, 4.x) and ONNX Runtime
// KV kept in rlxkv. No dependency on either: the app's own classes are used.
import type { Cache, Hit, Layout } from './index.js';

/** The subset of a transformers.js / onnxruntime Tensor this module reads. */
export interface TensorLike {
  type: string;
  dims: number[];
  data: ArrayLike<number | bigint> & ArrayBufferView;
  location?: string;
  ort_tensor?: { getData(): Promise<ArrayBufferView> };
  getData?(): Promise<ArrayBufferView>;
}
/** new Tensor(type, data, dims): transformers.js's Tensor or onnxruntime's. */
export type TensorClass<T = TensorLike> = new (type: string, data: ArrayBufferView, dims: number[]) => T;

/**
 * head-major, num_key_value_heads heads of head_dim (or hidden_size / num_attention_heads), num_hidden_layers layers
 * (0 when absent). Throws naming the config field that is not a positive integer a layout holds (heads, head_dim and
 * their product below 2^32, at most 4096 layers).
 */
export function layoutOf(config: object): Required<Layout> & { order: 'head-major' };

/** The KV dtype a loaded transformers.js model takes: its graph's past_key_values type (4.x) or session config (3.x). */
export function kvDtypeOf(model: object): 'float32' | 'float16';

export interface KVFromTensors {
  /** One block per layer, [heads, tokens, headDim] (head-major), the tensors' own arrays where on the CPU. */
  k: (Float32Array | Uint16Array)[];
  v: (Float32Array | Uint16Array)[];
  tokens: number;
  dtype: 'float32' | 'float16';
}
/**
 * K/V from tensors named `${prefix}.N.key` / `.value` ([1, heads, tokens, headDim]): generate's
 * past_key_values (prefix 'past_key_values', the default) or a session's outputs (prefix 'present').
 * Every layer from 0 on, with no gap; any other `${prefix}.*` tensor is refused, by name.
 * GPU-buffer tensors are downloaded. Insert the result with cache.insert(tokens, kv).
 */
export function kvFromTensors(tensors: Record<string, TensorLike>, opts?: { prefix?: string }): Promise<KVFromTensors>;

/**
 * A hit's KV as tensors named `${prefix}.N.key` / `.value` ([1, heads, matched, headDim]) of
 * `dtype` (default: the hit's; f16 → float32 is exact, f32 → float16 rounds to nearest even).
 */
export function tensorsFromHit<T>(hit: Hit, layout: Layout, Tensor: TensorClass<T>, opts?: { dtype?: 'float32' | 'float16'; prefix?: string }): Record<string, T>;

export interface CachedGenerateOptions {
  /** Your transformers.js module (import * as transformers from '@huggingface/transformers'): needed by 4.x for its DynamicCache. */
  transformers?: { DynamicCache?: new (entries: Record<string, unknown>) => unknown; env?: { version?: string } };
  /** How entries are stored: the model's own KV dtype ('auto', the default), or always 'f32' / 'f16'. */
  store?: 'auto' | 'f32' | 'f16';
  /** Keep the entry a run extended (by default it is replaced by the longer one, unless pinned). */
  keepExtended?: boolean;
}

/**
 * model.generate with the prompt's longest cached prefix restored (never the whole prompt; partial
 * reuse included) and the run's KV inserted back. generateOptions.input_ids must be [1, n] of ids in [0, 2^32); the
 * cache must have layout layoutOf(model.config). Resolves to generate's result with
 * return_dict_in_generate ({ sequences, past_key_values, ... }) plus `reused` and `prefilled`.
 */
export function cachedGenerate<R extends object>(
  model: { generate(options: object): Promise<R>; config?: object },
  cache: Cache,
  generateOptions: { input_ids: TensorLike } & Record<string, unknown>,
  opts?: CachedGenerateOptions,
): Promise<R & { sequences: TensorLike; reused: number; prefilled: number }>;
