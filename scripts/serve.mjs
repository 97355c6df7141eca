// A small static server for the demo and the browser tests: serves the repo
// root on 127.0.0.1 with the MIME types ES modules and wasm need, and a model
// folder of your own (MODEL_DIR) at /model-dir/ for the demo's
// transformers.js engine.
import { createServer } from 'node:http';
import { createReadStream, existsSync, statSync } from 'node:fs';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.rlxkv': 'application/octet-stream',
  '.onnx': 'application/octet-stream',
};

/** Where a MODEL_DIR folder is served. */
export const MODEL_DIR_PATH = '/model-dir/';

export const repoRoot = resolve(fileURLToPath(new URL('..', import.meta.url)));

/**
 * Starts serving `root` (and `modelDir`, if given, at MODEL_DIR_PATH);
 * resolves to { server, url }. Port 0 picks a free one.
 */
export function serve({ root = repoRoot, port = 0, host = '127.0.0.1', modelDir = null } = {}) {
  const models = modelDir ? resolve(modelDir) : null;
  const server = createServer((req, res) => {
    const asked = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    let path = asked.endsWith('/') ? `${asked}index.html` : asked;
    let base = root;
    if (models && (path + '/').startsWith(MODEL_DIR_PATH)) {
      base = models;
      path = path.slice(MODEL_DIR_PATH.length - 1);
    }
    const file = normalize(join(base, path));
    if (file !== base && !file.startsWith(base + sep)) {
      res.writeHead(403).end('forbidden');
      return;
    }
    let st;
    try {
      st = statSync(file);
    } catch {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    if (st.isDirectory()) {
      res.writeHead(302, { location: `${asked}/` }).end();
      return;
    }
    res.writeHead(200, {
      'content-type': TYPES[extname(file)] || 'application/octet-stream',
      'content-length': st.size,
      'cache-control': 'no-cache',
    });
    createReadStream(file).pipe(res);
  });
  return new Promise((resolveStart, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const { port: p } = server.address();
      resolveStart({ server, url: `http://${host}:${p}` });
    });
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const port = Number(process.env.PORT || process.argv[2] || 8080);
  const modelDir = process.env.MODEL_DIR || null;
  if (modelDir && !existsSync(join(modelDir, 'config.json'))) {
    console.warn(`serve: MODEL_DIR=${modelDir} has no config.json; transformers.js needs config.json, tokenizer.json, tokenizer_config.json and onnx/model*.onnx`);
  }
  const { url } = await serve({ port, modelDir });
  console.log(`rlxkv demo: ${url}/demo/`);
  if (modelDir) {
    const dtype = process.env.MODEL_DTYPE ? `&dtype=${encodeURIComponent(process.env.MODEL_DTYPE)}` : '';
    console.log(`MODEL_DIR ${resolve(modelDir)} is served at ${MODEL_DIR_PATH}; transformers.js on it: ${url}/demo/?engine=transformers.js&model=${MODEL_DIR_PATH}${dtype}`);
  }
}
