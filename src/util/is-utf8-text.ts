/** Whether bytes are text a person or model can read: valid UTF-8 without NUL characters. */
export function isUtf8Text(bytes: Uint8Array): boolean {
  if (bytes.includes(0)) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/**
 * Offset of the first byte that does not start a well-formed UTF-8 sequence (RFC 3629: no overlong forms,
 * no surrogates, nothing above U+10FFFF), or -1 when all bytes are valid. A broken or truncated multi-byte
 * sequence is reported at its lead byte, where a replacing decoder would put its U+FFFD.
 */
export function firstInvalidUtf8Offset(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i]!;
    if (lead < 0x80) {
      i += 1;
      continue;
    }
    let length: number;
    let low = 0x80;
    let high = 0xbf;
    if (lead >= 0xc2 && lead <= 0xdf) length = 2;
    else if (lead >= 0xe0 && lead <= 0xef) {
      length = 3;
      if (lead === 0xe0) low = 0xa0; // overlong
      if (lead === 0xed) high = 0x9f; // UTF-16 surrogates
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      length = 4;
      if (lead === 0xf0) low = 0x90; // overlong
      if (lead === 0xf4) high = 0x8f; // above U+10FFFF
    } else return i;
    if (i + length > bytes.length) return i;
    for (let k = 1; k < length; k += 1) {
      const b = bytes[i + k]!;
      if (b < (k === 1 ? low : 0x80) || b > (k === 1 ? high : 0xbf)) return i;
    }
    i += length;
  }
  return -1;
}

/** Where bytes stop being UTF-8: the offset (0-based) of the first byte of a malformed sequence, and that byte. */
export interface InvalidUtf8 {
  offset: number;
  byte: number;
}

/**
 * The text of UTF-8 bytes, or where they are not UTF-8: never a replacement character in place of bytes that were
 * not text (a decoder that replaces would store U+FFFD and lose what was sent). A byte-order mark is dropped.
 */
export function decodeUtf8Strictly(bytes: Uint8Array): { text: string } | { invalid: InvalidUtf8 } {
  try {
    return { text: new TextDecoder('utf-8', { fatal: true }).decode(bytes) };
  } catch {
    const offset = Math.max(0, firstInvalidUtf8Offset(bytes));
    return { invalid: { offset, byte: bytes[offset] ?? 0 } };
  }
}
