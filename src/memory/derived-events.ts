import { DERIVED_EVENT_TAG } from '../model/event.js';

/**
 * Engram's own output coming back into a transcript (issue #29, item 6). An agent that called `recall` gets quoted
 * evidence as a tool result; a hook injected a brief; both land in the host's transcript, which the hooks import
 * after every turn. Stored as they are (lossless), they would then outrank the original turns they quote: in the
 * example agent's compaction demo the top hit of a recall was an earlier recall's result (`> > >`), the original
 * turn only second inside it. So such events are tagged {@link DERIVED_EVENT_TAG} when stored: their text is not
 * indexed (ingest.ts), and recall never returns them as evidence.
 *
 * Recognised by what only Engram writes:
 * - a tool call or result of Engram's MCP server (`mcp__engram__<tool>` in Claude Code, `engram__<tool>` or
 *   `engram.<tool>` in other hosts) for a tool that returns stored content;
 * - a text that starts with one of Engram's output headers (a recall pack, a brief, a prompt recall, a session
 *   pack), whatever carried it (a tool result of a host that renamed the tool, a hook's context saved as a message).
 */

/** First line of a brief injected at the start of a session (memory/session-brief.ts renders it). */
export const BRIEF_HEADER = '<engram-brief';
/** First line of the evidence injected at a prompt (memory/prompt-recall.ts renders it). */
export const PROMPT_RECALL_HEADER = '<engram-recall';

/**
 * Stored text quoted inside an injection's frame, with Engram's frame tags in it defused (`</engram-recall>` becomes
 * `<\/engram-recall>`, `<engram-brief` becomes `<\engram-brief`): a stored event (a pasted log, a web page, an
 * attacker's text) can neither close the frame it is quoted in nor open one that reads as Engram's own.
 */
export function defuseFrameTags(text: string): string {
  return text.replace(/<(\/?)(engram-)/gi, '<\\$1$2');
}

/** Engram MCP tools whose results quote stored content (a card, an expansion, recalled evidence). */
const CONTENT_TOOLS = new Set(['recall', 'expand', 'get_task_state', 'recall_tree', 'recall_summaries', 'expand_entity', 'impact', 'context']);
/** `mcp__engram__recall`, `engram__recall`, `engram.recall`, `engram/recall`. */
const ENGRAM_TOOL = /^(?:mcp__)?engram(?:__|\.|\/)([a-z_]+)$/;
/** Headers Engram's outputs start with (recall packs: memory/recall.ts; the session pack preface: interfaces/claude-code). */
const OUTPUT_HEADERS = [BRIEF_HEADER, PROMPT_RECALL_HEADER, 'Recalled from memory for "', 'No event in memory matches "', 'Engram memory of this session ('];
/** How far into a text its header may start (a host may prefix a line such as "Tool result:"). */
const HEADER_WINDOW_CHARS = 200;

/** What {@link isDerivedOutput} reads of an event input. */
export interface DerivedCandidate {
  kind: string;
  content: string;
  toolName?: string | undefined;
  tags?: readonly string[] | undefined;
}

/** Whether the event is Engram's own output come back (see the module comment). */
export function isDerivedOutput(e: DerivedCandidate): boolean {
  if (e.tags?.includes(DERIVED_EVENT_TAG)) return true;
  if (e.toolName !== undefined && (e.kind === 'tool_result' || e.kind === 'tool_call')) {
    const tool = ENGRAM_TOOL.exec(e.toolName)?.[1];
    if (tool !== undefined && CONTENT_TOOLS.has(tool)) return true;
  }
  if (e.kind === 'tool_call' || e.kind === 'decision') return false;
  const head = e.content.slice(0, HEADER_WINDOW_CHARS).trimStart();
  return OUTPUT_HEADERS.some((h) => head.startsWith(h) || (head.includes(`\n${h}`) && head.indexOf(h) < HEADER_WINDOW_CHARS));
}

/** The tags with {@link DERIVED_EVENT_TAG} added once. */
export function withDerivedTag(tags: readonly string[] | undefined): string[] {
  const out = [...(tags ?? [])];
  if (!out.includes(DERIVED_EVENT_TAG)) out.push(DERIVED_EVENT_TAG);
  return out;
}

/** Whether a stored event carries the derived tag. */
export function isDerivedEvent(e: { tags: readonly string[] }): boolean {
  return e.tags.includes(DERIVED_EVENT_TAG);
}
