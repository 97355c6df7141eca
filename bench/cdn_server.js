// A loopback server standing for a CDN in the remote-tier benchmark
// (bench/bench_ttft.mjs): it serves a directory of published pages under
// /kv/ with an added delay before each answer and every body paced through
// one shared link of a given bandwidth (all responses together), with the
// headers a CDN should send (immutable, long max-age, CORS): GET
// /kv/TREE/NAME reads DIR/TREE/NAME. PUT /upload/NAME takes a file into DIR
// (the benchmark's seed blob, uploaded by its worker).
import { createServer } from 'node:http';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const TICK_MS = 5;

/**
 * Starts it on 127.0.0.1: { url, close(), served: { requests, bytes } }.
 * dir: where /kv/NAME is read from and /upload/NAME written to.
 */
export function cdnServer(dir, { delayMs = 20, bitsPerSecond = 100e6 } = {}) {
  const served = { requests: 0, bytes: 0 };
  // The link: every TICK_MS or so, the bytes bitsPerSecond carries in the
  // time since the last tick, handed to the responses under way in turn.
  // By the clock, not the tick count: a timer that fires late on a busy
  // machine (Chromium computing beside it) must not slow the link down. An
  // idle link saves up nothing.
  const sending = new Set();
  const bytesPerMs = bitsPerSecond / 8 / 1000;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    let budget = sending.size ? Math.round(bytesPerMs * (now - last)) : 0;
    last = now;
    while (budget > 0 && sending.size) {
      const share = Math.max(1, Math.floor(budget / sending.size));
      for (const s of [...sending]) {
        const n = Math.min(share, s.bytes.length - s.at, budget);
        s.res.write(s.bytes.subarray(s.at, s.at + n));
        s.at += n;
        budget -= n;
        served.bytes += n;
        if (s.at >= s.bytes.length) {
          sending.delete(s);
          s.res.end();
        }
        if (budget <= 0) break;
      }
    }
  }, TICK_MS);
  const cors = { 'access-control-allow-origin': '*', 'access-control-allow-methods': 'GET, PUT', 'access-control-allow-headers': 'content-type' };
  const server = createServer((req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    const name = path.split('/').pop();
    if (req.method === 'OPTIONS') return res.writeHead(204, cors).end();
    // Pages, the hint files of where entries end (.ends), the seed blob.
    if (!/^[0-9a-f]{16,32}\.(rlxkv|ends)$|^seed[\w-]*\.rlxkv$/.test(name)) return res.writeHead(404, cors).end();
    if (req.method === 'PUT' && path.startsWith('/upload/')) {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        writeFileSync(join(dir, name), Buffer.concat(chunks));
        res.writeHead(201, cors).end();
      });
      return undefined;
    }
    const tree = path.split('/')[2];
    if (req.method !== 'GET' || !path.startsWith('/kv/') || !/^[\w-]+$/.test(tree)) return res.writeHead(405, cors).end();
    served.requests++;
    let bytes;
    try {
      if (!statSync(join(dir, tree, name)).isFile()) throw new Error('not a file');
      bytes = readFileSync(join(dir, tree, name));
    } catch {
      setTimeout(() => res.writeHead(404, cors).end(), delayMs);
      return undefined;
    }
    setTimeout(() => {
      res.writeHead(200, {
        ...cors, 'content-type': 'application/octet-stream', 'content-length': bytes.length,
        'cache-control': 'public, max-age=31536000, immutable',
      });
      sending.add({ res, bytes, at: 0 });
    }, delayMs);
    return undefined;
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({
    url: `http://127.0.0.1:${server.address().port}`,
    served,
    close() {
      clearInterval(timer);
      server.closeAllConnections?.();
      server.close();
    },
  })));
}

