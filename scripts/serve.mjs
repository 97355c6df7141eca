// A small static server for the demo and the browser tests: serves the repo
// root on 127.0.0.1 with the MIME types ES modules and wasm need.
import { createServer } from 'node:http';
import { createReadStream, statSync } from 'node:fs';
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
};

export const repoRoot = resolve(fileURLToPath(new URL('..', import.meta.url)));

/** Starts serving `root`; resolves to { server, url }. Port 0 picks a free one. */
export function serve({ root = repoRoot, port = 0, host = '127.0.0.1' } = {}) {
  const server = createServer((req, res) => {
    let path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    if (path.endsWith('/')) path += 'index.html';
    const file = normalize(join(root, path));
    if (file !== root && !file.startsWith(root + sep)) {
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
      res.writeHead(302, { location: `${path}/` }).end();
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
  const { url } = await serve({ port });
  console.log(`rlxkv demo: ${url}/demo/`);
}
