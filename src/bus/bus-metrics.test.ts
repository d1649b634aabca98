import { describe, expect, it } from 'vitest';
import type { BusEventRecord } from '../store/bus-storage.js';
import { computeBusMetrics } from './bus-metrics.js';

let id = 0;
const ev = (type: string, agentId: string, role: string, data: Record<string, unknown>): BusEventRecord => ({ id: ++id, tsMs: 1000 + id, type, agentId, role, data });

describe('bus metrics', () => {
  it('computes the LESS §12 metrics from telemetry', () => {
    const m = computeBusMetrics([
      ev('less.message', 'a', 'programmer', { ok: false, inlineTokens: 1200, turn: 1 }),
      ev('less.message', 'a', 'programmer', { ok: true, inlineTokens: 300, turn: 2 }),
      ev('less.message', 'b', 'programmer', { ok: false, inlineTokens: 900, turn: 1 }),
      ev('less.message', 'p', 'manager', { ok: true, inlineTokens: 100, turn: 1 }),
      ev('less.deref.request', 'a', 'programmer', { allowed: true, turn: 2 }),
      ev('less.deref.request', 'a', 'programmer', { allowed: true, turn: 2, granted: true }),
      ev('less.deref.request', 'a', 'programmer', { allowed: false, turn: 2 }),
      ev('less.deref.request', 'b', 'programmer', { allowed: true, turn: 1 }),
      ev('less.engram.put', 'a', 'programmer', { kind: 'risk', isContradiction: true }),
      ev('less.engram.put', 'a', 'programmer', { kind: 'fact' }),
      ev('less.engram.put', 'b', 'programmer', { kind: 'fact' }),
      ev('less.engram.put', 'b', 'programmer', { kind: 'fact', isDuplicate: true }),
    ]);
    expect(m.inlineTokensPerTurnByRole).toEqual({ programmer: { messages: 3, average: 800, max: 1200 }, manager: { messages: 1, average: 100, max: 100 } });
    expect(m.derefsPerTurnByRole.programmer).toEqual({ turns: 2, derefs: 3, average: 1.5, denied: 1, granted: 1 });
    expect(m.topEngramKinds).toEqual([
      { kind: 'fact', count: 2 },
      { kind: 'risk', count: 1 },
    ]);
    expect(m.contradictionRate).toBeCloseTo(1 / 3, 3);
    expect(m.rejectionRate).toBe(0.5);
    // a's rejection was followed by an accepted message; b's was not.
    expect(m.resendSuccessRate).toBe(0.5);
    expect(m.byType['less.engram.put']).toBe(4);
  });

  it('is all zeros without events', () => {
    const m = computeBusMetrics([]);
    expect(m).toMatchObject({ events: 0, contradictionRate: 0, rejectionRate: 0, resendSuccessRate: 0, topEngramKinds: [] });
  });
});
