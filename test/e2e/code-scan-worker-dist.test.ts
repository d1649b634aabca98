import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The code scan's worker as the built package runs it: dist/store/code-scanner.js starts
 * dist/store/code-scan-worker.js (the CLI bundle resolves its modules' paths to dist/ too), not the TypeScript
 * source the other tests run through tsx. test/global-setup.ts builds dist/.
 */
const dist = (path: string): string => pathToFileURL(resolve('dist', path)).href;

describe('code scan worker from dist/', () => {
  it('starts the compiled worker and answers what the calling thread answers', async () => {
    const { CodeScanner } = (await import(dist('store/code-scanner.js'))) as typeof import('../../src/store/code-scanner.js');
    const { CodeSet } = (await import(dist('store/vector-code-set.js'))) as typeof import('../../src/store/vector-code-set.js');
    const codes = (await import(dist('store/vector-codes.js'))) as typeof import('../../src/store/vector-codes.js');
    let a = 17;
    const rand = (): number => {
      a = (Math.imul(a, 1103515245) + 12345) >>> 0;
      return a / 4294967296;
    };
    const rows = Array.from({ length: 3000 }, (_, i) => ({
      rowid: i + 1,
      embedding: Float32Array.from({ length: 64 }, () => rand() - 0.5),
      session_id: i % 3 === 0 ? 'a' : 'b',
      kind: 'note',
      ts_ms: i,
    }));
    const set = new CodeSet(codes.codeWords(64));
    set.append(codes.encodeRotatedBlock(rows, new Float32Array(64)));
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => void warnings.push(w);
    process.on('warning', onWarning);
    const scanner = new CodeScanner({ minCodes: 1 });
    try {
      for (const filter of [null, { sessions: new Set(['a']) }]) {
        const query = codes.rotatedQuery(Float32Array.from({ length: 64 }, () => rand() - 0.5));
        expect(await scanner.scan(set, query, filter, 25, { prefilter: 1000 })).toEqual(set.scan(query, filter, 25, { prefilter: 1000 }));
      }
      expect(scanner.hasWorker).toBe(true);
      await new Promise((r) => setImmediate(r));
      expect(warnings).toEqual([]);
    } finally {
      await scanner.close();
      process.off('warning', onWarning);
    }
  });
});
