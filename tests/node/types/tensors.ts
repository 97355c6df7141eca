// transformers.js's own types go into rlxkv/transformers as they are.
// readme-types.test.js compiles this file against 4.x and, with the import
// renamed to 'transformers-v3', against 3.8.
import * as transformers from '@huggingface/transformers';
import init from 'rlxkv';
import { layoutOf, kvDtypeOf, kvFromTensors, tensorsFromHit, cachedGenerate } from 'rlxkv/transformers';

declare const model: transformers.PreTrainedModel;
declare const tokenizer: transformers.PreTrainedTokenizer;

const rlx = await init();
const cache = await rlx.openCache({ capBytes: 1 << 20, layout: layoutOf(model.config) });
const dtype: 'float32' | 'float16' = kvDtypeOf(model);

// cachedGenerate: a Tensor as input_ids, the module for its DynamicCache; the
// result's sequences are that Tensor again, for the tokenizer to decode.
const input_ids = new transformers.Tensor('int64', new BigInt64Array([1n, 2n, 3n]), [1, 3]);
const out = await cachedGenerate(model, cache, { input_ids, max_new_tokens: 4, do_sample: false }, { transformers, storeDtype: 'f16' });
const text: string[] = tokenizer.batch_decode(out.sequences, { skip_special_tokens: true });
const counts: number = out.reused + out.prefilled;

// kvFromTensors: a record of Tensors; its result is a KV insert takes.
const k = new transformers.Tensor('float32', new Float32Array(8), [1, 2, 1, 4]);
const kv = await kvFromTensors({ 'past_key_values.0.key': k, 'past_key_values.0.value': k });
cache.insert([1], kv);

// tensorsFromHit: the Tensor class itself, and Tensors back.
const hit = cache.lookup([1, 2]);
if (hit && cache.layout) {
  const past: Record<string, transformers.Tensor> = tensorsFromHit(hit, cache.layout, transformers.Tensor, { dtype });
  await kvFromTensors(past);
}

export { text, counts };
