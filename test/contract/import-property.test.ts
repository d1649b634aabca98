import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { isEngramError } from '../../src/errors.js';
import { runStorageContract, useEngram } from './harnesses.js';

/**
 * Property tests of imports on every backend: whatever lines a JSONL transcript holds, a strict import stores
 * the whole file or nothing (and says which line was wrong); with skipInvalid it stores exactly the lines it
 * does not list. Never an uncoded error, never half a file. A file without a non-blank line has no line to name:
 * it is refused as a whole (`field: 'file'`, line 0) in either mode.
 *
 * A failure prints fast-check's report, which starts with the seed and path to replay it
 * (`fc.assert(..., { seed, path })`).
 */

const nasty = fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('\ud800', 'a\u0000b', '🦀🦀', 'e\u0301', '\\\\', ''));
const goodLine = fc.record({ kind: fc.constantFrom('user', 'assistant', 'note', 'decision'), content: fc.string({ minLength: 1, maxLength: 40 }), key: fc.constantFrom('k1', 'k2', 'k3', 'k4', 'k5', 'k6') }, { requiredKeys: ['kind', 'content'] }).map((e) => JSON.stringify(e));
const badLine = fc.oneof(
  fc.record({ kind: fc.constantFrom('user', 'bogus', ''), content: nasty, ts: fc.constantFrom(8640000000000001, 'never', 5), supersedes: fc.constantFrom('evt_01jaaaaaaaaaaaaaaaaaaaaaaa', 'x') }, { requiredKeys: ['kind'] }).map((e) => JSON.stringify(e)),
  fc.string({ maxLength: 30 }),
  fc.constantFrom('{', '[]', 'null', '{"kind":"user"}', '{"kind":"user","content":"x","meta":' + '{"a":'.repeat(40) + '1' + '}'.repeat(40) + '}'),
);
const file = fc.array(fc.oneof({ weight: 3, arbitrary: goodLine }, { weight: 1, arbitrary: badLine }), { minLength: 1, maxLength: 25 });

runStorageContract('imports under random lines', ({ createHarness }) => {
  const ctx = useEngram(createHarness);

  it('store a strict file whole or not at all, and with skipInvalid exactly the lines they do not list', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'engram-import-prop-'));
    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(file, fc.boolean(), async (lines, skipInvalid) => {
          const session = `prop-${run++}`;
          const path = join(dir, `${session}.jsonl`);
          writeFileSync(path, lines.join('\n'));
          const before = (await ctx.mem.stats()).events;
          try {
            const report = await ctx.mem.importFile({ path }, { format: 'jsonl', sessionId: session, skipInvalid });
            const after = (await ctx.mem.stats()).events;
            expect(after - before).toBe(report.stored);
            if (!skipInvalid) expect(report.issueCount).toBe(0);
            // Every line is stored, a duplicate of a stored key, or listed: none is lost silently.
            expect(report.stored + report.duplicates + report.issueCount + Object.values(report.skipped).reduce((a, b) => a + b, 0)).toBe(
              lines.filter((l) => l.trim().length > 0).length,
            );
          } catch (err) {
            if (!isEngramError(err) || !['INVALID_INPUT', 'IDEMPOTENCY_CONFLICT'].includes(err.code)) throw err;
            const data = err.data as { field?: string; line?: number };
            expect(skipInvalid && err.code === 'INVALID_INPUT' && data.field !== 'file').toBe(false);
            expect((await ctx.mem.stats()).events).toBe(before);
            if (lines.every((l) => l.trim().length === 0)) {
              expect(data).toMatchObject({ field: 'file', line: 0 });
              expect(err.message).toContain('the file is empty');
            } else {
              expect(err.message).toMatch(new RegExp(`${session}\\.jsonl:\\d+`)); // names the file's line
            }
          }
        }),
        // The counterexample of issue #30 (an empty file's error named no line) and its white-space cousins.
        { numRuns: 60, examples: [[[''], false], [[''], true], [['  ', ''], false], [[' '], true]] },
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
