import { collapseIntoRecalled, type RecalledEvidence } from '../../consolidate/summary-collapse.js';
import { SUMMARY_DEPTH_NAMES, type SummaryDepth } from '../../model/summary.js';
import type { EngramView } from '../../view/engram-view.js';

/** Most summaries one recall returns per query. */
export const MCP_SUMMARY_HITS = 3;

export interface SummaryRecallHit {
  query: string;
  kind: 'summary';
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
}

/**
 * Summaries matching each query (the cold tier left out), for `recall` with `summaries: true`: marked as
 * summaries, each with the ids to expand next. The reader sees only summaries of sessions it may read. With
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
  }
  return out;
}

/** The hits as text after the evidence: each marked as a summary (derived, not a quote) with its drill-down. */
export function summaryRecallText(hits: readonly SummaryRecallHit[]): string {
  if (hits.length === 0) return 'Summaries: none match.';
  const blocks = hits.map((h) => {
    const down = h.depth > 0 ? `children ${h.childIds.join(', ')}` : `source events ${h.sourceEventIds.slice(0, 5).join(', ')}${h.sourceEventIds.length > 5 ? ', ...' : ''}`;
    return `[summary ${h.id}, ${h.depthName} (depth ${h.depth}); derived, not verbatim: expand ${h.id} or its ${down}]\n${h.text}`;
  });
  return `Summaries (derived views; verify exact values in the events they cite):\n\n${blocks.join('\n\n')}`;
}
