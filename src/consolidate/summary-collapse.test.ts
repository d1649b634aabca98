import { describe, expect, it } from 'vitest';
import { collapseIntoRecalled } from './summary-collapse.js';

const A = 'evt_01m8a7d6j9fpmpq14k5a00yymb';
const B = 'evt_01m8a7d6j2chmdzfahzkcbe2hw';
const C = 'evt_01m8a7d7f4zjmvpkmk8hd5jrx0';

const summary = [
  'Session s1 (episode 1 of 2), turns 1-38, 4 March 2026:',
  `Decision: Keep an outbox table instead of direct publishing in reporting because a crash lost 14 events. [${A}]`,
  `Decision: Keep a nightly batch in shipping because the ledger export must match the bank cut-off. (replaces ${C}) [${B}]`,
  'The crash is at src/orders/handler.ts:49: webhookHandler reads currency from an undefined webhook.',
  'Keep an outbox table instead of direct publishing in reporting because a crash lost 14 events.',
  'Check the service logs.',
  'Identifiers: ECONNRESET --pool-size=56',
].join('\n');

describe('collapseIntoRecalled', () => {
  it('leaves out the lines that cite or quote a recalled event, and names the events they were folded into', () => {
    const hits = [
      { eventId: A, excerpt: 'Keep an outbox table instead of direct publishing in reporting because a crash lost 14 events.' },
      { eventId: 'evt_01m8a7d7fcdd1d6mwdcbnndenf', excerpt: 'Stack:\nThe crash is at src/orders/handler.ts:49: webhookHandler reads currency\nfrom an undefined webhook. Its caller passes it on.' },
    ];
    const out = collapseIntoRecalled(summary, hits);
    expect(out.collapsed).toBe(3);
    expect(out.intoEventIds).toEqual([A, 'evt_01m8a7d7fcdd1d6mwdcbnndenf']);
    expect(out.text.split('\n')).toEqual([
      'Session s1 (episode 1 of 2), turns 1-38, 4 March 2026:',
      `Decision: Keep a nightly batch in shipping because the ledger export must match the bank cut-off. (replaces ${C}) [${B}]`,
      'Check the service logs.',
      'Identifiers: ECONNRESET --pool-size=56',
      `(3 lines left out: quoted in the recalled events ${A}, evt_01m8a7d7fcdd1d6mwdcbnndenf)`,
    ]);
  });

  it('matches a decision line by the event it cites, its links ignored, and by its text when another event quotes it', () => {
    expect(collapseIntoRecalled(summary, [{ eventId: B, excerpt: 'unrelated' }]).text).not.toContain('nightly batch');
    const quoted = collapseIntoRecalled(summary, [{ eventId: C, excerpt: 'note: Keep a nightly batch in shipping because the ledger export must match the bank cut-off.' }]);
    expect(quoted.intoEventIds).toEqual([C]);
    expect(quoted.text).not.toContain('Decision: Keep a nightly batch');
  });

  it('keeps everything without hits, never drops the header, and never matches a short line by text', () => {
    expect(collapseIntoRecalled(summary, [])).toEqual({ text: summary, collapsed: 0, intoEventIds: [] });
    const header = collapseIntoRecalled(summary, [{ eventId: 'evt_x', excerpt: summary }]);
    expect(header.text.startsWith('Session s1 (episode 1 of 2)')).toBe(true);
    // "Check the service logs." is quoted by that excerpt, but too short to call a quotation.
    expect(header.text).toContain('Check the service logs.');
    expect(collapseIntoRecalled(summary, [{ eventId: 'evt_y', excerpt: 'nothing in common' }]).collapsed).toBe(0);
  });
});
