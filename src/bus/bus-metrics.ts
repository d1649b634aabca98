import type { BusEventRecord } from '../store/bus-storage.js';

/** The metrics of LESS §12, computed from the bus's telemetry events. */
export interface BusMetrics {
  /** Events the metrics were computed from, and their time range. */
  events: number;
  fromTs?: string;
  toTs?: string;
  /** Average inline tokens per agent message (one message = one turn), by role. */
  inlineTokensPerTurnByRole: Record<string, { messages: number; average: number; max: number }>;
  /** Average allowed derefs per turn that dereferenced anything, by role; and denials. */
  derefsPerTurnByRole: Record<string, { turns: number; derefs: number; average: number; denied: number; granted: number }>;
  /** Engrams stored by kind, most first. */
  topEngramKinds: Array<{ kind: string; count: number }>;
  /** Share of stored engrams that are contradictions (risk engrams citing two or more sources). */
  contradictionRate: number;
  /** Messages rejected for their budgets, over all messages (should trend down as agents learn the contract). */
  rejectionRate: number;
  /** Of the rejected messages, the share whose sender's next message was accepted (the resend worked). */
  resendSuccessRate: number;
  /** Counts by event type. */
  byType: Record<string, number>;
}

/** Computes {@link BusMetrics} from telemetry events (oldest first). Pure, deterministic. */
export function computeBusMetrics(events: readonly BusEventRecord[]): BusMetrics {
  const byType: Record<string, number> = {};
  const inline = new Map<string, { n: number; sum: number; max: number }>();
  const derefTurns = new Map<string, { role: string; derefs: number }>();
  const derefRole = new Map<string, { denied: number; granted: number }>();
  const kinds = new Map<string, number>();
  let stored = 0;
  let contradictions = 0;
  let messages = 0;
  let rejected = 0;
  let resent = 0;
  const awaitingResend = new Set<string>();

  for (const e of events) {
    byType[e.type] = (byType[e.type] ?? 0) + 1;
    const role = e.role ?? 'unknown';
    const d = e.data;
    if (e.type === 'less.message') {
      messages++;
      const tokens = Number(d.inlineTokens ?? 0);
      const s = inline.get(role) ?? { n: 0, sum: 0, max: 0 };
      s.n++;
      s.sum += tokens;
      s.max = Math.max(s.max, tokens);
      inline.set(role, s);
      const agent = e.agentId ?? '';
      if (d.ok === true && awaitingResend.delete(agent)) resent++;
      if (d.ok === false) {
        rejected++;
        awaitingResend.add(agent);
      }
    } else if (e.type === 'less.deref.request') {
      const r = derefRole.get(role) ?? { denied: 0, granted: 0 };
      if (d.allowed === true) {
        const key = `${e.agentId ?? ''}#${String(d.turn ?? 0)}`;
        const t = derefTurns.get(key) ?? { role, derefs: 0 };
        t.derefs++;
        derefTurns.set(key, t);
        if (d.granted === true) r.granted++;
      } else {
        r.denied++;
      }
      derefRole.set(role, r);
    } else if (e.type === 'less.engram.put' && d.isDuplicate !== true) {
      stored++;
      kinds.set(String(d.kind), (kinds.get(String(d.kind)) ?? 0) + 1);
      if (d.isContradiction === true) contradictions++;
    }
  }

  const derefsPerTurnByRole: BusMetrics['derefsPerTurnByRole'] = {};
  for (const t of derefTurns.values()) {
    const r = (derefsPerTurnByRole[t.role] ??= { turns: 0, derefs: 0, average: 0, denied: 0, granted: 0 });
    r.turns++;
    r.derefs += t.derefs;
  }
  for (const [role, r] of derefRole) {
    const out = (derefsPerTurnByRole[role] ??= { turns: 0, derefs: 0, average: 0, denied: 0, granted: 0 });
    out.denied = r.denied;
    out.granted = r.granted;
  }
  for (const r of Object.values(derefsPerTurnByRole)) r.average = r.turns > 0 ? round(r.derefs / r.turns) : 0;

  const first = events[0];
  const last = events[events.length - 1];
  return {
    events: events.length,
    ...(first ? { fromTs: new Date(first.tsMs).toISOString() } : {}),
    ...(last ? { toTs: new Date(last.tsMs).toISOString() } : {}),
    inlineTokensPerTurnByRole: Object.fromEntries([...inline].map(([role, s]) => [role, { messages: s.n, average: round(s.sum / s.n), max: s.max }])),
    derefsPerTurnByRole,
    topEngramKinds: [...kinds].map(([kind, count]) => ({ kind, count })).sort((a, b) => b.count - a.count || (a.kind < b.kind ? -1 : 1)),
    contradictionRate: stored > 0 ? round(contradictions / stored) : 0,
    rejectionRate: messages > 0 ? round(rejected / messages) : 0,
    resendSuccessRate: rejected > 0 ? round(resent / rejected) : 0,
    byType,
  };
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}
