// Types for rlxkv/transformers: transformers.js (3.x, 4.x) and ONNX Runtime
// KV kept in rlxkv. No dependency on either: the app's own classes are used.
import type { Cache, Hit, KVBlock, Layout } from './index.js';

/**
 * The part of a tensor this module reads. transformers.js's Tensor (3.x and
 * 4.x) and onnxruntime's are TensorLikes as they are, so it is typed as
 * broadly as they are: transformers.js types `data` as DataArray (typed
 * arrays or any[]), onnxruntime's includes string[]. What this module reads
 * is checked when it reads it (a RangeError or TypeError naming the tensor):
 * KV of type 'float32' (Float32Array) or 'float16' (Uint16Array or
 * Float16Array), dims [1, heads, tokens, headDim]; input_ids of ids in
 * [0, 2^32), dims [1, n].
 */
export interface TensorLike {
  readonly type: string;
  readonly dims: readonly number[];
  /** The values, where `location` is the CPU (the default). */
  readonly data: ArrayLike<unknown>;
  /**
   * 'cpu', 'cpu-pinned' (or absent): `data` is read; elsewhere (a GPU buffer) the values are downloaded
   * with getData(true), which also frees the buffer: the tensor is a CPU one afterwards.
   */
  readonly location?: string;
  /** transformers.js: the onnxruntime tensor within, which downloads. */
  readonly ort_tensor?: { getData(releaseData?: boolean): Promise<unknown> };
  /** onnxruntime: downloads the values of a GPU tensor (releaseData: and frees its buffer). */
  getData?(releaseData?: boolean): Promise<unknown>;
}

/**
 * new Tensor(type, data, dims): transformers.js's Tensor class or onnxruntime's. `data` is a Float32Array,
 * or for 'float16' a Uint16Array of bits, or the hit's own Float16Array where the cache gives those (f16As):
 * typed Uint16Array, which both classes take, as TypeScript's lib before 5.7 has no Float16Array.
 */
export type TensorClass<T = TensorLike> = new (type: 'float32' | 'float16', data: Float32Array | Uint16Array, dims: number[]) => T;

/**
 * head-major, num_key_value_heads heads of head_dim (or hidden_size / num_attention_heads), num_hidden_layers layers
 * (0 when absent). Throws naming the config field that is not a positive integer a layout holds (heads, head_dim and
 * their product below 2^32, at most 4096 layers). For a model whose cache holds state (model_type lfm2, lfm2_moe,
 * lfm3, qwen3_next, qwen3_5, qwen3_5_moe, their _text and _vl forms, granitemoehybrid, falcon_h1): layers counts the
 * attention layers, `attention` lists them and `state` the state tensors (past_conv.N, past_recurrent.N, past_ssm.N)
 * with their shapes. Other model types with state (nemotron_h, olmo_hybrid, zaya, deepseek_v4) throw a RangeError
 * naming the type.
 */
export function layoutOf(config: object): Required<Pick<Layout, 'heads' | 'headDim' | 'layers'>> & Layout & { order: 'head-major' };

/** The KV dtype a loaded transformers.js model takes: its graph's past_key_values type (4.x) or session config (3.x). */
export function kvDtypeOf(model: object): 'float32' | 'float16';

export interface KVFromTensors {
  /**
   * One block per layer, [heads, tokens, headDim] (head-major), the tensors' own arrays where on the
   * CPU: Float32Array for float32; for float16 a Uint16Array of bits or a Float16Array, as the tensor holds it.
   */
  k: KVBlock[];
  v: KVBlock[];
  tokens: number;
  dtype: 'float32' | 'float16';
  /** With opts.layout of a model with state: one block per layout.state tensor, and their dtype. */
  state?: KVBlock[];
  stateDtype?: 'float32' | 'float16';
}
/**
 * K/V from tensors named `${prefix}.N.key` / `.value` ([1, heads, tokens, headDim]): generate's
 * past_key_values (prefix 'past_key_values', the default) or a session's outputs (prefix 'present').
 * Every layer from 0 on, with no gap; any other `${prefix}.*` tensor is refused, by name.
 * GPU-buffer tensors are downloaded and their buffers freed (they hold the values on the CPU after).
 * Insert the result with cache.insert(tokens, kv).
 */
export function kvFromTensors(tensors: { readonly [name: string]: TensorLike }, opts?: { prefix?: string; layout?: Layout }): Promise<KVFromTensors>;

/**
 * A hit's KV as tensors named `${prefix}.N.key` / `.value` ([1, heads, matched, headDim]) of
 * `dtype` (default: the hit's; f16 → float32 is exact, f32 → float16 rounds to nearest even).
 */
export function tensorsFromHit<T>(hit: Hit, layout: Layout, Tensor: TensorClass<T>, opts?: { dtype?: 'float32' | 'float16'; stateDtype?: 'float32' | 'float16'; prefix?: string }): Record<string, T>;

/** The part of a WebGPU GPUDevice gpuTensorsFromHit uses (typed loosely: no WebGPU types needed). */
export interface GPUDeviceLike {
  createBuffer(desc: { size: number; usage: number }): { destroy(): void };
  readonly queue: { writeBuffer(buffer: unknown, offset: number, data: ArrayBufferLike, dataOffset?: number, size?: number): void };
}

/**
 * tensorsFromHit's tensors written straight into new GPU buffers of `device` as 'gpu-buffer' tensors of your Tensor
 * class; each buffer is destroyed when its tensor is disposed.
 */
export function gpuTensorsFromHit<T>(hit: Hit, layout: Layout, Tensor: new (desc: object) => T, device: GPUDeviceLike, opts?: { dtype?: 'float32' | 'float16'; stateDtype?: 'float32' | 'float16' }): Record<string, T>;

/** T: the class of your input_ids (your transformers.js's Tensor), of which the restored KV is made. */
export interface CachedGenerateOptions<T = TensorLike> {
  /** Your transformers.js module (import * as transformers from '@huggingface/transformers'): needed by 4.x for its DynamicCache. */
  transformers?: { DynamicCache?: new (entries: Record<string, T>) => unknown; env?: { version?: string } };
  /** The dtype entries are cached in: the model's own KV dtype ('auto', the default), or always 'f32' / 'f16'. */
  storeDtype?: 'auto' | 'f32' | 'f16';
  /** @deprecated 0.1's name of storeDtype. */
  store?: 'auto' | 'f32' | 'f16';
  /**
   * A model with state (layout.state): the prompt is prefilled in runs that end at each multiple of this
   * (default 256) past the hit, and the state there kept, so that a prompt edited later reuses all before
   * the last multiple before the edit.
   */
  checkpointEvery?: number;
  /**
   * Where a hit is restored for a model on WebGPU: written straight into GPU buffers of this GPUDevice
   * (gpuTensorsFromHit) instead of CPU tensors ONNX Runtime uploads. Default: for a model whose session runs on
   * 'webgpu', transformers.js's device (`await transformers.env.backends.onnx.webgpu.device`, the one every
   * onnxruntime-web WebGPU session runs on); false: CPU tensors always.
   */
  gpuDevice?: GPUDeviceLike | false;
  /**
   * @deprecated The entry a run extended is always kept now: it shares its KV with the longer one
   * (pages), so there is nothing to keep. Accepted and ignored.
   */
  keepExtended?: boolean;
}

/**
 * model.generate with the prompt's longest cached prefix restored (never the whole prompt; partial
 * reuse included) and the run's KV inserted back. generateOptions.input_ids must be [1, n] of ids in [0, 2^32); the
 * cache must have layout layoutOf(model.config) (a cache of another model's layout is a RangeError; a model with state
 * restores only where a checkpoint was taken: see checkpointEvery). Resolves to generate's result with
 * return_dict_in_generate ({ sequences, past_key_values, ... }) plus `reused` and `prefilled`;
 * `sequences` typed as input_ids is (generate makes it with the same transformers.js).
 */
export function cachedGenerate<R extends object, T extends TensorLike = TensorLike>(
  model: { generate(options: object): Promise<R>; config?: object },
  cache: Cache,
  generateOptions: { input_ids: T } & Record<string, unknown>,
  opts?: CachedGenerateOptions<T>,
): Promise<R & { sequences: T; reused: number; prefilled: number }>;
