import { EngramError } from '../../errors.js';
import { decodeUtf8Strictly } from '../../util/is-utf8-text.js';

/**
 * A request body's text, refused with INVALID_INPUT when it is not UTF-8 (issue #31): a `Request.text()` decodes
 * with replacement, so bytes that were not text were stored as U+FFFD, while the CLI refuses the same bytes. The
 * message names the byte and its position (counted from 1, as an editor counts columns).
 */
export async function readBodyText(request: Request): Promise<string> {
  const decoded = decodeUtf8Strictly(new Uint8Array(await request.arrayBuffer()));
  if ('text' in decoded) return decoded.text;
  throw invalidUtf8Body(decoded.invalid.offset, decoded.invalid.byte);
}

/** The error for a body that is not UTF-8 at `offset` (0-based). */
export function invalidUtf8Body(offset: number, byte: number): EngramError {
  const hex = `0x${byte.toString(16).padStart(2, '0')}`;
  return new EngramError('INVALID_INPUT', `body: not valid UTF-8: byte ${hex} at byte ${offset + 1} of the body; send text as UTF-8`, {
    field: 'body',
    byteOffset: offset,
    byte: hex,
  });
}
