import { EngramError } from '../../errors.js';
import { isToolCall } from './assembler.js';
import type { CodexDocument, ContextPack, PackBlock, PackHistoryItem } from './context-pack.js';
import type { BlockKind } from './blocks.js';

/**
 * Turns a pack into what a model API takes. Formatters are pure and must keep the pack's prefix property:
 * appending history must not change the rendering of anything before it (Deep Memory §1, §6).
 */
export type Formatter<TOutput = unknown> = (pack: ContextPack) => TOutput;

/**
 * Named formatters (Deep Memory §6, "pluggable context formatters"): extensions register their own
 * (a prompt template, a provider's wire format) without touching the assembler.
 */
export class FormatterRegistry {
  private readonly formatters = new Map<string, Formatter>();

  /**
   * Adds a formatter under `name`.
   * @throws EngramError `INVALID_INPUT` (`field: 'name'`) when the name is empty or already registered.
   */
  register<TOutput>(name: string, formatter: Formatter<TOutput>): this {
    if (name === '') throw new EngramError('INVALID_INPUT', 'name: must not be empty', { field: 'name' });
    if (this.formatters.has(name)) {
      throw new EngramError('INVALID_INPUT', `name: a formatter named ${JSON.stringify(name)} is already registered`, { field: 'name' });
    }
    this.formatters.set(name, formatter);
    return this;
  }

  /**
   * The formatter registered under `name`; `TOutput` is the caller's assertion of its output type.
   * @throws EngramError `NOT_FOUND` listing the registered names.
   */
  get<TOutput = unknown>(name: string): Formatter<TOutput> {
    const formatter = this.formatters.get(name);
    if (!formatter) {
      throw new EngramError('NOT_FOUND', `no formatter named ${JSON.stringify(name)}; registered: ${this.names().join(', ')}`, {
        field: 'name',
        registered: this.names(),
      });
    }
    return formatter as Formatter<TOutput>;
  }

  /** True when a formatter is registered under `name`. */
  has(name: string): boolean {
    return this.formatters.has(name);
  }

  /** Registered names, sorted. */
  names(): string[] {
    return [...this.formatters.keys()].sort();
  }
}

/** A registry holding the built-ins: `text` (`formatText`), `openai` (`formatOpenAi`), `anthropic` (`formatAnthropic`). */
export function createFormatterRegistry(): FormatterRegistry {
  return new FormatterRegistry()
    .register('text', formatText)
    .register('openai', formatOpenAi)
    .register('anthropic', (pack: ContextPack) => formatAnthropic(pack));
}

/** A block framed for a prompt: `<kind>\n...\n</kind>`. XML-like tags, as they cannot collide with Markdown in documents. */
export function renderSection(block: Pick<PackBlock, 'kind' | 'text'>): string {
  return `<${block.kind}>\n${block.text}\n</${block.kind}>`;
}

/**
 * The pack as one string: every non-empty block as a `renderSection`, in pack order, separated by a blank line.
 * The history section renders `PackBlock.text` (one `[T12 role] text` entry per item), so a new item only
 * appends before `</history>` and everything before it stays a byte-identical prefix.
 */
export function formatText(pack: ContextPack): string {
  return pack.blocks
    .filter((b) => b.text !== '')
    .map(renderSection)
    .join('\n\n');
}

// --- conversation planning (shared by the message formats) ------------------------------------------------

/**
 * A history item rendered as plain text, or a tool round: assistant tool calls followed by their results.
 * Both APIs reject a tool call without its result and a result without its call, so unpaired tool items
 * (the call fell out of the window, or the result is not recorded yet) become labelled text.
 */
type ConversationStep =
  | { type: 'text'; role: 'user' | 'assistant' | 'system'; text: string; item: PackHistoryItem }
  | { type: 'tool_round'; calls: PackHistoryItem[]; results: PackHistoryItem[] };

function planConversation(items: readonly PackHistoryItem[]): ConversationStep[] {
  const callAt = new Map<string, number>();
  items.forEach((item, i) => {
    if (isToolCall(item) && !callAt.has(item.toolCallId as string)) callAt.set(item.toolCallId as string, i);
  });
  const resultAt = new Map<string, number>();
  items.forEach((item, i) => {
    const id = item.toolCallId;
    if (item.role === 'tool' && id !== undefined && (callAt.get(id) ?? Infinity) < i && !resultAt.has(id)) resultAt.set(id, i);
  });
  const isPairedCall = (i: number): boolean => {
    const item = items[i];
    return item !== undefined && isToolCall(item) && callAt.get(item.toolCallId as string) === i && resultAt.has(item.toolCallId as string);
  };

  const steps: ConversationStep[] = [];
  const consumed = new Set<number>();
  for (let i = 0; i < items.length; i++) {
    if (consumed.has(i)) continue;
    const item = items[i] as PackHistoryItem;
    if (isPairedCall(i)) {
      // Consecutive calls are one assistant turn (parallel tool calls); their results follow it directly,
      // pulled forward if something was logged in between, because both APIs require that adjacency.
      const calls: PackHistoryItem[] = [];
      for (let j = i; isPairedCall(j) && !consumed.has(j); j++) {
        calls.push(items[j] as PackHistoryItem);
        consumed.add(j);
      }
      const results = calls.map((c) => {
        const at = resultAt.get(c.toolCallId as string) as number;
        consumed.add(at);
        return items[at] as PackHistoryItem;
      });
      steps.push({ type: 'tool_round', calls, results });
    } else if (isToolCall(item)) {
      steps.push({ type: 'text', role: 'assistant', text: `[tool call ${toolRef(item)}] ${item.text}`, item });
    } else if (item.role === 'tool') {
      steps.push({ type: 'text', role: 'user', text: `[tool result ${toolRef(item)}] ${item.text}`, item });
    } else {
      steps.push({ type: 'text', role: item.role, text: item.text, item });
    }
  }
  return steps;
}

function toolRef(item: PackHistoryItem): string {
  return [item.toolName ?? 'tool', item.toolCallId === undefined ? '' : `#${item.toolCallId}`].filter((s) => s !== '').join(' ');
}

/** Name used when a tool call carries none: both APIs require one. */
const UNKNOWN_TOOL_NAME = 'unknown_tool';

/** Blocks before `history` (the stable prefix) and after it (minus the query), each non-empty, in pack order. */
function splitAroundHistory(pack: ContextPack): { before: PackBlock[]; after: PackBlock[]; query: PackBlock | undefined } {
  const historyAt = pack.blocks.findIndex((b) => b.kind === 'history');
  const nonEmpty = (b: PackBlock): boolean => b.text !== '' && b.kind !== 'history' && b.kind !== 'query';
  return {
    before: pack.blocks.slice(0, historyAt).filter(nonEmpty),
    after: pack.blocks.slice(historyAt + 1).filter(nonEmpty),
    query: pack.blocks.find((b) => b.kind === 'query' && b.text !== ''),
  };
}

// --- OpenAI Chat Completions -------------------------------------------------------------------------------

/** A tool call in an assistant message (Chat Completions). */
export interface OpenAiToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A Chat Completions message of the kinds this formatter emits. */
export type OpenAiMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: OpenAiToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

/** The `messages` of a Chat Completions request; the caller adds `model`, `tools` and the rest. */
export interface OpenAiChatPayload {
  messages: OpenAiMessage[];
}

/**
 * Chat Completions messages: one system message per non-empty block before the history (identity, codex,
 * karma, markers by default), then the history as user/assistant/tool messages (tool calls as
 * `tool_calls`, each followed by its `tool` result), then a system message per block placed after the
 * history (the task state by default), then the query as the final user message. OpenAI caches prefixes
 * automatically, so there are no markers to place; the order alone decides reuse.
 */
export function formatOpenAi(pack: ContextPack): OpenAiChatPayload {
  const { before, after, query } = splitAroundHistory(pack);
  const messages: OpenAiMessage[] = before.map((b) => ({ role: 'system', content: renderSection(b) }));
  for (const step of planConversation(pack.history)) {
    if (step.type === 'text') {
      messages.push(step.role === 'assistant' ? { role: 'assistant', content: step.text } : { role: step.role, content: step.text });
      continue;
    }
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: step.calls.map((c) => ({
        id: c.toolCallId as string,
        type: 'function',
        function: { name: c.toolName ?? UNKNOWN_TOOL_NAME, arguments: c.text },
      })),
    });
    for (const r of step.results) messages.push({ role: 'tool', tool_call_id: r.toolCallId as string, content: r.text });
  }
  for (const b of after) messages.push({ role: 'system', content: renderSection(b) });
  if (query) messages.push({ role: 'user', content: query.text });
  return { messages };
}

// --- Anthropic Messages --------------------------------------------------------------------------------------

/** An Anthropic prompt-cache breakpoint: the prefix up to and including the block is cached. */
export interface AnthropicCacheControl {
  type: 'ephemeral';
}

/** A text content block (system or message). */
export interface AnthropicTextBlock {
  type: 'text';
  text: string;
  cache_control?: AnthropicCacheControl;
}

/** A tool call in an assistant turn; `input` is the call's arguments as an object. */
export interface AnthropicToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: Record<string, unknown>;
  cache_control?: AnthropicCacheControl;
}

/** A tool's result; it must open the user turn right after the `tool_use` turn with the same id. */
export interface AnthropicToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content?: string;
  cache_control?: AnthropicCacheControl;
}

/** Any content block this formatter emits. */
export type AnthropicContentBlock = AnthropicTextBlock | AnthropicToolUseBlock | AnthropicToolResultBlock;

/** A conversation turn; consecutive same-role turns are merged into one. */
export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: AnthropicContentBlock[];
}

/** The `system` and `messages` of a Messages API request; the caller adds `model`, `max_tokens`, `tools`. */
export interface AnthropicMessagesPayload {
  system: AnthropicTextBlock[];
  messages: AnthropicMessage[];
}

/** The Messages API accepts at most this many `cache_control` breakpoints per request. */
export const ANTHROPIC_MAX_BREAKPOINTS = 4;

/**
 * Default breakpoint positions: the end of each of these blocks (or, when one is empty, of the nearest
 * non-empty block before it). Each boundary separates content that changes at a different rate:
 * 1. `codex`: identity + codex, the large static floor; survives karma promotions and compactions.
 * 2. `karma`: survives compactions (which rewrite the history after the stable head, if any).
 * 3. `markers`: survives every turn between compactions; when the history starts with the cache's stable head
 *    (`HistoryItem.isCacheHeadEnd`, see `context/cache-head.ts`), it goes at the head's end instead, which a
 *    compaction leaves unchanged too.
 * 4. `history`: the last history block; history only appends, so next turn's lookup finds this prefix
 *    (Anthropic looks back about 20 blocks from a breakpoint for an earlier cache entry).
 * Nothing after the history gets one: the task state and the query change too often to pay a cache write.
 * Prefixes shorter than the model's minimum cacheable length (1024-4096 tokens) are simply not cached.
 */
export const DEFAULT_ANTHROPIC_BREAKPOINTS: readonly BlockKind[] = ['codex', 'karma', 'markers', 'history'];

/** Options of `formatAnthropic`. */
export interface AnthropicFormatOptions {
  /** Blocks whose end gets a `cache_control` breakpoint; at most 4. Default `DEFAULT_ANTHROPIC_BREAKPOINTS`. */
  breakpointAfter?: readonly BlockKind[];
}

/** A content block tagged with the pack block it came from, while breakpoints are placed. */
interface Tagged<T> {
  kind: BlockKind;
  block: T;
}

/** Placed before history that starts with an assistant turn: the Messages API expects a user turn first. */
const CONTINUATION_NOTE = '[earlier turns of this conversation are not shown]';

/**
 * Messages API payload: `system` holds one text block per non-empty block before the history; `messages` holds
 * the history (tool calls as `tool_use`, results as `tool_result` in the next user message, consecutive
 * same-role turns merged), then one user message with the blocks after the history (the task state by
 * default) and the query. `cache_control` breakpoints go at the ends of `breakpointAfter` blocks (see
 * `DEFAULT_ANTHROPIC_BREAKPOINTS`); a breakpoint does not change the cached bytes, so moving the history
 * breakpoint each turn keeps the earlier prefix reusable.
 * @throws EngramError `INVALID_INPUT` (`field: 'breakpointAfter'`) for more than 4 breakpoints.
 */
export function formatAnthropic(pack: ContextPack, options: AnthropicFormatOptions = {}): AnthropicMessagesPayload {
  const breakpointAfter = options.breakpointAfter ?? DEFAULT_ANTHROPIC_BREAKPOINTS;
  if (breakpointAfter.length > ANTHROPIC_MAX_BREAKPOINTS) {
    throw new EngramError('INVALID_INPUT', `breakpointAfter: at most ${ANTHROPIC_MAX_BREAKPOINTS} breakpoints, got ${breakpointAfter.length}`, {
      field: 'breakpointAfter',
    });
  }
  const { before, after, query } = splitAroundHistory(pack);
  const system: Tagged<AnthropicTextBlock>[] = before.map((b) => ({ kind: b.kind, block: { type: 'text', text: renderSection(b) } }));
  const messages: { role: 'user' | 'assistant'; content: Tagged<AnthropicContentBlock>[] }[] = [];
  const push = (role: 'user' | 'assistant', blocks: Tagged<AnthropicContentBlock>[]): void => {
    if (blocks.length === 0) return;
    const last = messages[messages.length - 1];
    // Merged rather than sent as consecutive same-role turns, which some Messages API endpoints reject.
    if (last?.role === role) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  };
  const text = (kind: BlockKind, t: string): Tagged<AnthropicContentBlock>[] =>
    t.trim() === '' ? [] : [{ kind, block: { type: 'text', text: t } }];

  // The last content block of the cache's stable head, if the pack has one (see `placeBreakpoints`).
  let headEnd: Tagged<AnthropicContentBlock> | undefined;
  const lastPushed = (): Tagged<AnthropicContentBlock> | undefined => messages.at(-1)?.content.at(-1);
  for (const step of planConversation(pack.history)) {
    if (step.type === 'text') {
      if (step.role === 'assistant') push('assistant', text('history', step.text));
      else push('user', text('history', step.role === 'system' ? `[system] ${step.text}` : step.text));
      if (step.item.isCacheHeadEnd === true) headEnd = lastPushed();
      continue;
    }
    push(
      'assistant',
      step.calls.map((c) => ({
        kind: 'history',
        block: { type: 'tool_use', id: anthropicId(c.toolCallId as string), name: anthropicToolName(c.toolName), input: toolInput(c.text) },
      })),
    );
    // tool_result blocks must open the user turn that follows the tool_use turn; they do, as push() only
    // appends to a user turn and the previous turn here is the assistant's.
    push(
      'user',
      step.results.map((r) => ({
        kind: 'history',
        block:
          r.text === ''
            ? { type: 'tool_result', tool_use_id: anthropicId(r.toolCallId as string) }
            : { type: 'tool_result', tool_use_id: anthropicId(r.toolCallId as string), content: r.text },
      })),
    );
    if ([...step.calls, ...step.results].some((i) => i.isCacheHeadEnd === true)) headEnd = lastPushed();
  }
  if (messages[0]?.role === 'assistant') messages.unshift({ role: 'user', content: text('history', CONTINUATION_NOTE) });
  push('user', [...after.flatMap((b) => text(b.kind, renderSection(b))), ...(query ? text('query', query.text) : [])]);

  placeBreakpoints(pack, breakpointAfter, [...system, ...messages.flatMap((m) => m.content)], headEnd);
  return {
    system: system.map((t) => t.block),
    messages: messages.map((m) => ({ role: m.role, content: m.content.map((t) => t.block) })),
  };
}

/**
 * Marks the last content block at or before the end of each requested pack block; duplicates collapse. The
 * `markers` breakpoint marks the prefix that survives compactions: when the history starts with the cache's stable
 * head (`headEnd`, see `HistoryItem.isCacheHeadEnd`), that prefix ends with the head, so the breakpoint goes there.
 */
function placeBreakpoints(pack: ContextPack, after: readonly BlockKind[], stream: Tagged<AnthropicContentBlock>[], headEnd?: Tagged<AnthropicContentBlock>): void {
  const position = new Map(pack.blocks.map((b, i) => [b.kind, i]));
  for (const kind of after) {
    if (kind === 'markers' && headEnd) {
      headEnd.block.cache_control = { type: 'ephemeral' };
      continue;
    }
    const limit = position.get(kind) ?? -1;
    let target: Tagged<AnthropicContentBlock> | undefined;
    for (const tagged of stream) if ((position.get(tagged.kind) ?? Infinity) <= limit) target = tagged;
    if (target) target.block.cache_control = { type: 'ephemeral' };
  }
}

/**
 * The Messages API accepts tool ids and names of `[a-zA-Z0-9_-]` only (names up to 64); ids imported from other
 * systems (`call.1`, `fc:7`) are mapped the same way on the call and its result, so the pair still matches.
 */
function anthropicId(id: string): string {
  return id.replace(/[^a-zA-Z0-9_-]/g, '_');
}

function anthropicToolName(name: string | undefined): string {
  return (name ?? UNKNOWN_TOOL_NAME).replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64) || UNKNOWN_TOOL_NAME;
}

/** `tool_use.input` must be an object: a JSON object argument string is parsed, anything else is wrapped. */
function toolInput(args: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(args);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // Not JSON (a truncated call, free text): kept verbatim below.
  }
  return { arguments: args };
}

// --- artifact injectors -------------------------------------------------------------------------------------

/** An attached artifact to place in the codex: text content with a media type. */
export interface InjectableArtifact {
  /** Becomes the document id (an artifact id, a path, a URL). */
  readonly id: string;
  /** `type/subtype`, parameters allowed (`text/markdown; charset=utf-8`). */
  readonly mediaType: string;
  /** Shown as the document title; defaults to `id`. */
  readonly title?: string;
  readonly text: string;
}

/** Turns an artifact into a codex document (Deep Memory §6, "ArtifactInjectors"). Must be pure and deterministic. */
export type ArtifactInjector = (artifact: InjectableArtifact) => CodexDocument;

/**
 * Media type of a codebase snapshot: JSON `{ "root"?: string, "files": [{ "path": string, "text"?: string }] }`.
 * The built-in injector renders it as a sorted file tree followed by the contents of the files that have text.
 */
export const CODEBASE_MEDIA_TYPE = 'application/vnd.engram.codebase+json';

/**
 * Artifact injectors by media type, so new kinds of attachment plug in without touching the assembler.
 * Lookup order: the exact `type/subtype`, then `type/*`, then `*\/*`.
 */
export class ArtifactInjectorRegistry {
  private readonly injectors = new Map<string, ArtifactInjector>();

  /**
   * Registers (or replaces) the injector for a media type or a `type/*` / `*\/*` pattern.
   * @throws EngramError `INVALID_INPUT` (`field: 'mediaType'`) for a malformed media type.
   */
  register(mediaType: string, injector: ArtifactInjector): this {
    this.injectors.set(normalizeMediaType(mediaType), injector);
    return this;
  }

  /** The injector that would handle `mediaType`, if any. */
  resolve(mediaType: string): ArtifactInjector | undefined {
    const exact = normalizeMediaType(mediaType);
    const [type] = exact.split('/');
    return this.injectors.get(exact) ?? this.injectors.get(`${type}/*`) ?? this.injectors.get('*/*');
  }

  /**
   * The artifact as a codex document.
   * @throws EngramError `INVALID_INPUT` (`field: 'mediaType'`) when no injector handles the media type.
   */
  inject(artifact: InjectableArtifact): CodexDocument {
    const injector = this.resolve(artifact.mediaType);
    if (!injector) {
      throw new EngramError('INVALID_INPUT', `mediaType: no artifact injector for ${JSON.stringify(artifact.mediaType)}`, {
        field: 'mediaType',
        registered: [...this.injectors.keys()].sort(),
      });
    }
    return injector(artifact);
  }
}

/** Built-in injector for text (`text/*`, JSON, XML, YAML): the text verbatim. */
export const injectText: ArtifactInjector = (artifact) => ({ id: artifact.id, title: artifact.title ?? artifact.id, text: artifact.text });

/**
 * Built-in injector for `CODEBASE_MEDIA_TYPE`: an indented tree of every path (sorted, so the rendering is
 * stable whatever order the snapshot lists them in), then `--- path ---` and the text of each file that has one.
 * @throws EngramError `INVALID_INPUT` (`field: 'text'`) when the artifact is not such a JSON document.
 */
export const injectCodebase: ArtifactInjector = (artifact) => {
  const files = parseCodebase(artifact.text);
  const paths = files.map((f) => f.path).sort(byCodeUnit);
  const withText = files.filter((f) => typeof f.text === 'string').sort((a, b) => byCodeUnit(a.path, b.path));
  const sections = [renderTree(paths), ...withText.map((f) => `--- ${f.path} ---\n${f.text as string}`)];
  return { id: artifact.id, title: artifact.title ?? artifact.id, text: sections.join('\n\n') };
};

/** A registry with the built-ins: `text/*`, `application/json`, `application/xml`, `application/yaml`, the codebase type. */
export function createArtifactInjectorRegistry(): ArtifactInjectorRegistry {
  return new ArtifactInjectorRegistry()
    .register('text/*', injectText)
    .register('application/json', injectText)
    .register('application/xml', injectText)
    .register('application/yaml', injectText)
    .register(CODEBASE_MEDIA_TYPE, injectCodebase);
}

function normalizeMediaType(mediaType: string): string {
  const base = (mediaType.split(';')[0] ?? '').trim().toLowerCase();
  if (!/^[a-z0-9*][a-z0-9!#$&^_.+-]*\/[a-z0-9*][a-z0-9!#$&^_.+-]*$/.test(base)) {
    throw new EngramError('INVALID_INPUT', `mediaType: ${JSON.stringify(mediaType)} is not a type/subtype`, { field: 'mediaType' });
  }
  return base;
}

function parseCodebase(text: string): { path: string; text?: unknown }[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new EngramError('INVALID_INPUT', 'text: a codebase artifact must be JSON', { field: 'text' }, { cause: err });
  }
  const files = (parsed as { files?: unknown } | null)?.files;
  if (!Array.isArray(files) || !files.every((f) => typeof (f as { path?: unknown } | null)?.path === 'string')) {
    throw new EngramError('INVALID_INPUT', 'text: a codebase artifact needs files: [{ path, text? }]', { field: 'text.files' });
  }
  return files as { path: string; text?: unknown }[];
}

function renderTree(paths: readonly string[]): string {
  const lines: string[] = [];
  let previous: string[] = [];
  for (const path of paths) {
    const parts = path.split('/').filter((p) => p !== '');
    let common = 0;
    while (common < parts.length - 1 && common < previous.length - 1 && parts[common] === previous[common]) common++;
    for (let d = common; d < parts.length; d++) {
      lines.push(`${'  '.repeat(d)}${parts[d] as string}${d < parts.length - 1 ? '/' : ''}`);
    }
    previous = parts;
  }
  return lines.join('\n');
}

function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
