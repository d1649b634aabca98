import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { detectFormat } from './index.js';
import { DETECT_FORMAT_BYTES, FirstRecordScanner, readTranscriptHead } from './transcript-head.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-head-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** `done` when the scanner finds the end of the first record, fed the text in chunks of `chunk` bytes; else null. */
function firstRecord(text: string, chunk = 5): string | null {
  const bytes = Buffer.from(text, 'utf8');
  const scanner = new FirstRecordScanner();
  let fed = 0;
  while (fed < bytes.length && !scanner.isDone) {
    const next = bytes.subarray(fed, fed + chunk);
    scanner.push(next);
    fed += next.length;
  }
  return scanner.isDone ? 'done' : null;
}

describe('FirstRecordScanner', () => {
  it('ends a JSON Lines record at the end of its first line, whatever a string inside holds, however the chunks fall', () => {
    for (const chunk of [1, 2, 3, 5, 7, 64]) {
      expect(firstRecord('{"a": "}]\\\\\\"{", "b": [1, {"c": 2}]}\n{"d": 1}\n', chunk)).toBe('done');
      expect(firstRecord('{"a": "}]\\\\\\"{", "b": [1, {"c": 2}]', chunk)).toBeNull();
      expect(firstRecord('{"a": "x\\\\"}', chunk)).toBe('done');
      expect(firstRecord('{"a": "x\\"}', chunk)).toBeNull();
    }
  });

  it('ends an indented document at the end of the first element of its first array', () => {
    const doc = JSON.stringify({ sessionId: 's', messages: [{ id: 'm', content: [{ text: 'x' }] }, { id: 'n' }] }, null, 2);
    const cut = doc.indexOf('"id": "n"');
    expect(firstRecord(doc.slice(0, cut))).toBe('done');
    expect(firstRecord(doc.slice(0, doc.indexOf('"text"')))).toBeNull();
    expect(firstRecord('[\n  {"id": 1, "args": {"x": [1, 2]}}')).toBe('done');
    expect(firstRecord('["a", ')).toBe('done');
    expect(firstRecord('[{"id": 1')).toBeNull();
  });

  it('takes the first line of what is not JSON, and starts after white space and a byte order mark', () => {
    expect(firstRecord('hello\nworld')).toBe('done');
    expect(firstRecord('\uFEFF  \n{"a": 1}')).toBe('done');
    expect(firstRecord('  \n\t')).toBeNull();
  });
});

describe('readTranscriptHead', () => {
  it('reads a first line longer than 64 KiB whole, so that detection sees the whole record', () => {
    // A Claude Code record writes its uuid after the message: a pasted file puts it past the first 64 KiB.
    const long = { parentUuid: null, sessionId: 's', type: 'user', message: { role: 'user', content: 'a'.repeat(300_000) }, uuid: 'u1' };
    const path = file('session.jsonl', `${JSON.stringify(long)}\n${JSON.stringify({ ...long, uuid: 'u2' })}\n`);
    const head = readTranscriptHead(path);
    expect(head).toMatchObject({ isBlank: false, hasFirstRecord: true });
    expect(head.text.length).toBeGreaterThan(300_000);
    expect(head.text.length).toBeLessThan(2 * 300_000);
    expect(detectFormat(head.text)).toBe('claude-code');
    // The first 64 KiB alone told wrong (a `role` key looks like a chat document).
    expect(detectFormat(head.text.slice(0, DETECT_FORMAT_BYTES))).toBe('openai');
  });

  it('stops at the limit when the first record is longer, saying so', () => {
    const path = file('huge.jsonl', `{"kind": "note", "content": "${'b'.repeat(200_000)}"}\n`);
    const head = readTranscriptHead(path, 100_000);
    expect(head.hasFirstRecord).toBe(false);
    expect(head.text.length).toBeLessThan(100_000 + 64 * 1024 + 1);
    expect(readTranscriptHead(path).hasFirstRecord).toBe(true);
  });

  it('reads at least 64 KiB when the first record is short, and the whole of a short file', () => {
    const lines = Array.from({ length: 5000 }, (_, i) => JSON.stringify({ kind: 'note', content: `line ${i}` })).join('\n');
    const head = readTranscriptHead(file('many.jsonl', lines));
    expect(Buffer.byteLength(head.text)).toBeGreaterThanOrEqual(DETECT_FORMAT_BYTES);
    expect(readTranscriptHead(file('short.jsonl', '{"kind":"note","content":"x"}')).text).toBe('{"kind":"note","content":"x"}');
  });

  it('calls a file of white space blank, however long', () => {
    expect(readTranscriptHead(file('blank.jsonl', ' \n'.repeat(100_000))).isBlank).toBe(true);
    expect(readTranscriptHead(file('bom.jsonl', '\uFEFF\n')).isBlank).toBe(true);
    expect(readTranscriptHead(file('late.jsonl', `${' \n'.repeat(100_000)}{"kind":"note","content":"x"}`))).toMatchObject({
      isBlank: false,
      text: '{"kind":"note","content":"x"}',
    });
  });
});
