import type { SummaryRecord } from '../model/summary.js';
import { SUMMARY_DEPTH_NAMES } from '../model/summary.js';
import type { Tokenizer } from '../providers/tokenizer.js';
import type { SummaryReader } from './summary-reader.js';

/** What `expand` says about a summary besides its text: the ids to drill down to. */
// A type, not an interface: MCP structuredContent needs an index-compatible object type.
export type SummaryExpandDetails = {
  kind: 'summary';
  id: string;
  project: string;
  depth: number;
  depthName: string;
  startMs: number;
  endMs: number;
  sessionIds: string[];
  parentId: string | null;
  /** Arc or epoch: the summaries it condenses; expand them next. */
  childIds: string[];
  /** Session summary: the events it was made from; expand them next. */
  sourceEventIds: string[];
  level: SummaryRecord['level'];
  confidence: number;
  isCold: boolean;
  totalTokens: number;
  isTruncated: boolean;
};

/** Most characters of an event's content shown in a summary's expansion (the event itself is one expand away). */
const EVENT_PREVIEW_CHARS = 160;

/**
 * A summary's text and one level below it: an arc's or epoch's children (their first lines), or a session
 * summary's source events (a preview of each), cut to `maxTokens`. Every line names an id to expand next.
 */
export async function expandSummary(reader: SummaryReader, tokenizer: Tokenizer, id: string, maxTokens: number): Promise<{ text: string; details: SummaryExpandDetails }> {
  const { summary: s, children, events } = await reader.expand(id);
  const cold = s.coldAt !== null ? `\nThis summary is in the cold tier (${s.coldReason ?? 'superseded'}${s.coldSourceId ? `; replaced by ${s.coldSourceId}` : ''}).` : '';
  const head = `${s.id}  ${SUMMARY_DEPTH_NAMES[s.depth]} summary (depth ${s.depth})  project ${s.project}  ${s.level} (confidence ${s.confidence})${cold}`;
  const below =
    s.depth > 0
      ? ['Children (expand an id to drill down):', ...children.map((c) => `- ${c.id}  ${c.text.split('\n')[0]}`)]
      : [
          `Source events (${s.sourceEventIds.length}; expand an id for its full content):`,
          ...events.map((e) => `- ${e.id}  turn ${e.turn}  ${e.kind}  ${oneLine(e.content)}`),
          ...(events.length < s.sourceEventIds.length ? [`... and ${s.sourceEventIds.length - events.length} more (details.sourceEventIds)`] : []),
        ];
  const full = `${head}\n---\n${s.text}\n---\n${below.join('\n')}`;
  const totalTokens = tokenizer.count(full);
  const isTruncated = totalTokens > maxTokens;
  const text = isTruncated ? `${tokenizer.truncate(full, Math.max(1, maxTokens - 20))}\n[cut at ${maxTokens} tokens of ${totalTokens}]` : full;
  return {
    text,
    details: {
      kind: 'summary',
      id: s.id,
      project: s.project,
      depth: s.depth,
      depthName: SUMMARY_DEPTH_NAMES[s.depth],
      startMs: s.startMs,
      endMs: s.endMs,
      sessionIds: s.sessionIds,
      parentId: s.parentId,
      childIds: s.childIds,
      sourceEventIds: s.sourceEventIds,
      level: s.level,
      confidence: s.confidence,
      isCold: s.coldAt !== null,
      totalTokens,
      isTruncated,
    },
  };
}

function oneLine(text: string): string {
  const t = text.replace(/\s+/g, ' ').trim();
  return t.length > EVENT_PREVIEW_CHARS ? `${t.slice(0, EVENT_PREVIEW_CHARS - 1)}…` : t;
}
