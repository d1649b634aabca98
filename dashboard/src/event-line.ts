/**
 * One event as one readable line of the session timeline: a tool call as its tool's name and the part of its input a
 * person looks for (a Bash command, the file an Edit changes, the items of a TodoWrite), not its raw JSON; a tool
 * result as its first line. Hosts name tools differently (Claude Code, Codex, SWE-agent, OpenHands): the shapes are
 * the ones src/consolidate/work-log.ts reads.
 */

export interface TimelineEvent {
  kind: string;
  content: string;
  toolName?: string;
  tags?: string[];
}

/** The tag of events Engram wrote itself (src/model/event.ts DERIVED_EVENT_TAG): not conversation. */
export const DERIVED_TAG = 'engram:derived';
const MAX_CHARS = 300;

export function isDerived(e: TimelineEvent): boolean {
  return e.tags?.includes(DERIVED_TAG) ?? false;
}

/** The text of the event's line (the tool name is shown apart). */
export function eventText(e: TimelineEvent): string {
  if (e.kind === 'tool_call') return toolCallText(e.toolName ?? '', e.content);
  return oneLine(e.content);
}

/** A tool call's input, readable. */
export function toolCallText(tool: string, content: string): string {
  const args = parseObject(content);
  if (!args) return oneLine(content);
  const str = (...keys: string[]): string | undefined => keys.map((k) => args[k]).find((v): v is string => typeof v === 'string' && v.length > 0);
  const name = tool.toLowerCase();
  if (Array.isArray(args.todos)) return planText(args.todos, 'content');
  if (Array.isArray(args.plan)) return planText(args.plan, 'step');
  if (/^apply_patch$/.test(name) || typeof args.input === 'string' && /^\*\*\* Begin Patch/m.test(args.input)) {
    const text = str('input', 'patch') ?? '';
    const files = [...text.matchAll(/^\*\*\* (Add|Update|Delete) File: (.+?)\s*$/gm)].map((m) => `${m[1]!.toLowerCase()} ${m[2]}`);
    return oneLine(files.join(', ') || text);
  }
  const command = args.command ?? args.cmd;
  if (Array.isArray(command) && command.every((c) => typeof c === 'string')) {
    const argv = command as string[];
    const script = argv.findIndex((p, i) => i > 0 && /^-\w*c$/.test(p));
    return oneLine(`$ ${script >= 0 && argv[script + 1] !== undefined ? argv[script + 1] : argv.join(' ')}`);
  }
  const path = str('file_path', 'notebook_path', 'path', 'filePath', 'target_file', 'filename');
  if (typeof command === 'string' && path !== undefined) return oneLine(`${command} ${path}`); // str_replace_editor
  if (typeof command === 'string') return oneLine(`$ ${command}`);
  if (path !== undefined) {
    const edits = Array.isArray(args.edits) ? ` (${args.edits.length} edits)` : '';
    const range = typeof args.offset === 'number' ? ` from line ${args.offset}` : '';
    return oneLine(`${path}${edits}${range}`);
  }
  const pattern = str('pattern', 'query', 'url', 'description', 'prompt', 'subject');
  if (pattern !== undefined) {
    const where = str('path', 'glob');
    return oneLine(where ? `${pattern} in ${where}` : pattern);
  }
  // Anything else: its string and number fields, `key: value`.
  const fields = Object.entries(args)
    .filter(([, v]) => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean')
    .map(([k, v]) => `${k}: ${String(v)}`);
  return oneLine(fields.join(', ') || content);
}

function planText(items: unknown[], field: string): string {
  const texts = items.flatMap((t) => (typeof t === 'object' && t !== null && typeof (t as Record<string, unknown>)[field] === 'string' ? [t as Record<string, unknown>] : []));
  const doing = texts.find((t) => t.status === 'in_progress');
  const done = texts.filter((t) => t.status === 'completed').length;
  const head = `${texts.length} item${texts.length === 1 ? '' : 's'}, ${done} done`;
  return oneLine(doing ? `${head}; doing: ${String(doing[field])}` : `${head}: ${texts.map((t) => String(t[field])).join('; ')}`);
}

function parseObject(text: string): Record<string, unknown> | undefined {
  const t = text.trimStart();
  if (!t.startsWith('{')) return undefined;
  try {
    const v = JSON.parse(t) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function oneLine(text: string): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > MAX_CHARS ? `${one.slice(0, MAX_CHARS - 1)}…` : one;
}

/** Splits text at its `[evt_...]` / `[sum_...]` citations: the text parts and the cited ids, in order. */
export function citationParts(text: string): Array<{ text: string } | { id: string }> {
  const out: Array<{ text: string } | { id: string }> = [];
  let at = 0;
  for (const m of text.matchAll(/\[((?:evt|sum|kar)_[0-9A-Za-z]+)\]/g)) {
    if (m.index! > at) out.push({ text: text.slice(at, m.index) });
    out.push({ id: m[1]! });
    at = m.index! + m[0].length;
  }
  if (at < text.length) out.push({ text: text.slice(at) });
  return out;
}

/** A summary line for a list: citations dropped. */
export function withoutCitations(text: string): string {
  return text
    .replace(/\s*\[(?:evt|sum|kar)_[0-9A-Za-z]+\]/g, '')
    .replace(/\s+/g, ' ')
    .trim();
}
