import { base64ByteLength, formatBytes } from './import-item.js';
import { parseBase64DataUrl } from './openai-importer.js';

/** What an image given by URL becomes: a description, plus the bytes for a data URL or the URL in meta. */
export interface ImageUrlParts {
  content: string;
  binary?: { base64: string; mediaType: string };
  meta?: { url: string };
}

/**
 * An image URL as event parts: a base64 `data:` URL is kept as bytes (stored as an artifact) and described by
 * type and size; any other URL is kept as text and in `meta.url`, since the importer never fetches it.
 */
export function imageUrlParts(url: string): ImageUrlParts {
  const data = parseBase64DataUrl(url);
  if (data === null) return { content: `[image: ${url}]`, meta: { url } };
  return { content: `[image: ${data.mediaType}, ${formatBytes(base64ByteLength(data.base64))}]`, binary: data };
}
