import { collapseIntoRecalled, type RecalledEvidence } from '../../consolidate/summary-collapse.js';
import { SUMMARY_DEPTH_NAMES, type SummaryDepth } from '../../model/summary.js';
import type { EngramView } from '../../view/engram-view.js';

/** Most summaries one recall returns per query. */
export const MCP_SUMMARY_HITS = 3;

export interface SummaryRecallHit {
  query: string;
  /** `decision`: a decision record in force (consolidate/decision-records.ts); its source event is the decision. */
  kind: 'summary' | 'decision';
  id: string;
  depth: SummaryDepth;
  depthName: string;
  project: string;
  sessionIds: string[];
  /** Where to drill down: an arc's or epoch's children, or a session summary's source events (first 20). */
  childIds: string[];
  sourceEventIds: string[];
  text: string;
  score: number;
  /** Recalled events that lines of this summary repeated verbatim: those lines were left out of `text` (summary-collapse.ts). */
  collapsedInto?: string[];
  /** A decision record's subject key, when it has one. */
  subject?: string | null;
}

/**
 * Summaries matching each query (the cold tier left out), for `recall` with `summaries: true`: marked as
 * summaries, each with the ids to expand next; then, unless a depth is asked for, the decision records in force
 * that match (`kind: 'decision'`). The reader sees only summaries of sessions it may read. With
 * `recalled` (the hits returned beside them), a summary's lines that only repeat those events verbatim are
 * collapsed into them: the raw event comes first and is not echoed by a derived copy.
 */
export async function recallSummaries(
  view: EngramView,
  queries: readonly string[],
  o: { depth?: SummaryDepth; recalled?: readonly RecalledEvidence[] } = {},
): Promise<SummaryRecallHit[]> {
  const out: SummaryRecallHit[] = [];
  const seen = new Set<string>();
  for (const query of queries) {
    for (const { summary: s, score } of await view.summaries.search(query, { limit: MCP_SUMMARY_HITS, ...(o.depth !== undefined ? { depth: o.depth } : {}) })) {
      if (seen.has(s.id)) continue;
      seen.add(s.id);
      const collapsed = collapseIntoRecalled(s.text, o.recalled ?? []);
      out.push({
        query,
        kind: 'summary',
        id: s.id,
        depth: s.depth,
        depthName: SUMMARY_DEPTH_NAMES[s.depth],
        project: s.project,
        sessionIds: s.sessionIds,
        childIds: s.childIds,
        sourceEventIds: s.sourceEventIds.slice(0, 20),
        text: collapsed.text,
        score,
        ...(collapsed.collapsed > 0 ? { collapsedInto: collapsed.intoEventIds } : {}),
      });
    }
    if (o.depth !== undefined) continue;
    // Decision records in force: one whose decision event the recall already returned adds nothing and is left out.
    const recalledIds = new Set((o.recalled ?? []).map((r) => r.eventId));
    for (const { summary: d, score } of await view.summaries.search(query, { kind: 'decision', limit: MCP_SUMMARY_HITS })) {
      if (seen.has(d.id) || recalledIds.has(d.sourceEventIds[0]!)) continue;
      seen.add(d.id);
      out.push({
        query,
        kind: 'decision',
        id: d.id,
        depth: d.depth,
        depthName: 'decision',
        project: d.project,
        sessionIds: d.sessionIds,
        childIds: [],
        sourceEventIds: d.sourceEventIds,
        text: d.text,
        score,
        subject: d.subject ?? null,
      });
    }
  }
  return out;
}

/** The hits as text after the evidence: each marked as a summary (derived, not a quote) with its drill-down. */
export function summaryRecallText(hits: readonly SummaryRecallHit[]): string {
  if (hits.length === 0) return 'Summaries: none match.';
  const blocks = hits.map((h) => {
    if (h.kind === 'decision') return `[decision record ${h.id}, in force; expand ${h.id} or its event ${h.sourceEventIds[0]}]\n${h.text}`;
    const down = h.depth > 0 ? `children ${h.childIds.join(', ')}` : `source events ${h.sourceEventIds.slice(0, 5).join(', ')}${h.sourceEventIds.length > 5 ? ', ...' : ''}`;
    return `[summary ${h.id}, ${h.depthName} (depth ${h.depth}); derived, not verbatim: expand ${h.id} or its ${down}]\n${h.text}`;
  });
  return `Summaries (derived views; verify exact values in the events they cite):\n\n${blocks.join('\n\n')}`;
}
