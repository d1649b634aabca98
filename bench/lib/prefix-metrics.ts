import type { ContextPack } from '../../src/context/assembly/context-pack.js';
import type { BlockKind } from '../../src/context/assembly/blocks.js';
import { prefixReuse, prefixReuseTokens } from '../../src/context/assembly/blocks.js';
import type { AnthropicContentBlock, AnthropicMessagesPayload } from '../../src/context/assembly/formatters.js';
import { renderSection } from '../../src/context/assembly/formatters.js';
import type { Tokenizer } from '../../src/providers/tokenizer.js';

/**
 * Measures of prefix reuse between two consecutive renderings of a context pack, for the context benchmark.
 * Pure: everything is computed from the renderings and the pack.
 */

/** Where a block sits in `formatText(pack)`: `[start, end)` in UTF-16 code units. */
export interface BlockSpan {
  kind: BlockKind;
  start: number;
  end: number;
}

/** Spans of the non-empty blocks in `formatText(pack)` (sections joined by a blank line), in pack order. */
export function textBlockSpans(pack: ContextPack): BlockSpan[] {
  const spans: BlockSpan[] = [];
  let at = 0;
  for (const block of pack.blocks) {
    if (block.text === '') continue;
    if (spans.length > 0) at += 2; // '\n\n'
    const length = renderSection(block).length;
    spans.push({ kind: block.kind, start: at, end: at + length });
    at += length;
  }
  return spans;
}

/**
 * Tokens of each block that lie after the shared prefix (what a prefix cache must process again), counted
 * block by block on the rendering. The separators between sections are not attributed.
 */
export function unsharedTokensByBlock(rendered: string, spans: readonly BlockSpan[], sharedChars: number, tokenizer: Tokenizer): Partial<Record<BlockKind, number>> {
  const out: Partial<Record<BlockKind, number>> = {};
  for (const span of spans) {
    const from = Math.max(span.start, sharedChars);
    if (from < span.end) out[span.kind] = tokenizer.count(rendered.slice(from, span.end));
  }
  return out;
}

/** The block whose rendering holds the first character that differs from the previous rendering. */
export function divergenceBlock(spans: readonly BlockSpan[], sharedChars: number): BlockKind | 'none' {
  for (const span of spans) if (sharedChars < span.end) return span.kind;
  return 'none';
}

/**
 * One content block of an Anthropic request, in request order (system blocks, then message blocks). `key`
 * identifies it for prefix matching: the block without `cache_control` (a breakpoint does not change the
 * cached bytes), its role and whether it opens a message (the same blocks split into other messages are a
 * different prompt). `text` is what is counted as tokens: the block's text, or a tool block's id, name and
 * payload, preceded by the role when the block opens a message.
 */
export interface AnthropicUnit {
  key: string;
  text: string;
  hasBreakpoint: boolean;
}

export function anthropicUnits(payload: AnthropicMessagesPayload): AnthropicUnit[] {
  const units: AnthropicUnit[] = payload.system.map((b) => unit('system', true, b));
  for (const message of payload.messages) message.content.forEach((b, i) => units.push(unit(message.role, i === 0, b)));
  return units;
}

function unit(role: string, opensMessage: boolean, block: AnthropicContentBlock): AnthropicUnit {
  const { cache_control: cacheControl, ...bare } = block;
  let body: string;
  if (bare.type === 'text') body = bare.text;
  else if (bare.type === 'tool_use') body = `[tool_use ${bare.id} ${bare.name}] ${JSON.stringify(bare.input)}`;
  else body = `[tool_result ${bare.tool_use_id}] ${bare.content ?? ''}`;
  return {
    key: JSON.stringify([role, opensMessage, bare]),
    text: opensMessage ? `<${role}>\n${body}` : body,
    hasBreakpoint: cacheControl !== undefined,
  };
}

/** The request as one string (units joined by newlines): what `prefixReuseTokens` compares for this format. */
export function linearizeAnthropic(payload: AnthropicMessagesPayload): string {
  return anthropicUnits(payload)
    .map((u) => u.text)
    .join('\n');
}

/**
 * Anthropic prompt caching as documented: a request writes a cache entry for the prefix ending at each of its
 * `cache_control` breakpoints (if that prefix has at least the model's minimum, 1024 tokens for Sonnet-class
 * models, 2048-4096 for others); a later request reads the longest such entry whose prefix it repeats exactly,
 * but looks for it only at block boundaries up to about 20 blocks before each of its own breakpoints.
 */
export interface AnthropicCacheModel {
  /** Default 20. */
  lookbackBlocks?: number;
  /** Default 1024. */
  minCacheableTokens?: number;
}

export interface AnthropicCacheRead {
  /** Tokens of the current request read from the entries the previous request wrote. */
  readTokens: number;
  totalTokens: number;
  ratio: number;
  /**
   * `hit`, or why the read is smaller than the shared prefix allows: `no_shared_breakpoint` (every previous
   * breakpoint lies past the divergence), `lookback` (the last shared breakpoint is more than
   * `lookbackBlocks` blocks before every current one), `too_short` (only prefixes under the minimum match).
   */
  outcome: 'hit' | 'no_shared_breakpoint' | 'lookback' | 'too_short';
}

/** What the current request reads from the cache entries of the previous one, under `AnthropicCacheModel`. */
export function anthropicCacheRead(
  previous: readonly AnthropicUnit[],
  current: readonly AnthropicUnit[],
  tokenizer: Tokenizer,
  model: AnthropicCacheModel = {},
): AnthropicCacheRead {
  const lookback = model.lookbackBlocks ?? 20;
  const minTokens = model.minCacheableTokens ?? 1024;
  const prefixTokens = (n: number): number => tokenizer.count(current.slice(0, n).map((u) => u.text).join('\n'));
  const totalTokens = prefixTokens(current.length);
  let shared = 0;
  while (shared < previous.length && shared < current.length && previous[shared]!.key === current[shared]!.key) shared++;
  const currentBreakpoints = current.flatMap((u, i) => (u.hasBreakpoint ? [i] : []));
  // Previous entries inside the shared prefix, longest first.
  const entries = previous.flatMap((u, i) => (u.hasBreakpoint && i < shared ? [i] : [])).reverse();
  if (entries.length === 0) return { readTokens: 0, totalTokens, ratio: 0, outcome: 'no_shared_breakpoint' };
  let sawReachable = false;
  for (const b of entries) {
    if (!currentBreakpoints.some((c) => c >= b && c - b < lookback)) continue;
    sawReachable = true;
    const readTokens = prefixTokens(b + 1);
    if (readTokens >= minTokens) return { readTokens, totalTokens, ratio: totalTokens === 0 ? 0 : readTokens / totalTokens, outcome: 'hit' };
  }
  return { readTokens: 0, totalTokens, ratio: 0, outcome: sawReachable ? 'too_short' : 'lookback' };
}

/** `prefixReuseTokens` of two renderings plus the shared characters, which the attribution above needs. */
export function tokenReuse(previous: string, current: string, tokenizer: Tokenizer): { sharedChars: number; sharedTokens: number; totalTokens: number; ratio: number } {
  const r = prefixReuseTokens(previous, current, tokenizer);
  return { sharedChars: prefixReuse(previous, current).sharedPrefixChars, sharedTokens: r.sharedPrefixTokens, totalTokens: r.currentTokens, ratio: r.ratio };
}
