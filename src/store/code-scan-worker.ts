/**
 * A worker thread of code-scanner.ts: runs one range of a code set's first pass (vector-code-set.ts scanRange)
 * over the set's shared arrays as the caller posted them, and posts back that range's best with their estimates.
 * Holds no state between requests, so a request is answered as the caller's thread would answer it.
 */
import { parentPort } from 'node:worker_threads';
import type { CodeScanRequest, CodeScanResponse } from './code-scanner.js';
import { scanRange } from './vector-code-set.js';

const port = parentPort;
if (port === null) throw new Error('code-scan-worker.ts runs as a worker thread (code-scanner.ts)');
port.on('message', (request: CodeScanRequest) => {
  let response: CodeScanResponse;
  try {
    const r = request;
    response = { id: r.id, range: scanRange(r.set, r.query, r.filter, r.want, r.prefilter, r.from, r.to, r.gated) };
  } catch (err) {
    response = { id: request.id, error: err instanceof Error ? err.message : String(err) };
  }
  port.postMessage(response, 'range' in response ? [response.range.positions.buffer as ArrayBuffer, response.range.scores.buffer as ArrayBuffer] : []);
});
