/**
 * The worker thread of code-scanner.ts: runs a code set's first pass (vector-code-set.ts scanCodes) over the
 * set's shared arrays as the caller posted them, and posts back the positions it found. Holds no state between
 * requests, so a request is answered as the caller's thread would answer it.
 */
import { parentPort } from 'node:worker_threads';
import type { CodeScanRequest, CodeScanResponse } from './code-scanner.js';
import { scanCodes } from './vector-code-set.js';

const port = parentPort;
if (port === null) throw new Error('code-scan-worker.ts runs as a worker thread (code-scanner.ts)');
port.on('message', (request: CodeScanRequest) => {
  let response: CodeScanResponse;
  try {
    const positions = scanCodes(request.set, request.query, request.filter, request.want, request.prefilter);
    response = { id: request.id, positions };
  } catch (err) {
    response = { id: request.id, error: err instanceof Error ? err.message : String(err) };
  }
  port.postMessage(response, 'positions' in response ? [response.positions.buffer as ArrayBuffer] : []);
});
