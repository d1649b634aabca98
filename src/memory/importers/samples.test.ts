import { closeSync, createReadStream, existsSync, openSync, readSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { DETECT_FORMAT_BYTES, detectFormat } from './index.js';
import { collect } from './test-support.js';
import type { Collected } from './test-support.js';
import type { ImportFormat, ImportOptions } from './types.js';

/**
 * The shared real transcripts (see ../shared/bench-data/transcripts/README.md). The expected counts were
 * checked by hand against the files with an independent script (record and block types counted with
 * Python's json module). The files are not the project's to copy (their README says so): a clone without the
 * shared folder beside it skips these tests, saying why; with the folder there, a missing file fails the test.
 */
const TRANSCRIPTS = resolve(process.cwd(), '../shared/bench-data/transcripts');
const SKIP_REASON = existsSync(TRANSCRIPTS)
  ? undefined
  : `the shared sample transcripts are not beside this clone (no ${TRANSCRIPTS}); they are read in place, never copied into the project`;

async function importSample(file: string, format: ImportFormat, options: ImportOptions = {}): Promise<Collected & { bytesRead: number; sizeBytes: number }> {
  const path = resolve(TRANSCRIPTS, file);
  expect(existsSync(path), `sample transcript not found: looked for ${path}`).toBe(true);
  const sizeBytes = statSync(path).size;
  let bytesRead = 0;
  const collected = await collect({ sizeBytes, stream: () => createReadStream(path) }, format, {
    ...options,
    onBytes: (n) => {
      bytesRead = n;
    },
  });
  return { ...collected, bytesRead, sizeBytes };
}

function countBy<T>(items: readonly T[], keyOf: (item: T) => readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) for (const key of keyOf(item)) counts[key] = (counts[key] ?? 0) + 1;
  return counts;
}

/** The start of a sample as the importer sniffs it: the first DETECT_FORMAT_BYTES, decoded. */
function firstChunk(file: string): string {
  const path = resolve(TRANSCRIPTS, file);
  expect(existsSync(path), `sample transcript not found: looked for ${path}`).toBe(true);
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(DETECT_FORMAT_BYTES);
    return buf.subarray(0, readSync(fd, buf, 0, DETECT_FORMAT_BYTES, 0)).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

describe('shared sample transcripts', () => {
  beforeEach((ctx) => {
    if (SKIP_REASON !== undefined) ctx.skip(SKIP_REASON);
  });

  it('are detected as their formats from their first 64 KiB, whatever other formats the importers know', () => {
    expect(detectFormat(firstChunk('claude-code-viewer-sample-fe5e1c67.jsonl'))).toBe('claude-code');
    expect(detectFormat(firstChunk('tau-bench-gpt-4o-airline.json'))).toBe('openai');
  });

  it('imports the Claude Code sample: 167 tool calls and results, no issues', async () => {
    const { events, issues, skips, bytesRead, sizeBytes } = await importSample('claude-code-viewer-sample-fe5e1c67.jsonl', 'claude-code');
    expect(issues).toEqual([]);
    expect(skips).toEqual([]);
    expect(bytesRead).toBe(sizeBytes);
    expect(countBy(events, (e) => [e.event.kind])).toEqual({ note: 1, user: 8, assistant: 95, tool_call: 167, tool_result: 167 });
    // 405 of the 438 lines are sub-agent records, one block each; 23 tool results have is_error.
    expect(countBy(events, (e) => e.event.tags ?? [])).toEqual({ summary: 1, sidechain: 405, error: 23 });
    expect(new Set(events.map((e) => e.sessionId))).toEqual(new Set(['fe5e1c67-53e7-4862-81ae-d0e013e3270b']));
    expect(events.filter((e) => e.event.kind === 'tool_result' && e.event.toolName === undefined)).toEqual([]);
    // One of the 167 toolUseResult values is 27 KB of JSON, over the 16 KiB cap.
    expect(events.filter((e) => e.event.meta?.toolUseResult !== undefined)).toHaveLength(166);
    expect(new Set(events.map((e) => e.event.key)).size).toBe(events.length);
  });

  it('imports the tau-bench sample: 200 conversations, 5,308 messages, 1,164 tool calls, no issues', async () => {
    const { events, issues, skips, bytesRead, sizeBytes } = await importSample('tau-bench-gpt-4o-airline.json', 'openai', { sessionId: 'tau' });
    expect(issues).toEqual([]);
    expect(skips).toEqual([]);
    expect(bytesRead).toBe(sizeBytes);
    // 2,454 assistant messages: 1,380 with text (90 of them also call a tool), 1,074 with only a tool call.
    expect(countBy(events, (e) => [e.event.kind])).toEqual({ system: 200, user: 1490, assistant: 1380, tool_call: 1164, tool_result: 1164 });
    const sessions = new Set(events.map((e) => e.sessionId));
    expect(sessions.size).toBe(200);
    expect(sessions.has('tau:0') && sessions.has('tau:199')).toBe(true);
    expect(events.filter((e) => e.event.kind === 'tool_result' && e.event.toolName === undefined)).toEqual([]);
    expect(new Set(events.map((e) => e.event.key)).size).toBe(events.length);
    // The first message of the first run is on line 106 of the pretty-printed file.
    expect(events[0]).toMatchObject({ line: 106, sessionId: 'tau:0', event: { kind: 'system', key: 'oa:0:0:0' } });
  });
});
