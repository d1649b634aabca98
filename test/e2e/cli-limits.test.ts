import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_INLINE_CONTENT_BYTES, MAX_QUERY_CHARS } from '../../src/model/limits.js';
import { runEngram } from '../fixtures/cli.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-cli-limits-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function engram(args: string[]) {
  return runEngram([...args, '--embedder', 'none'], { cwd: dir });
}

/** A JSONL file of raw lines (already JSON text), so a test can write escapes JSON.stringify would not. */
function writeLines(lines: string[], name = 'transcript.jsonl'): string {
  writeFileSync(join(dir, name), `${lines.join('\n')}\n`);
  return name;
}

const ok = (content: string) => JSON.stringify({ kind: 'user', content, sessionId: 's' });

describe('engram CLI: bad values are refused with exit 2, never a crash or a storage error', () => {
  it.each([
    ['a timestamp past JavaScript dates', `{"kind":"note","content":"x","sessionId":"s","ts":8640000000000001}`, 'ts', 'MAX_TIMESTAMP_MS'],
    ['a lone surrogate in a key', `{"kind":"note","content":"x","sessionId":"s","key":"k\\ud800"}`, 'key', undefined],
    ['a lone surrogate in the content', `{"kind":"user","content":"half an emoji \\ud83d","sessionId":"s"}`, 'content', undefined],
    ['meta 100,000 levels deep', `{"kind":"note","content":"x","sessionId":"s","meta":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}`, 'meta', 'MAX_JSON_DEPTH'],
  ])('refuses %s: exit 2, line and field named, no stack trace, nothing stored', (_what, line, field, limit) => {
    engram(['init']);
    const r = engram(['ingest', writeLines([ok('first'), line]), '--json']);
    expect(r.code).toBe(2);
    const { error } = JSON.parse(r.stderr) as { error: { code: string; message: string; data: Record<string, unknown> } };
    expect(error.code).toBe('INVALID_INPUT');
    expect(error.message).toContain('transcript.jsonl:2');
    expect(String(error.data.field)).toMatch(new RegExp(`^${field}`));
    if (limit) expect(error.message).toContain(limit);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(JSON.parse(engram(['stats', '--json']).stdout).events).toBe(0);
  });

  it('refuses a message over the inline limit naming the limit, and stores a run without word breaks of the allowed size', () => {
    engram(['init']);
    const over = engram(['ingest', writeLines([ok('\\'.repeat(MAX_INLINE_CONTENT_BYTES + 1))], 'over.jsonl'), '--format', 'jsonl']);
    expect(over.code).toBe(2);
    expect(over.stderr).toContain('MAX_INLINE_CONTENT_BYTES');
    // The 300 KB message of issue 12, then its context pack: linear token counting makes it quick.
    expect(engram(['ingest', writeLines([ok('hello'), ok('\\'.repeat(300_000)), ok('😀'.repeat(60_000))], 'long.jsonl')]).code).toBe(0);
    const pack = engram(['context', '--session', 's', '--window', '32000', '--json']);
    expect(pack.code).toBe(0);
    const summary = JSON.parse(pack.stdout) as { totalTokens: number; windowTokens: number; blocks: Array<{ kind: string; tokens: number; budget: number }> };
    for (const block of summary.blocks) expect(block.tokens).toBeLessThanOrEqual(block.budget);
    expect(summary.totalTokens).toBeLessThanOrEqual(summary.windowTokens);
  });

  it('refuses a recall query over the length limit with exit 2 naming the limit', () => {
    engram(['init']);
    const r = engram(['recall', 'q'.repeat(MAX_QUERY_CHARS + 1)]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('MAX_QUERY_CHARS');
    // At the limit the query is taken: the empty store holds nothing that matches it (exit 9, not an error).
    expect(engram(['recall', '\\'.repeat(MAX_QUERY_CHARS)]).code).toBe(9);
  });
});
