import { describe, expect, it } from 'vitest';
import type { EventRecord } from '../model/event.js';
import { sessionHost, summaryLine, withoutCitations } from './session-overview.js';

const event = (over: Partial<EventRecord>): EventRecord => ({ id: 'evt_x' as never, sessionId: 's' as never, turn: 1, kind: 'user', ts: '2026-01-01T00:00:00.000Z', content: '', tags: [], ...over });

describe('sessionHost', () => {
  it("takes the host a start record names before what the importer's keys say", () => {
    const start = event({ kind: 'system', tags: ['engram:derived', 'engram:session-start', 'codex'], meta: { host: 'codex' } });
    expect(sessionHost([event({ key: 'cc:u1:0' }), start])).toBe('codex');
  });

  it('reads the importer from the key prefix, and knows nothing of plain appends', () => {
    expect(sessionHost([event({}), event({ key: 'swe:h:0' })])).toBe('swe-agent');
    expect(sessionHost([event({ key: 'oh:12:0' })])).toBe('openhands');
    expect(sessionHost([event({ key: 'my-own-key' }), event({})])).toBeNull();
  });
});

describe('summaryLine', () => {
  it('skips the header and the request lines, and keeps the citations', () => {
    expect(summaryLine('Session s, turns 1-9, 1 May 2026:\nAsked: "fix it" [evt_a]\nThen asked: "more" [evt_b]\nFiles edited: a.ts [evt_c]')).toBe('Files edited: a.ts [evt_c]');
  });

  it('falls back to the request line, hides private spans, and is null for a header alone', () => {
    expect(summaryLine('Session s:\nAsked: "rotate <private>k-1</private>" [evt_a]')).toBe('Asked: "rotate [private]" [evt_a]');
    expect(summaryLine('Session s:\n- The model wrote this.')).toBe('The model wrote this.');
    expect(summaryLine('Session s:')).toBeNull();
  });
});

it('withoutCitations drops evt_/sum_ citations and the space before them', () => {
  expect(withoutCitations('Files edited: a.ts [evt_01abc] and b.ts [sum_01XYZ].')).toBe('Files edited: a.ts and b.ts.');
});
