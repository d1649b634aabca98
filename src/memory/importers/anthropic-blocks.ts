import type { EventInput, InputEventKind as EventKind } from '../../model/event.js';
import { base64ByteLength, compactEvent, eventItem, formatBytes, isRecord, issueItem, skipItem } from './import-item.js';
import type { ImportItem } from './types.js';

/**
 * Converts Anthropic Messages API content (a string or an array of content blocks) into events. Shared by
 * the anthropic importer and the Claude Code importer, whose records carry the same messages.
 */

/** One converted block: an event, or why the block could not be or was not stored. */
export type ConvertedBlock =
  | { type: 'event'; event: EventInput; source: string }
  | { type: 'issue'; message: string; field: string }
  | { type: 'skip'; reason: string };

export interface AnthropicContentContext {
  /** The message role: `user`, `assistant` or `system`; decides the kind of text and media blocks. */
  role: 'user' | 'assistant' | 'system';
  /** Events get `<keyPrefix>:<blockIndex>`; media inside a tool result `<keyPrefix>:<blockIndex>:<partIndex>`. */
  keyPrefix: string;
  /** Path of the content in the source, for issues: `messages[3].content`. */
  field: string;
  /** Tool names by tool-use id, filled from tool_use blocks and read by tool_result blocks (shared per file). */
  toolNames: Map<string, string>;
  ts?: string | number;
  /** Tags every event of this message gets (e.g. `sidechain`). */
  tags?: readonly string[];
  /** Meta every event of this message gets. */
  meta?: Record<string, unknown>;
}

const TOOL_CALL_BLOCKS = new Set(['tool_use', 'server_tool_use', 'mcp_tool_use']);
const TEXT_RESULT_BLOCKS = new Set(['tool_result', 'mcp_tool_result']);
const MEDIA_BLOCKS = new Set(['image', 'document']);

export function convertAnthropicContent(content: unknown, ctx: AnthropicContentContext): ConvertedBlock[] {
  const textKind: EventKind = ctx.role;
  if (typeof content === 'string') {
    return [{ type: 'event', event: build(ctx, textKind, content, `${ctx.keyPrefix}:0`), source: ctx.field }];
  }
  if (!Array.isArray(content)) {
    return [{ type: 'issue', message: `${ctx.field}: expected a string or an array of content blocks`, field: ctx.field }];
  }
  const out: ConvertedBlock[] = [];
  content.forEach((block: unknown, index) => {
    const field = `${ctx.field}[${index}]`;
    const key = `${ctx.keyPrefix}:${index}`;
    if (!isRecord(block) || typeof block.type !== 'string') {
      out.push({ type: 'issue', message: `${field}.type: a content block needs a string type`, field: `${field}.type` });
      return;
    }
    const type = block.type;
    const missing = (name: string): void => {
      out.push({ type: 'issue', message: `${field}.${name}: missing in a ${type} block`, field: `${field}.${name}` });
    };
    if (type === 'text') {
      if (typeof block.text !== 'string') return missing('text');
      out.push({ type: 'event', event: build(ctx, textKind, block.text, key), source: field });
    } else if (type === 'thinking') {
      if (typeof block.thinking !== 'string') return missing('thinking');
      out.push({ type: 'event', event: build(ctx, 'assistant', block.thinking, key, { tags: ['thinking'] }), source: field });
    } else if (type === 'redacted_thinking') {
      out.push({ type: 'skip', reason: `${field}: redacted thinking is encrypted; there is no text to store` });
    } else if (TOOL_CALL_BLOCKS.has(type)) {
      if (typeof block.id !== 'string') return missing('id');
      if (typeof block.name !== 'string') return missing('name');
      ctx.toolNames.set(block.id, block.name);
      const extra = { toolName: block.name, toolCallId: block.id };
      out.push({ type: 'event', event: build(ctx, 'tool_call', JSON.stringify(block.input ?? {}), key, extra), source: field });
    } else if (TEXT_RESULT_BLOCKS.has(type) || type.endsWith('_tool_result')) {
      out.push(...convertToolResult(block, ctx, field, key));
    } else if (MEDIA_BLOCKS.has(type)) {
      out.push(convertMedia(block, ctx, field, key, textKind));
    } else {
      out.push({ type: 'issue', message: `${field}.type: unsupported content block type '${type}'`, field: `${field}.type` });
    }
  });
  return out;
}

function convertToolResult(block: Record<string, unknown>, ctx: AnthropicContentContext, field: string, key: string): ConvertedBlock[] {
  const toolCallId = typeof block.tool_use_id === 'string' ? block.tool_use_id : undefined;
  if (toolCallId === undefined) {
    return [{ type: 'issue', message: `${field}.tool_use_id: missing in a ${String(block.type)} block`, field: `${field}.tool_use_id` }];
  }
  const toolName = ctx.toolNames.get(toolCallId);
  const isError = block.is_error === true;
  const extra = {
    toolCallId,
    toolName,
    tags: isError ? ['error'] : [],
    meta: isError ? { isError: true } : {},
  };
  // Server tool results (web search, code execution) carry structured content: keep it as JSON text.
  if (!TEXT_RESULT_BLOCKS.has(block.type as string)) {
    return [{ type: 'event', event: build(ctx, 'tool_result', JSON.stringify(block.content ?? null), key, extra), source: field }];
  }
  const content = block.content;
  if (content === undefined || content === null || typeof content === 'string') {
    return [{ type: 'event', event: build(ctx, 'tool_result', content ?? '', key, extra), source: field }];
  }
  if (!Array.isArray(content)) {
    return [{ type: 'issue', message: `${field}.content: expected a string or an array of blocks`, field: `${field}.content` }];
  }
  // The result text is its text blocks joined; media blocks become events of their own after it.
  const texts: string[] = [];
  const media: ConvertedBlock[] = [];
  content.forEach((part: unknown, index) => {
    const partField = `${field}.content[${index}]`;
    if (isRecord(part) && part.type === 'text' && typeof part.text === 'string') texts.push(part.text);
    else if (isRecord(part) && typeof part.type === 'string' && MEDIA_BLOCKS.has(part.type)) {
      media.push(convertMedia(part, ctx, partField, `${key}:${index}`, 'tool_result', extra));
    } else {
      const type = isRecord(part) ? String(part.type) : typeof part;
      media.push({ type: 'issue', message: `${partField}.type: unsupported tool result block type '${type}'`, field: `${partField}.type` });
    }
  });
  const hasOnlyMedia = texts.length === 0 && media.some((m) => m.type === 'event');
  const textEvent: ConvertedBlock[] = hasOnlyMedia
    ? []
    : [{ type: 'event', event: build(ctx, 'tool_result', texts.join('\n'), key, extra), source: field }];
  return [...textEvent, ...media];
}

interface Extra {
  toolName?: string | undefined;
  toolCallId?: string | undefined;
  tags?: readonly string[];
  meta?: Record<string, unknown>;
}

function convertMedia(
  block: Record<string, unknown>,
  ctx: AnthropicContentContext,
  field: string,
  key: string,
  kind: EventKind,
  extra: Extra = {},
): ConvertedBlock {
  const type = block.type as string;
  const source = block.source;
  if (!isRecord(source) || typeof source.type !== 'string') {
    return { type: 'issue', message: `${field}.source: a ${type} block needs a source with a type`, field: `${field}.source` };
  }
  const title = typeof block.title === 'string' ? block.title : undefined;
  const label = title === undefined ? type : `${type} "${title}"`;
  if (source.type === 'base64') {
    if (typeof source.data !== 'string' || typeof source.media_type !== 'string') {
      return { type: 'issue', message: `${field}.source: a base64 source needs data and media_type`, field: `${field}.source` };
    }
    const description = `[${label}: ${source.media_type}, ${formatBytes(base64ByteLength(source.data))}]`;
    const binary = { base64: source.data, mediaType: source.media_type, ...(title === undefined ? {} : { caption: title }) };
    return { type: 'event', event: { ...build(ctx, kind, description, key, extra), binary }, source: field };
  }
  if (source.type === 'url' && typeof source.url === 'string') {
    const meta = { ...extra.meta, url: source.url };
    return { type: 'event', event: build(ctx, kind, `[${label}: ${source.url}]`, key, { ...extra, meta }), source: field };
  }
  if (source.type === 'file' && typeof source.file_id === 'string') {
    const meta = { ...extra.meta, fileId: source.file_id };
    return { type: 'event', event: build(ctx, kind, `[${label}: file ${source.file_id}]`, key, { ...extra, meta }), source: field };
  }
  if (source.type === 'text' && typeof source.data === 'string') {
    return { type: 'event', event: build(ctx, kind, source.data, key, extra), source: field };
  }
  return { type: 'issue', message: `${field}.source.type: unsupported ${type} source '${source.type}'`, field: `${field}.source.type` };
}

function build(ctx: AnthropicContentContext, kind: EventKind, content: string, key: string, extra: Extra = {}): EventInput {
  const tags = [...new Set([...(ctx.tags ?? []), ...(extra.tags ?? [])])];
  return compactEvent({
    kind,
    content,
    key,
    ts: ctx.ts,
    toolName: extra.toolName,
    toolCallId: extra.toolCallId,
    tags,
    meta: { ...ctx.meta, ...extra.meta },
  });
}

/** Wraps a converted block as an import item: events are validated, issues and skips get the line. */
export function blockToItem(block: ConvertedBlock, line: number, sessionId: string | undefined): ImportItem {
  if (block.type === 'issue') return issueItem(line, block.message, block.field);
  if (block.type === 'skip') return skipItem(line, block.reason);
  return eventItem(block.event, { line, sessionId, source: block.source });
}
