// onnxruntime's Tensor goes into rlxkv/transformers as it is: a session's
// present.N.* outputs into kvFromTensors, its class into tensorsFromHit.
import { Tensor, type InferenceSession } from 'onnxruntime-common';
import init from 'rlxkv';
import { kvFromTensors, tensorsFromHit } from 'rlxkv/transformers';

declare const outputs: InferenceSession.ReturnType;

const rlx = await init();
const cache = rlx.createCache({ capBytes: 1 << 20, layout: { order: 'head-major', heads: 2, headDim: 4 } });
cache.insert([1, 2], await kvFromTensors(outputs, { prefix: 'present' }));
const hit = cache.lookup([1, 2, 3], { partial: true });
if (hit && cache.layout) {
  const feeds: Record<string, Tensor> = tensorsFromHit(hit, cache.layout, Tensor);
  await kvFromTensors(feeds);
}
