// The in-page half of bench/bench_webgpu.mjs: the demo transformer's ONNX
// export (f32 KV) on transformers.js 4.x with device 'webgpu', the demo's
// ~1,100-token prompt (its system prompt and one user turn), and what the
// KV's trips between the GPU and rlxkv cost:
//  - the download after generate: kvFromTensors of the present tensors
//    transformers.js keeps on the GPU (preferredOutputLocation 'gpu-buffer');
//  - the upload on a restore, from the hit to tensors the session can use,
//    as a share of a warm start (a cachedGenerate whose hit leaves one prompt
//    token, max_new_tokens 1: the time to the first token). The model's
//    forward varies by far more than an upload costs on this machine, so the
//    upload is timed on its own: on ONNX Runtime's path (CPU tensors, which
//    run() copies into its heap and uploads) as the run of a one-op graph (Neg
//    of each of the 8 KV tensors, same shapes, same session options, on the
//    same device) with CPU inputs minus the same run with the inputs already
//    on the GPU; on the direct path as the writes of the hit's blocks into
//    new GPU buffers (queue.writeBuffer, or mappedAtCreation) until the queue
//    has done them. Then the whole warm start both ways (lookup, restore,
//    generate: tensorsFromHit, and gpuTensorsFromHit, which writes the hit
//    straight into GPU buffers as cachedGenerate does on WebGPU), for what the
//    difference comes to beside the forward's own spread.
// Figures are medians over the repetitions; variants alternate order.
import init from '/wasm/dist/rlxkv.browser.js';
import * as adapter from '/js/transformers.js';
import { DEFAULT_SYSTEM_PROMPT, userTurn } from '../demo/system-prompt.js';
import { localTransformers } from './transformers_local.js';
import { median } from './stats.js';

const now = () => performance.now();
const settle = () => globalThis.gc?.();

export async function run({ reps = 7, microReps = 25, id = 'rlxkv-demo' } = {}) {
  const tf = await localTransformers();
  const rlx = await init();
  const tokenizer = await tf.AutoTokenizer.from_pretrained(id);
  const model = await tf.AutoModelForCausalLM.from_pretrained(id, { dtype: 'fp32', device: 'webgpu' });
  const device = await tf.env.backends.onnx.webgpu.device;
  const layout = adapter.layoutOf(model.config);
  const prompt = Array.from(tokenizer(DEFAULT_SYSTEM_PROMPT + userTurn('What can you help me with today?')).input_ids.data, Number);
  const n = prompt.length;
  const ids = (tokens) => new tf.Tensor('int64', BigInt64Array.from(tokens, BigInt), [1, tokens.length]);
  const lookupOpts = { partial: true, maxMatched: n - 1 };

  // Marks of one cachedGenerate (as bench/transformers_workload.js takes them).
  const marks = {};
  const cache = rlx.createCache({ capBytes: 256 << 20, layout });
  const timedCache = new Proxy(cache, {
    get(t, p) {
      if (p === 'match') return async (...a) => { marks.lookupStart = now(); const hit = await t.match(...a); marks.lookupEnd = now(); return hit; };
      if (p === 'insert') return (...a) => { marks.insertStart = now(); return t.insert(...a); };
      const v = Reflect.get(t, p);
      return typeof v === 'function' ? v.bind(t) : v;
    },
  });
  const timedModel = new Proxy(model, {
    get(t, p) {
      if (p === 'generate') {
        return async (a) => {
          marks.generateStart = now();
          const out = await t.generate(a);
          marks.generateEnd = now();
          marks.location = out.past_key_values?.['past_key_values.0.key']?.location;
          return out;
        };
      }
      const v = Reflect.get(t, p);
      return typeof v === 'function' ? v.bind(t) : v;
    },
  });
  async function turn() {
    for (const k of Object.keys(marks)) delete marks[k];
    settle();
    const t0 = now();
    const out = await adapter.cachedGenerate(timedModel, timedCache, { input_ids: ids(prompt), max_new_tokens: 1, do_sample: false }, { transformers: tf });
    const t1 = now();
    await out.past_key_values.dispose();
    return {
      reused: out.reused,
      location: marks.location,
      lookup: marks.lookupEnd - marks.lookupStart,
      convert: marks.generateStart - marks.lookupEnd,
      forward: marks.generateEnd - marks.generateStart,
      ttft: marks.generateEnd - t0, // max_new_tokens 1: generate ends with the first token
      download: marks.insertStart - marks.generateEnd, // kvFromTensors (and the sequences' check)
      insert: t1 - marks.insertStart,
    };
  }

  // ORT's first runs (shaders): a short prompt; then the one cold run.
  await (await model.generate({ input_ids: ids(prompt.slice(0, 8)), max_new_tokens: 2, do_sample: false, return_dict_in_generate: true })).past_key_values.dispose();
  const cold = await turn();
  if (cold.reused !== 0) throw new Error('the cold run reused tokens');
  const entryBytes = cache.entries()[0].bytes;

  /** A warm start restored one way or the other: lookup, restore, generate (max_new_tokens 1). */
  async function warmStart(gpu) {
    settle();
    const t0 = now();
    const hit = await cache.match(prompt, lookupOpts);
    const t1 = now();
    const past = gpu ? adapter.gpuTensorsFromHit(hit, layout, tf.Tensor, device, { dtype: 'float32' }) : adapter.tensorsFromHit(hit, layout, tf.Tensor, { dtype: 'float32' });
    const mask = new tf.Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]);
    const t2 = now();
    const out = await model.generate({ input_ids: ids(prompt), attention_mask: mask, past_key_values: new tf.DynamicCache(past), max_new_tokens: 1, do_sample: false, return_dict_in_generate: true });
    const t3 = now();
    const location = out.past_key_values['past_key_values.0.key'].location;
    const token = Number(out.sequences.data[n]);
    await out.past_key_values.dispose();
    return { reused: hit.matched, lookup: t1 - t0, convert: t2 - t1, forward: t3 - t2, ttft: t3 - t0, location, token };
  }
  const user = [];
  const warm = { cpu: [], gpu: [] };
  for (let r = 0; r < reps; r++) {
    const t = await turn(); // as an app makes it
    if (t.reused !== n - 1) throw new Error(`a warm run reused ${t.reused} of ${n} tokens`);
    user.push(t);
    for (const v of r % 2 ? ['gpu', 'cpu'] : ['cpu', 'gpu']) warm[v].push(await warmStart(v === 'gpu'));
  }
  const tokens = new Set([...warm.cpu, ...warm.gpu].map((t) => t.token));
  if (tokens.size !== 1) throw new Error(`the warm starts gave different first tokens: ${[...tokens].join(', ')}`);

  // The upload on its own.
  const hit = await cache.match(prompt, lookupOpts);
  const dims = [1, layout.heads, hit.matched, layout.headDim];
  const blocks = hit.k.flatMap((k, l) => [k, hit.v[l]]);
  const bytes = blocks.reduce((s, b) => s + b.byteLength, 0);
  const names = blocks.map((_, i) => `x${i}`);
  const Session = model.sessions.model.constructor; // transformers.js's ONNX Runtime (one wasm instance, one device)
  const session = await Session.create(negGraph(names, layout), { executionProviders: ['webgpu'], preferredOutputLocation: 'gpu-buffer' });
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const gpuBuffers = (how) => blocks.map((b) => {
    const size = Math.ceil(b.byteLength / 16) * 16;
    const src = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    if (how === 'mapped') {
      const buffer = device.createBuffer({ size, usage, mappedAtCreation: true });
      new Uint8Array(buffer.getMappedRange(0, size)).set(src);
      buffer.unmap();
      return buffer;
    }
    const buffer = device.createBuffer({ size, usage });
    device.queue.writeBuffer(buffer, 0, src);
    return buffer;
  });
  const feeds = (make) => Object.fromEntries(names.map((name, i) => [name, make(i).ort_tensor]));
  const runOnce = async (f) => {
    const out = await session.run(f);
    for (const t of Object.values(out)) t.dispose();
    await device.queue.onSubmittedWorkDone();
  };
  const micro = { ortCpu: [], ortResident: [], writeBuffer: [], mapped: [] };
  const steps = {
    async ortCpu() {
      const f = feeds((i) => new tf.Tensor('float32', blocks[i], dims));
      settle();
      const t0 = now();
      await runOnce(f);
      return now() - t0;
    },
    async ortResident() {
      const buffers = gpuBuffers('write');
      await device.queue.onSubmittedWorkDone();
      const f = feeds((i) => new tf.Tensor({ location: 'gpu-buffer', type: 'float32', gpuBuffer: buffers[i], dims }));
      settle();
      const t0 = now();
      await runOnce(f);
      const ms = now() - t0;
      buffers.forEach((b) => b.destroy());
      return ms;
    },
    async writeBuffer() { return upload('write'); },
    async mapped() { return upload('mapped'); },
  };
  async function upload(how) {
    settle();
    const t0 = now();
    const buffers = gpuBuffers(how);
    await device.queue.onSubmittedWorkDone();
    const ms = now() - t0;
    buffers.forEach((b) => b.destroy());
    return ms;
  }
  for (const s of Object.keys(steps)) await steps[s](); // first runs
  const order = Object.keys(steps);
  for (let r = 0; r < microReps; r++) {
    for (let i = 0; i < order.length; i++) {
      const s = order[(i + r) % order.length];
      micro[s].push(await steps[s]());
    }
  }
  await session.release();

  const med = (list, key) => median(list.map((x) => x[key]));
  const warmTtft = med(user, 'ttft');
  const ortUpload = median(micro.ortCpu) - median(micro.ortResident);
  const info = device.adapterInfo ?? {};
  return {
    adapter: { vendor: info.vendor, architecture: info.architecture, shader_f16: device.features.has('shader-f16') },
    transformers: tf.env.version,
    model: id,
    prompt_tokens: n,
    restored_tokens: n - 1,
    kv_bytes_entry: entryBytes,
    kv_bytes_restored: bytes,
    reps,
    micro_reps: microReps,
    present_location: cold.location,
    cold_ttft_ms: cold.ttft,
    // The warm start as an app sees it (cachedGenerate, max_new_tokens 1).
    warm_ttft_ms: warmTtft,
    warm_ttft_min_ms: Math.min(...user.map((t) => t.ttft)),
    warm_ttft_max_ms: Math.max(...user.map((t) => t.ttft)),
    download: {
      // After each generate, before the insert: kvFromTensors of n KV tokens.
      ms: med(user, 'download'),
      mb_per_s: entryBytes / 1e3 / med(user, 'download'),
      cold_ms: cold.download,
      share_of_cold_turn: cold.download / (cold.ttft + cold.download + cold.insert),
      share_of_warm_turn: median(user.map((t) => t.download / (t.ttft + t.download + t.insert))),
    },
    upload: {
      ort_cpu_tensors_ms: ortUpload,
      // The same from each repetition's two runs, taken back to back.
      ort_cpu_tensors_pairwise_ms: median(micro.ortCpu.map((c, i) => c - micro.ortResident[i])),
      ort_run_cpu_inputs_ms: median(micro.ortCpu),
      ort_run_gpu_inputs_ms: median(micro.ortResident),
      write_buffer_ms: median(micro.writeBuffer),
      mapped_at_creation_ms: median(micro.mapped),
      ort_share_of_warm_ttft: ortUpload / warmTtft,
      write_buffer_share_of_warm_ttft: median(micro.writeBuffer) / warmTtft,
    },
    warm: {
      cpu_restore: summarize(warm.cpu),
      gpu_restore: summarize(warm.gpu),
      gpu_over_cpu_ttft: pairRatio(warm.gpu.map((t) => t.ttft), warm.cpu.map((t) => t.ttft)),
      location_after: { cpu_restore: warm.cpu[0].location, gpu_restore: warm.gpu[0].location },
    },
    raw: { cold, user, warm, micro },
  };
}

const pairRatio = (a, b) => median(a.map((x, i) => x / b[i]));
function summarize(list) {
  const med = (key) => median(list.map((x) => x[key]));
  const ttft = list.map((x) => x.ttft);
  return {
    ttft_ms: med('ttft'), lookup_ms: med('lookup'), convert_ms: med('convert'), forward_ms: med('forward'),
    ttft_min_ms: Math.min(...ttft), ttft_max_ms: Math.max(...ttft),
  };
}

/**
 * An ONNX model (IR 7, opset 14) of one Neg per input: inputs `names`, each
 * float [1, heads, S, headDim], outputs y0, y1, ... A graph that does little
 * besides taking its inputs onto the GPU.
 */
function negGraph(names, layout) {
  const dim = (d) => (typeof d === 'number' ? field(1, 0, d) : field(2, 2, d));
  const valueInfo = (name) => msg(field(1, 2, name), field(2, 2, msg(field(1, 2, msg(
    field(1, 0, 1), // FLOAT
    field(2, 2, msg(...[1, layout.heads, 'S', layout.headDim].map((d) => field(1, 2, msg(dim(d)))))),
  )))));
  const nodes = names.map((name, i) => field(1, 2, msg(field(1, 2, name), field(2, 2, `y${i}`), field(3, 2, `neg${i}`), field(4, 2, 'Neg'))));
  const graph = msg(...nodes, field(2, 2, 'neg'), ...names.map((name) => field(11, 2, valueInfo(name))),
    ...names.map((_, i) => field(12, 2, valueInfo(`y${i}`))));
  return msg(field(1, 0, 7), field(7, 2, graph), field(8, 2, msg(field(1, 2, ''), field(2, 0, 14))));
}
/** Protobuf wire format: a field (wire type 0: varint, 2: bytes, a string or a message). */
function field(num, wire, value) {
  const key = varint(num * 8 + wire);
  if (wire === 0) return concat(key, varint(value));
  const body = typeof value === 'string' ? new TextEncoder().encode(value) : value;
  return concat(key, varint(body.length), body);
}
const msg = (...parts) => concat(...parts);
function varint(v) {
  const out = [];
  while (v > 127) { out.push((v & 127) | 128); v = Math.floor(v / 128); }
  out.push(v);
  return Uint8Array.from(out);
}
function concat(...parts) {
  const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}
