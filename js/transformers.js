// rlxkv/transformers: the prompt KV-cache of a transformers.js decoder
// (@huggingface/transformers 3.x and 4.x) kept in rlxkv, and the tensor
// conversions on their own for apps that drive ONNX Runtime sessions.
//
//   import * as transformers from '@huggingface/transformers';
//   import init from 'rlxkv';
//   import { layoutOf, cachedGenerate } from 'rlxkv/transformers';
//   const cache = await rlx.openCache({ capBytes, fingerprint, layout: layoutOf(model.config) });
//   const out = await cachedGenerate(model, cache, { input_ids, max_new_tokens: 64 }, { transformers });
//
// It imports nothing of transformers.js: two copies of it in one process
// break its instanceof checks, so it uses the app's classes (the Tensor of
// the app's input_ids; DynamicCache from the module the app passes).
//
// What transformers.js does not do, and this does: it never checks that a
// past_key_values belongs to the prompt (a wrong cache gives wrong tokens
// silently), and a cache covering the whole prompt fails inside the model.
// So the matching is rlxkv's longest-prefix lookup, and a restore always
// leaves at least one prompt token to compute.
import { widenF16, narrowF32 } from '../format/f16.js';
import { MAX_LAYERS } from '../format/blob.js';
import { toTokens } from './args.js';

const PAST = 'past_key_values';

/**
 * The rlxkv layout of a transformers.js model's KV, from its config (the
 * model's `config`, or config.json's object): head-major, with
 * num_key_value_heads heads of head_dim (or hidden_size / num_attention_heads).
 * Every field it reads must be a positive integer a layout can hold, or it
 * throws naming that field: a config is the app's data, and a bad one would
 * otherwise surface later as a `layout` error, or as a layout that fits no KV.
 */
export function layoutOf(config) {
  if (!config || typeof config !== 'object') throw new TypeError('layoutOf(config): config must be a model config object');
  const nested = config.text_config && !config.num_attention_heads;
  if (nested && typeof config.text_config !== 'object') {
    throw new TypeError(`layoutOf(config): text_config is ${show(config.text_config)}, not a config object`);
  }
  const c = nested ? config.text_config : config;
  const at = nested ? 'text_config.' : '';
  const field = (name) => configInt(c[name], `${at}${name}`);
  const attention = field('num_attention_heads');
  const kvHeads = field('num_key_value_heads');
  const [heads, headsName] = kvHeads !== undefined ? [kvHeads, 'num_key_value_heads'] : [attention, 'num_attention_heads'];
  if (heads === undefined) throw new RangeError(`layoutOf(config): ${at}num_key_value_heads (or num_attention_heads) is undefined, not a positive integer`);
  const [headDim, dimName] = headDimOf(field('head_dim'), field('hidden_size'), attention, at);
  const layers = field('num_hidden_layers') ?? 0;
  // The limits of a layout (js/args.js toLayout, rlxkv_cache_set_layout):
  // heads, the head size and heads × head size each fit a u32.
  if (heads > U32_MAX) throw new RangeError(`layoutOf(config): ${at}${headsName} is ${heads}, more than a layout's ${U32_MAX} heads`);
  if (headDim > U32_MAX) throw new RangeError(`layoutOf(config): ${at}${dimName} is ${headDim}, more than a layout's ${U32_MAX} values a head`);
  if (heads * headDim > U32_MAX) {
    throw new RangeError(`layoutOf(config): ${at}${headsName} × ${dimName} is ${heads} × ${headDim}, more than a layout's ${U32_MAX} values a token`);
  }
  // A layout may name more layers, but no entry of more than MAX_LAYERS can
  // be stored or exported (LIMIT), so such a cache could only fail later.
  if (layers > MAX_LAYERS) throw new RangeError(`layoutOf(config): ${at}num_hidden_layers is ${layers}, more than the ${MAX_LAYERS} layers an rlxkv blob may have`);
  const hybrid = stateLayersOf(c, config.model_type ?? c.model_type, at);
  if (!hybrid) return { order: 'head-major', heads, headDim, layers };
  return { order: 'head-major', heads, headDim, layers: hybrid.attention.length, attention: hybrid.attention, state: hybrid.state };
}

/**
 * Of a model whose cache holds state (transformers.js's getCacheNames):
 * { attention: the layers with KV, state: [{ name, shape }] }, shapes
 * without the batch; null for a model of KV only.
 *   lfm2, lfm2_moe, lfm3 (and their _vl text_config): layer_types conv
 *     (past_conv.N [hidden_size, conv_L_cache]) or full/sliding_attention
 *   qwen3_next, qwen3_5(_moe)(_text): layer_types linear_attention
 *     (past_conv.N [2·nk·dk + nv·dv, linear_conv_kernel_dim] and
 *     past_recurrent.N [nv, dk, dv]) or full_attention
 *   granitemoehybrid: layer_types (or layers_block_type) mamba (Mamba-2:
 *     past_conv.N [nh·dh + 2·ng·ds, mamba_d_conv] and past_ssm.N [nh, dh, ds],
 *     of mamba_n_heads, mamba_d_head, mamba_n_groups, mamba_d_state) or attention
 *   falcon_h1: every layer both attention and a Mamba-2 mixer (its config
 *     lists no layer types), of the same fields
 * Other kinds with state throw, naming the model_type.
 */
function stateLayersOf(c, modelType, at) {
  const type = String(modelType ?? '').replace(/_vl$|_text$/, '');
  const kinds = LAYER_KINDS[type];
  if (!kinds) {
    if (STATE_TYPES.includes(type)) throw new RangeError(`layoutOf(config): model_type ${modelType} keeps state rlxkv does not yet know the shape of`);
    return null;
  }
  const field = (name) => {
    const v = configInt(c[name], `${at}${name}`);
    if (v === undefined) throw new RangeError(`layoutOf(config): ${at}${name} is undefined, not a positive integer`);
    return v;
  };
  const types = kinds.everyLayer ? Array(field('num_hidden_layers')).fill(kinds.everyLayer) : c.layer_types ?? c.layers_block_type;
  if (!Array.isArray(types) || !types.length) throw new TypeError(`layoutOf(config): ${at}layer_types must list each layer's kind for model_type ${modelType}`);
  const attention = [], state = [];
  types.forEach((kind, i) => {
    const attends = kind === 'full_attention' || (kind === 'sliding_attention' && kinds.sliding) || kinds.attention?.includes(kind);
    if (attends) attention.push(i);
    if (Object.hasOwn(kinds, kind) && typeof kinds[kind] === 'function') state.push(...kinds[kind](i, field));
    else if (!attends) throw new RangeError(`layoutOf(config): ${at}layer_types[${i}] is ${show(kind)}, not a layer kind of ${modelType}`);
  });
  if (!state.length) return null;
  return { attention, state };
}

/** The state tensors of each layer kind, by model_type (the names transformers.js gives them). */
const LAYER_KINDS = {
  lfm2: { sliding: true, conv: (i, f) => [{ name: `past_conv.${i}`, shape: [f('hidden_size'), f('conv_L_cache')] }] },
  qwen3_next: {
    linear_attention: (i, f) => {
      const nk = f('linear_num_key_heads'), dk = f('linear_key_head_dim'), nv = f('linear_num_value_heads'), dv = f('linear_value_head_dim');
      return [
        { name: `past_conv.${i}`, shape: [2 * nk * dk + nv * dv, f('linear_conv_kernel_dim')] },
        { name: `past_recurrent.${i}`, shape: [nv, dk, dv] },
      ];
    },
  },
};
LAYER_KINDS.lfm2_moe = LAYER_KINDS.lfm3 = LAYER_KINDS.lfm2;
LAYER_KINDS.qwen3_5 = LAYER_KINDS.qwen3_5_moe = LAYER_KINDS.qwen3_next;
/**
 * A Mamba-2 mixer's state, as HF's HybridMambaAttentionDynamicCache and the
 * onnx-community exports hold it: the conv's last mamba_d_conv inputs over
 * x, B and C (nh·dh = mamba_expand·hidden_size, or Falcon-H1's mamba_d_ssm:
 * HF checks that they agree), and the SSM state of each head.
 */
function mamba2(i, f) {
  const heads = f('mamba_n_heads'), headDim = f('mamba_d_head'), size = f('mamba_d_state');
  return [
    { name: `past_conv.${i}`, shape: [heads * headDim + 2 * f('mamba_n_groups') * size, f('mamba_d_conv')] },
    { name: `past_ssm.${i}`, shape: [heads, headDim, size] },
  ];
}
LAYER_KINDS.granitemoehybrid = { attention: ['attention'], mamba: mamba2 };
LAYER_KINDS.falcon_h1 = { everyLayer: 'hybrid', attention: ['hybrid'], hybrid: mamba2 };
/** Kinds whose cache holds state of shapes not derived here yet. */
const STATE_TYPES = ['nemotron_h', 'olmo_hybrid', 'zaya', 'deepseek_v4'];

/** [head size, the config's name for it]: head_dim, or else hidden_size / num_attention_heads when that divides. */
function headDimOf(given, hidden, attention, at) {
  if (given !== undefined) return [given, 'head_dim'];
  const name = 'hidden_size / num_attention_heads';
  if (hidden === undefined || attention === undefined) {
    throw new RangeError(`layoutOf(config): ${at}head_dim (or ${name}) is undefined, not a positive integer`);
  }
  if (hidden % attention !== 0) throw new RangeError(`layoutOf(config): ${at}${name} is ${hidden} / ${attention}, not an integer; the config needs a head_dim`);
  return [hidden / attention, name];
}

const U32_MAX = 0xffffffff;

/** A config field as a positive safe integer, or undefined when absent (null too, as config.json writes it). */
function configInt(v, name) {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number') throw new TypeError(`layoutOf(config): ${name} is ${show(v)}, not a positive integer`);
  if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`layoutOf(config): ${name} is ${v}, not a positive integer`);
  return v;
}

/** A value as an error message shows it: a string quoted, so "16" is not read as 16. */
function show(v) {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'object') return Array.isArray(v) ? 'an array' : 'an object';
  return String(v);
}

/**
 * The KV dtype a loaded model's session takes ('float32' or 'float16'):
 * 4.x reads it from the graph's inputs, 3.x from its session config.
 */
export function kvDtypeOf(model) {
  const session = sessionOf(model);
  const meta = session?.inputMetadata;
  if (Array.isArray(meta)) {
    const past = meta.find((m) => typeof m?.name === 'string' && m.name.startsWith(`${PAST}.`));
    if (past?.type === 'float16' || past?.type === 'float32') return past.type;
  }
  return session?.config?.kv_cache_dtype === 'float16' ? 'float16' : 'float32';
}

/** The session that takes a model's cache: its decoder's. */
const sessionOf = (model) => model?.sessions?.decoder_model_merged ?? model?.sessions?.model;

/**
 * The K and V of a set of tensors named `${prefix}.N.key` / `.value`
 * (past_key_values from generate, or present.N.* outputs of a session):
 * { k, v, tokens, dtype }, blocks in the tensors' own layout
 * ([1, heads, tokens, headDim] → head-major) and type (Float32Array, or
 * f16 as Uint16Array / Float16Array). GPU-resident tensors are downloaded,
 * and their GPU buffers freed. The arrays may be the tensors' own data:
 * insert copies them.
 *
 * With opts.layout of a model with state (layoutOf's attention and state):
 * the KV of exactly the layout's attention layers, and `state` (one block
 * per layout.state tensor, of dims [1, ...shape]) and `stateDtype`.
 */
export async function kvFromTensors(tensors, { prefix = PAST, layout } = {}) {
  if (!tensors || typeof tensors !== 'object') throw new TypeError('kvFromTensors: tensors must be an object of named tensors');
  const listed = layout?.attention;
  const layers = listed ? listedLayers(tensors, prefix, listed) : layerTensors(tensors, prefix);
  let tokens = -1, dtype = null;
  layers.forEach(({ key, value }, j) => {
    const l = listed ? listed[j] : j;
    for (const [t, name] of [[key, 'key'], [value, 'value']]) {
      const dims = t.dims;
      if (!isKvDims(dims)) {
        throw new RangeError(`kvFromTensors: ${prefix}.${l}.${name} has dims ${JSON.stringify(dims)}; expected [1, heads, tokens, headDim], each a non-negative integer`);
      }
      if (t.type !== 'float32' && t.type !== 'float16') throw new TypeError(`kvFromTensors: ${prefix}.${l}.${name} is ${t.type}; only float32 and float16 KV are kept`);
      if (tokens >= 0 && dims[2] !== tokens) throw new RangeError(`kvFromTensors: ${prefix}.${l}.${name} covers ${dims[2]} tokens, layer ${listed ? listed[0] : 0} ${tokens}`);
      if (dtype && t.type !== dtype) throw new TypeError(`kvFromTensors: ${prefix}.${l}.${name} is ${t.type}, layer ${listed ? listed[0] : 0} ${dtype}`);
      tokens = dims[2];
      dtype = t.type;
    }
  });
  const k = [], v = [];
  for (const { key, value } of layers) {
    k.push(await tensorData(key));
    v.push(await tensorData(value));
  }
  if (!layout?.state) return { k, v, tokens, dtype };
  const state = [];
  let stateDtype = null;
  for (const { name: past, shape } of layout.state) {
    const name = stateName(past, prefix);
    const t = tensors[name];
    if (!t) throw new RangeError(`kvFromTensors: no ${name} tensor, which layout.state lists`);
    if (!Array.isArray(t.dims) || t.dims.length !== shape.length + 1 || t.dims[0] !== 1 || shape.some((d, i) => t.dims[i + 1] !== d)) {
      throw new RangeError(`kvFromTensors: ${name} has dims ${JSON.stringify(t.dims)}; the layout's state is [1, ${shape.join(', ')}]`);
    }
    if (t.type !== 'float32' && t.type !== 'float16') throw new TypeError(`kvFromTensors: ${name} is ${t.type}; only float32 and float16 state is kept`);
    if (stateDtype && t.type !== stateDtype) throw new TypeError(`kvFromTensors: ${name} is ${t.type}, ${layout.state[0].name} ${stateDtype}`);
    stateDtype = t.type;
    state.push(await tensorData(t));
  }
  return { k, v, tokens, dtype, state, stateDtype };
}

/** A state tensor's name under `prefix`: past_conv.N as generate returns it, present_conv.N among a session's outputs. */
const stateName = (past, prefix) => (prefix === 'present' ? past.replace(/^past_/, 'present_') : past);

/**
 * The { key, value } tensors of the layers `listed` (a layout's attention
 * layers): each must be there, and no other layer's KV (a model of
 * another layout).
 */
function listedLayers(tensors, prefix, listed) {
  const wanted = new Set(listed);
  for (const name of Object.keys(tensors)) {
    const m = name.startsWith(`${prefix}.`) && /^(\d+)\.(key|value)$/.exec(name.slice(prefix.length + 1));
    if (m && !wanted.has(Number(m[1]))) throw new RangeError(`kvFromTensors: ${name} is not the KV of one of the layout's attention layers (${listed.join(', ')})`);
  }
  return listed.map((l) => {
    const key = tensors[`${prefix}.${l}.key`], value = tensors[`${prefix}.${l}.value`];
    if (!key || !value) throw new RangeError(`kvFromTensors: no ${prefix}.${l}.${key ? 'value' : 'key'} tensor, though layout.attention lists layer ${l}`);
    return { key, value };
  });
}

/** [1, heads, tokens, headDim] of sizes: a -1 (ONNX's unknown size) or 2.5 is no count of tokens. */
const isKvDims = (dims) => Array.isArray(dims) && dims.length === 4 && dims[0] === 1 &&
  [1, 2, 3].every((i) => Number.isSafeInteger(dims[i]) && dims[i] >= 0);

/**
 * The { key, value } tensors of layers 0, 1, ... of `${prefix}.N.*`. Every
 * tensor under the prefix must be one of them: a missing layer or a name of
 * another form (an encoder's KV, `.01.key`) would leave the entry without
 * layers the model needs, so it throws instead of stopping at the gap.
 */
function layerTensors(tensors, prefix) {
  const layers = [];
  const others = [];
  for (const name of Object.keys(tensors)) {
    if (!name.startsWith(`${prefix}.`)) continue;
    const m = /^(0|[1-9]\d*)\.(key|value)$/.exec(name.slice(prefix.length + 1));
    if (!m || Number(m[1]) >= MAX_LAYERS) { others.push(name); continue; }
    (layers[Number(m[1])] ??= {})[m[2]] = tensors[name];
  }
  if (others.length) {
    const more = others.length > 1 ? ` (and ${others.length - 1} more)` : '';
    throw new RangeError(`kvFromTensors: ${others[0]}${more} is not a layer's key or value (${prefix}.N.key / .value, N < ${MAX_LAYERS})`);
  }
  if (!layers.length) throw new RangeError(`kvFromTensors: no ${prefix}.0.key tensor`);
  for (let l = 0; l < layers.length; l++) {
    const layer = layers[l];
    if (!layer) {
      const next = layers.findIndex((x, i) => i > l && x);
      throw new RangeError(`kvFromTensors: layer ${l} is missing (no ${prefix}.${l}.key or .value), but ${prefix}.${next} follows: a gap in the layers`);
    }
    if (!layer.key || !layer.value) throw new RangeError(`kvFromTensors: ${prefix}.${l} has a ${layer.key ? 'key' : 'value'} but no ${layer.key ? 'value' : 'key'}`);
  }
  return layers;
}

/** A tensor's values on the CPU: its data, or a download from the GPU. */
async function tensorData(t) {
  if (t.location && t.location !== 'cpu' && t.location !== 'cpu-pinned') {
    const ort = t.ort_tensor ?? t;
    if (typeof ort.getData !== 'function') throw new TypeError(`a tensor on '${t.location}' has no getData() to download it`);
    // true: its GPU buffer is released once downloaded. The tensor holds the
    // data on the CPU from then on (location 'cpu'), so DynamicCache.dispose()
    // passes it by: kept, the buffer would never be freed.
    return ort.getData(true);
  }
  return t.data;
}

/**
 * Tensors named `${prefix}.N.key` / `.value` ([1, heads, matched, headDim])
 * holding a hit's KV, made with the app's Tensor class (transformers.js's or
 * onnxruntime's: new Tensor(type, data, dims)), as `dtype` ('float32' or
 * 'float16'; default: the hit's). An f16 hit for a float32 model is widened
 * exactly, an f32 one for a float16 model rounded to nearest.
 *
 * With a layout of a model with state: N runs over layout.attention, and
 * the hit's state comes as its layout.state tensors ([1, ...shape], named
 * past_conv.N, or present_conv.N with prefix 'present'), as `stateDtype`
 * (default: the hit's).
 */
export function tensorsFromHit(hit, layout, Tensor, { dtype, stateDtype, prefix = PAST } = {}) {
  if (!hit || !Array.isArray(hit.k)) throw new TypeError('tensorsFromHit: hit must be a lookup hit');
  if (!layout || layout.order !== 'head-major') throw new RangeError("tensorsFromHit: the cache's layout must be head-major (see layoutOf)");
  if (typeof Tensor !== 'function') throw new TypeError('tensorsFromHit: Tensor must be the tensor class of your runtime');
  const want = dtype ?? (hit.dtype === 'f16' ? 'float16' : 'float32');
  const dims = [1, layout.heads, hit.matched, layout.headDim];
  const out = {};
  hit.k.forEach((k, j) => {
    const l = layout.attention ? layout.attention[j] : j;
    out[`${prefix}.${l}.key`] = new Tensor(want, asDtype(k, hit.dtype, want), dims);
    out[`${prefix}.${l}.value`] = new Tensor(want, asDtype(hit.v[j], hit.dtype, want), dims.slice());
  });
  if (!layout.state) return out;
  if (!Array.isArray(hit.state)) throw new TypeError('tensorsFromHit: the layout has state, but the hit has none (a hit of a cache opened with this layout has)');
  const stateWant = stateDtype ?? (hit.stateDtype === 'f16' ? 'float16' : 'float32');
  layout.state.forEach(({ name, shape }, i) => {
    out[stateName(name, prefix)] = new Tensor(stateWant, asDtype(hit.state[i], hit.stateDtype, stateWant), [1, ...shape]);
  });
  return out;
}

/**
 * tensorsFromHit's tensors written straight into new GPU buffers of
 * `device` (the GPUDevice the model's session runs on: transformers.js's
 * is `await env.backends.onnx.webgpu.device`), as onnxruntime-web's
 * 'gpu-buffer' tensors: the hit goes from the cache's memory to the GPU
 * once, with no CPU copy where it is a view of the cache's dtype. Each
 * buffer is destroyed when its tensor is disposed (transformers.js
 * disposes a past its first run replaced).
 */
export function gpuTensorsFromHit(hit, layout, Tensor, device, opts) {
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const out = {};
  for (const [name, t] of Object.entries(tensorsFromHit(hit, layout, Tensor, opts))) {
    // writeBuffer takes whole 4-byte words: an f16 tensor of an odd length is padded (a copy).
    const bytes = t.data.byteLength % 4 ? padded(t.data) : new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength);
    const buffer = device.createBuffer({ size: Math.ceil(bytes.byteLength / 16) * 16, usage });
    device.queue.writeBuffer(buffer, 0, bytes.buffer, bytes.byteOffset, bytes.byteLength);
    // The app's Tensor class from onnxruntime's description (transformers.js
    // bundles two copies of onnxruntime-common: Tensor.fromGpuBuffer of the
    // one under input_ids makes a tensor transformers.js wraps wrongly).
    out[name] = new Tensor({ location: 'gpu-buffer', type: t.type, gpuBuffer: buffer, dims: t.dims.slice(), dispose: () => buffer.destroy() });
  }
  return out;
}

/** The bytes of a typed array, padded with zeros to whole 4-byte words. */
function padded(a) {
  const out = new Uint8Array(Math.ceil(a.byteLength / 4) * 4);
  out.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
  return out;
}

function asDtype(block, have, want) {
  if (want === 'float32') return have === 'f16' ? widenF16(block) : block;
  if (want !== 'float16') throw new RangeError(`dtype must be 'float32' or 'float16', got ${want}`);
  return have === 'f16' ? block : narrowF32(block);
}


/**
 * model.generate with the prompt's longest cached prefix restored from
 * rlxkv, and what the run computed inserted back.
 *
 * generateOptions are generate()'s, with input_ids a [1, n] tensor (batch 1)
 * of the whole prompt's ids, each in [0, 2^32) (else a RangeError naming the
 * first that is not); a past_key_values of your own is refused. The lookup
 * may reuse part of a longer entry (an edited prompt reuses exactly its
 * unchanged prefix; a model with state, up to its last checkpoint) and
 * never covers the whole prompt. The restore is a new DynamicCache (4.x;
 * pass opts.transformers, your module, for its class) or a plain object
 * (3.x) of tensors of the model's KV dtype: CPU tensors, or on WebGPU GPU
 * buffers of the model's device (opts.gpuDevice). generate runs
 * with return_dict_in_generate; the KV it returns (sequences minus the last
 * token) is inserted: the cache copies only the run's new tokens' KV and
 * keeps the entry it extended, sharing its KV (pages; opts.keepExtended,
 * which kept it when caches held whole entries, has nothing left to do).
 * Resolves to what generate resolves to,
 * plus `reused` (prompt tokens whose KV came from the cache) and
 * `prefilled` (the rest).
 *
 * opts.storeDtype: the dtype the KV is cached in: 'auto' (default: the
 * model's own), 'f32' (float16 KV widened, e.g. for tools that read only
 * RLXKV001) or 'f16'. (0.1's name `store` is kept, deprecated.)
 * opts.checkpointEvery (a model with state; default 256) and
 * opts.gpuDevice: see js/transformers.d.ts.
 */
export async function cachedGenerate(model, cache, generateOptions, opts = {}) {
  if (!model || typeof model.generate !== 'function') throw new TypeError('cachedGenerate: model must be a transformers.js model (with generate)');
  if (!cache || typeof cache.match !== 'function') throw new TypeError('cachedGenerate: cache must be an rlxkv cache');
  if (!generateOptions || typeof generateOptions !== 'object') throw new TypeError('cachedGenerate: generateOptions must be an object');
  const { input_ids: ids } = generateOptions;
  if (!ids || !Array.isArray(ids.dims) || !ids.data) throw new TypeError('cachedGenerate: generateOptions.input_ids must be a tensor');
  if (ids.dims.length !== 2 || ids.dims[0] !== 1) throw new RangeError(`cachedGenerate: input_ids must be [1, n] (one sequence), got ${JSON.stringify(ids.dims)}`);
  // Token ids arrive as int64 (BigInt64Array): a -1 would wrap to 4294967295
  // and be cached under ids no tokenizer gives.
  const checked = toTokens(ids.data, 'cachedGenerate: generateOptions.input_ids');
  if (generateOptions.past_key_values) throw new TypeError('cachedGenerate: past_key_values comes from the cache; do not pass one');
  const layout = cache.layout;
  if (!layout || layout.order !== 'head-major') throw new RangeError("cachedGenerate: open the cache with layout: layoutOf(model.config)");
  const store = opts.storeDtype ?? opts.store ?? 'auto';
  if (!['auto', 'f32', 'f16'].includes(store)) throw new RangeError(`cachedGenerate: opts.storeDtype must be 'auto', 'f32' or 'f16', got ${store}`);
  // At the first call, cold or warm: not only once a hit needs the class.
  if (!opts.transformers?.DynamicCache && isV4(opts.transformers, model)) {
    throw new TypeError('cachedGenerate: transformers.js 4.x takes a DynamicCache; pass { transformers } (your imported module) as the 4th argument');
  }

  const stateful = !!layout.state;
  checkModelLayout(model, layout);
  const every = opts.checkpointEvery ?? CHECKPOINT_EVERY;
  if (!Number.isSafeInteger(every) || every < 1) throw new RangeError(`cachedGenerate: opts.checkpointEvery must be a positive integer, got ${String(opts.checkpointEvery)}`);
  if (opts.gpuDevice !== undefined && opts.gpuDevice !== false && typeof opts.gpuDevice?.createBuffer !== 'function') {
    throw new TypeError('cachedGenerate: opts.gpuDevice must be a GPUDevice, or false');
  }

  const Tensor = ids.constructor;
  // A copy of the app's array: match reads it again after each await.
  const prompt = checked === ids.data ? checked.slice() : checked;
  const n = prompt.length;
  const dtypes = { dtype: kvDtypeOf(model), stateDtype: stateful ? stateDtypeOf(model, layout) : undefined };
  const DynamicCache = opts.transformers?.DynamicCache;
  // A model on WebGPU gets its restore in GPU buffers of its own device
  // (onnxruntime-web runs every WebGPU session on one: transformers.js's).
  // Asked before the match: nothing is awaited between it and the tensors.
  const gpuDevice = opts.gpuDevice === false ? null
    : opts.gpuDevice ?? (sessionOf(model)?.config?.device === 'webgpu' ? await opts.transformers?.env?.backends?.onnx?.webgpu?.device : null);
  // Memory and storage alike: a stored-only hit reads its one blob. Views
  // of the cache's memory only for the GPU, which takes them at once: CPU
  // tensors are read when the model runs, after awaits in which another
  // call on this cache may free and reuse that memory.
  const hit = n > 1 ? await cache.match(prompt, { partial: true, maxMatched: n - 1, view: !!gpuDevice }) : null;
  const reused = hit ? hit.matched : 0;
  let past = null, restored = null;
  if (hit) {
    restored = gpuDevice ? gpuTensorsFromHit(hit, layout, Tensor, gpuDevice, dtypes) : tensorsFromHit(hit, layout, Tensor, dtypes);
    past = DynamicCache ? new DynamicCache(restored) : restored;
  }
  try {
    return await generateOver(model, cache, generateOptions, { n, reused, past, layout, store, every, stateful, ids, DynamicCache });
  } catch (err) {
    // GPU buffers of a restore the model never reached (transformers.js
    // disposes a past once its first run replaced it).
    if (gpuDevice && restored) {
      for (const t of Object.values(restored)) {
        try {
          t.dispose();
        } catch { /* disposed already */ }
      }
    }
    throw err;
  }
}

/** cachedGenerate past its restore: the prompt's runs, generate, the inserts. */
async function generateOver(model, cache, generateOptions, { n, reused, past, layout, store, every, stateful, ids, DynamicCache }) {
  // A model with state restores only where its state was taken: so the
  // prompt is prefilled in runs ending at each multiple of checkpointEvery
  // past the hit, and the state there kept, so that a prompt edited after
  // it reuses all before it. A model of rope indices (Qwen3.5) runs to the
  // prompt's last token too: see promptRun.
  const ropeIndexed = typeof model.get_rope_index === 'function';
  for (const end of runEnds(reused, n, stateful ? every : Infinity, ropeIndexed)) {
    const step = ropeIndexed ? await promptRun(model, ids, end, past, DynamicCache)
      : await model.generate({ ...firstIds(ids, end), past_key_values: past, max_new_tokens: 1, do_sample: false, return_dict_in_generate: true });
    past = await keep(cache, step, layout, store) ?? past;
  }
  const run = { ...generateOptions, return_dict_in_generate: true };
  if (past) Object.assign(run, firstIds(ids, n), { past_key_values: past });
  const out = await model.generate(run);
  // transformers.js 4.3 gives a rope-indexed model's generated tokens
  // positions 2 × the prompt's length too far on, so the reply's KV and
  // state are not what the next turn's prefill computes: kept only to the prompt's end.
  if (!ropeIndexed) await keep(cache, out, layout, store);
  return Object.assign(out, { reused, prefilled: n - reused });
}

/** Where the prompt's runs end: each multiple of `every` in (reused, n), and n - 1 for a rope-indexed model. */
/** The whole sequence of the first `end` ids, with a full-length mask: generate slices off what a past covers. */
function firstIds(ids, end) {
  const Tensor = ids.constructor;
  return {
    input_ids: end === ids.dims[1] ? ids : new Tensor(ids.type, ids.data.slice(0, end), [1, end]),
    attention_mask: new Tensor('int64', new BigInt64Array(end).fill(1n), [1, end]),
  };
}

function runEnds(reused, n, every, ropeIndexed) {
  const ends = [];
  for (let end = (Math.floor(reused / every) + 1) * every; end < n; end += every) ends.push(end);
  if (ropeIndexed && n - 1 > Math.max(reused, ends.at(-1) ?? 0)) ends.push(n - 1);
  return ends;
}

/**
 * The first `end` prompt tokens of a rope-indexed model (Qwen3.5) run past
 * `past` by model.forward, as generate's result: { sequences, past_key_values }.
 * Its generate (transformers.js 4.3) throws for more than one token past a
 * past (it runs a vision encoder a text model lacks), so prompts go through
 * forward, with the positions get_rope_index gives the whole prefix.
 */
async function promptRun(model, ids, end, past, DynamicCache) {
  const Tensor = ids.constructor;
  const from = past ? pastLength(past) : 0;
  const { input_ids: prefix, attention_mask: mask } = firstIds(ids, end);
  const [positions] = model.get_rope_index(prefix, null, null, mask);
  const outputs = await model.forward({
    input_ids: new Tensor(ids.type, ids.data.slice(from, end), [1, end - from]), attention_mask: mask,
    position_ids: positions.slice(null, null, [from, end]), ...(past ? { past_key_values: past } : {}),
  });
  // The present* outputs under the names generate gives them back.
  const named = {};
  for (const [name, t] of Object.entries(outputs)) {
    if (name.startsWith('present')) named[name.replace(/^present_/, 'past_').replace(/^present\./, `${PAST}.`)] = t;
  }
  return { sequences: { data: ids.data.slice(0, end) }, past_key_values: DynamicCache ? new DynamicCache(named) : named };
}

/** Tokens a past covers: its first KV tensor's (as transformers.js reads it). */
function pastLength(past) {
  if (typeof past.get_seq_length === 'function') return past.get_seq_length();
  const first = Object.keys(past).find((name) => name.startsWith(`${PAST}.`));
  return first ? past[first].dims[2] : 0;
}

/** How often a model with state keeps a checkpoint of it in a prompt (tokens): opts.checkpointEvery's default. */
const CHECKPOINT_EVERY = 256;

/**
 * Inserts the KV (and state) a generate returned, for its sequences minus
 * the last token (what its past covers): the cache copies only the tokens
 * past what it holds, and the entry extended stays, sharing its KV
 * (pages). Its past_key_values, or null when it returned none.
 */
async function keep(cache, out, layout, store) {
  const pkv = out?.past_key_values;
  if (!pkv) return null;
  const kv = await kvFromTensors(pkv, { layout: layout.state ? layout : undefined });
  const tokens = toTokens(out.sequences.data.slice(0, kv.tokens), "cachedGenerate: generate's sequences");
  if (tokens.length !== kv.tokens || !tokens.length) return pkv;
  const as = (blocks, type) => (store === 'f32' && type === 'float16' ? blocks.map((b) => widenF16(b))
    : store === 'f16' && type === 'float32' ? blocks.map((b) => narrowF32(b)) : blocks);
  const blocks = { k: as(kv.k, kv.dtype), v: as(kv.v, kv.dtype) };
  if (kv.state) blocks.state = as(kv.state, kv.stateDtype);
  cache.insert(tokens, blocks);
  return pkv;
}

/**
 * Refuses a cache whose layout is not the model's (layoutOf(model.config)):
 * a model with state and a cache without (or of other state tensors,
 * shapes or attention layers) would fail late, or restore nothing.
 */
function checkModelLayout(model, layout) {
  let own;
  try {
    own = model.config ? layoutOf(model.config) : null;
  } catch {
    own = null; // a config layoutOf cannot read: the cache's layout is the app's word
  }
  if (!own || (!own.state && !layout.state)) return;
  const key = (l) => JSON.stringify([l.heads, l.headDim, l.attention ?? null, (l.state ?? []).map((s) => [s.name, s.shape])]);
  if (key(own) !== key(layout)) {
    const what = own.state ? `${own.state.length} state tensors (${own.state[0].name}, ...) and KV in layers ${own.attention.join(', ')}` : 'KV only';
    throw new RangeError(`cachedGenerate: the cache's layout is not this model's: the model keeps ${what}; open the cache with layout: layoutOf(model.config)`);
  }
}

/** The dtype a model's state inputs take ('float32' or 'float16'): its graph's (4.x), else its KV's. */
function stateDtypeOf(model, layout) {
  const session = sessionOf(model);
  const meta = Array.isArray(session?.inputMetadata) ? session.inputMetadata.find((m) => m?.name === layout.state[0].name) : null;
  return meta?.type === 'float16' || meta?.type === 'float32' ? meta.type : kvDtypeOf(model);
}

/** Whether this model runs under transformers.js 4.x (whose generate takes only a DynamicCache). */
function isV4(transformers, model) {
  const version = transformers?.env?.version ?? model?.constructor?.version;
  if (typeof version === 'string') return Number(version.split('.')[0]) >= 4;
  // 4.x models keep their sessions' input metadata for cache shapes.
  const session = sessionOf(model);
  return Array.isArray(session?.inputMetadata);
}
