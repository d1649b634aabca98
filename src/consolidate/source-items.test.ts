import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../engine.js';
import type { SessionId } from '../model/ids.js';
import { createGptTokenizer } from '../providers/gpt-tokenizer.js';
import { summarizeWithEscalation } from './bounded-summary.js';
import { sourceItemsFromEvents } from './source-items.js';

let dir: string;
let mem: Engram;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-source-items-'));
  mem = await openEngram({ db: join(dir, 'engram.db') });
});
afterEach(async () => {
  await mem.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('sourceItemsFromEvents', () => {
  it('turns stored events into sources a summary can be made from without a model', async () => {
    await mem.append('ses_items', [
      { kind: 'user', content: 'Why does the nightly export fail with EACCES on /var/exports?' },
      { kind: 'tool_call', toolName: 'Bash', content: 'ls -ld /var/exports' },
      { kind: 'tool_result', toolName: 'Bash', content: `drwxr-x--- root root /var/exports\n${'log line\n'.repeat(4000)}` },
      { kind: 'decision', content: 'Run the export as the exporter user and chown /var/exports to it.' },
    ]);
    const events = await mem.listEvents({ sessionId: 'ses_items' as SessionId });
    const items = sourceItemsFromEvents(events);
    expect(items.map((i) => i.kind)).toEqual(['user', 'tool_call', 'tool_result', 'decision']);
    expect(items[1]!.text).toBe('Bash: ls -ld /var/exports');
    // The long tool output is stored as an artifact; the source is its preview, and says so.
    const result = events[2]!;
    expect(result.artifact).toBeDefined();
    expect(items[2]!.text).toMatch(new RegExp(`\\[preview of artifact ${result.artifact!.id}, `));

    const summary = await summarizeWithEscalation({ items, budgetTokens: 50, instructions: 'Summarize.' }, { llm: null, tokenizer: createGptTokenizer() });
    expect(summary.text).toContain('Run the export as the exporter user');
    expect(summary.sourceIds).toEqual(events.map((e) => e.id));
  });
});
