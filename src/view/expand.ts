import { EngramError } from '../errors.js';
import type { ArtifactRecord } from '../model/artifact.js';
import type { EventRecord } from '../model/event.js';
import type { Tokenizer } from '../providers/tokenizer.js';
import { isUtf8Text } from '../util/is-utf8-text.js';
import { maskPrivate } from '../memory/private-spans.js';
import type { SummaryExpandDetails } from '../consolidate/summary-expand.js';

/** Default cut of `expand`: a whole typical event, or the first pages of a large tool output. */
export const DEFAULT_EXPAND_MAX_TOKENS = 4000;

/** What `expand` says about the object besides its text. */
export type ExpandDetails =
  | {
      kind: 'event';
      id: string;
      sessionId: string;
      turn: number;
      eventKind: string;
      ts: string;
      /** Set when the event holds a preview: the full content is this artifact. */
      artifactId?: string;
      totalTokens: number;
      isTruncated: boolean;
    }
  | { kind: 'artifact'; id: string; mediaType: string; sizeBytes: number; isText: false }
  | { kind: 'artifact'; id: string; mediaType: string; sizeBytes: number; isText: true; totalTokens: number; isTruncated: boolean }
  | SummaryExpandDetails;

export interface ExpandAnswer {
  /** A header line (id, session, turn, kind, time), a separator and the content, cut at `maxTokens` with a notice. */
  text: string;
  details: ExpandDetails;
}

/** Refuses a `maxTokens` that is not a whole number of at least 1. */
export function checkExpandMaxTokens(maxTokens: number): void {
  if (!Number.isInteger(maxTokens) || maxTokens < 1) {
    throw new EngramError('INVALID_INPUT', 'maxTokens: must be a whole number of at least 1', { field: 'maxTokens' });
  }
}

/**
 * One event's full stored content, cut to `maxTokens` with a notice that tells the model how much is left and
 * how to get it ({@link EngramView.expand} resolves the id and checks the reader first).
 */
export async function expandEvent(tokenizer: Tokenizer, e: EventRecord, maxTokens: number): Promise<ExpandAnswer> {
  const head =
    `${e.id}  session ${e.sessionId}  turn ${e.turn}  ${e.kind}${e.toolName ? ` (${e.toolName})` : ''}  ${e.ts}` +
    (e.artifact ? `\nThis is a preview; the full content is artifact ${e.artifact.id}: expand it to read everything.` : '');
  // Private spans are for full trust (`engram show`) only; expand serves agents.
  const body = await cutToTokens(tokenizer, maskPrivate(e.content), maxTokens);
  return {
    text: `${head}\n---\n${body.text}`,
    details: {
      kind: 'event',
      id: e.id,
      sessionId: e.sessionId,
      turn: e.turn,
      eventKind: e.kind,
      ts: e.ts,
      ...(e.artifact ? { artifactId: e.artifact.id } : {}),
      totalTokens: body.totalTokens,
      isTruncated: body.isTruncated,
    },
  };
}

/** An artifact's full original content as text (or a notice for binary content), cut like {@link expandEvent}. */
export async function expandArtifact(tokenizer: Tokenizer, record: ArtifactRecord, bytes: Buffer, maxTokens: number): Promise<ExpandAnswer> {
  const head = `${record.id}  ${record.mediaType}  ${record.sizeBytes} bytes`;
  if (!isUtf8Text(bytes)) {
    return {
      text: `${head}\nBinary content: it cannot be shown as text.`,
      details: { kind: 'artifact', id: record.id, mediaType: record.mediaType, sizeBytes: record.sizeBytes, isText: false },
    };
  }
  const body = await cutToTokens(tokenizer, maskPrivate(bytes.toString('utf8')), maxTokens);
  return {
    text: `${head}\n---\n${body.text}`,
    details: {
      kind: 'artifact',
      id: record.id,
      mediaType: record.mediaType,
      sizeBytes: record.sizeBytes,
      isText: true,
      totalTokens: body.totalTokens,
      isTruncated: body.isTruncated,
    },
  };
}

/**
 * Cuts text to `maxTokens` with the engine's tokenizer, telling the model how much is left and how to get it. The
 * whole text is counted in steps that yield to the event loop when the tokenizer can (an 8 MiB artifact took
 * 280 ms to count in one go, during which a server answered nothing).
 */
async function cutToTokens(tokenizer: Tokenizer, text: string, maxTokens: number): Promise<{ text: string; totalTokens: number; isTruncated: boolean }> {
  const totalTokens = tokenizer.countAsync ? await tokenizer.countAsync(text) : tokenizer.count(text);
  if (totalTokens <= maxTokens) return { text, totalTokens, isTruncated: false };
  const kept = tokenizer.truncate(text, maxTokens);
  const more = totalTokens - tokenizer.count(kept);
  return {
    text: `${kept}\n[truncated: ${more} more tokens; ask with a larger maxTokens or recall a narrower query]`,
    totalTokens,
    isTruncated: true,
  };
}
