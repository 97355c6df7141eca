// transformers.js for the browser benches: the package's own build from
// node_modules, set to load models only from /build/models/ (no network, no
// browser cache) and to find onnxruntime-web's wasm beside it.
export async function localTransformers() {
  const tf = await import('/node_modules/@huggingface/transformers/dist/transformers.min.js');
  tf.env.allowRemoteModels = false;
  tf.env.allowLocalModels = true;
  tf.env.localModelPath = '/build/models/';
  tf.env.useBrowserCache = false;
  tf.env.backends.onnx.wasm.wasmPaths = '/node_modules/onnxruntime-web/dist/';
  return tf;
}
