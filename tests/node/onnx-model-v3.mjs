// Child process of tests/node/onnx-model.test.js: runs the scenarios of
// onnx-model-run.js with transformers.js 3.x (the transformers-v3 alias) and
// prints their result as one JSON line. Argument: the models folder.
import * as T from 'transformers-v3';
import { createModel } from '../../demo/model.js';
import { MODEL_OPTIONS } from '../../demo/system-prompt.js';
import { PREFIX, PROMPT, scenarios } from './onnx-model-run.js';

const demo = createModel(MODEL_OPTIONS);
const demoKv = demo.prefill(demo.encode(PROMPT).subarray(0, PREFIX)).kv;
const result = await scenarios(T, process.argv[2], { demoKv, shape: demo.config });
process.stdout.write(`${JSON.stringify(result)}\n`);
