import { Readable } from 'node:stream';
import { parseImport } from './index.js';
import type { ImportedEvent, ImportFormat, ImportIssue, ImportOptions, ImportSkip, ImportSource } from './types.js';

/**
 * Test helpers for the importer tests (not part of the importer API). Sources are cut into small chunks
 * so lines and multi-byte characters straddle chunk boundaries, as they do with real streams.
 */
export function sourceOf(data: string | Buffer, chunkBytes = 7): ImportSource {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  const chunks: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += chunkBytes) chunks.push(bytes.subarray(at, at + chunkBytes));
  return { sizeBytes: bytes.byteLength, stream: () => Readable.from(chunks) };
}

export interface Collected {
  events: ImportedEvent[];
  issues: ImportIssue[];
  skips: ImportSkip[];
}

export async function collect(source: ImportSource, format: ImportFormat, options?: ImportOptions): Promise<Collected> {
  const out: Collected = { events: [], issues: [], skips: [] };
  for await (const item of parseImport(source, format, options)) {
    if (item.type === 'event') out.events.push(item.value);
    else if (item.type === 'issue') out.issues.push(item.value);
    else out.skips.push(item.value);
  }
  return out;
}

/** Parses text in the given format. */
export function parseText(text: string | Buffer, format: ImportFormat, options?: ImportOptions): Promise<Collected> {
  return collect(sourceOf(text), format, options);
}

export function jsonl(...records: unknown[]): string {
  return records.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n') + '\n';
}
