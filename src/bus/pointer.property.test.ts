import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isEngramError } from '../errors.js';
import { formatPointerRef, MAX_POINTER_REF_CHARS, parsePointerRef } from './pointer.js';

/**
 * Property tests of the pointer grammar: whatever a client sends as a `ref`, parsing either returns a pointer
 * that formats back to a ref parsing to the same pointer, or refuses with POINTER_INVALID naming the field.
 * Never another error, never a crash, never a path that leaves the repository.
 */

/** Lowercase hex strings (fast-check 4 has no hexaString). */
const hex = (minLength: number, maxLength: number) => fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength, maxLength });

const REF_TYPES = ['repo:', 'artifact:', 'sam:', 'diff:', 'test:', 'url:', ''];
const PIECES = ['..', '.', '/', '//', '\\', '#', '#L', '#sec=', '@', '-L', ':', '%2e%2e', '\u0000', '\n', '~', 'a', 'src', 'x.ts', '12', '0', 'ff', 'event', 'task', 'decision', 'evt_', 'https://', 'user:pw@'];

/** Strings built from the grammar's own pieces: far likelier than random text to reach the deep branches. */
const grammarish = fc
  .tuple(fc.constantFrom(...REF_TYPES), fc.array(fc.oneof(fc.constantFrom(...PIECES), fc.string({ maxLength: 6 }), hex(4, 40)), { maxLength: 12 }))
  .map(([type, parts]) => type + parts.join(''));

const anyRef = fc.oneof(grammarish, fc.string({ maxLength: 400 }), fc.string({ unit: 'binary', maxLength: 400 }));

function parseOrRefuse(ref: string): ReturnType<typeof parsePointerRef> | null {
  try {
    return parsePointerRef(ref);
  } catch (err) {
    if (!isEngramError(err, 'POINTER_INVALID')) throw err;
    expect((err.data as { field?: string }).field).toBe('pointer');
    return null;
  }
}

describe('pointer refs (property-based)', () => {
  it('parse or refuse with POINTER_INVALID, and what parses formats back to the same pointer', () => {
    fc.assert(
      fc.property(anyRef, (ref) => {
        const parsed = parseOrRefuse(ref);
        if (parsed === null) return;
        const again = parsePointerRef(formatPointerRef(parsed));
        expect(again).toEqual(parsed);
      }),
      { numRuns: 5000 },
    );
  });

  it('never accept a repo or diff path that could leave the repository', () => {
    const segment = fc.oneof(fc.constantFrom('..', '.', '', 'src', 'a b', 'x.ts'), fc.string({ maxLength: 5 }));
    fc.assert(
      fc.property(fc.array(segment, { minLength: 1, maxLength: 6 }), fc.boolean(), hex(7, 40), (segments, isAbsolute, commit) => {
        const path = (isAbsolute ? '/' : '') + segments.join('/');
        for (const ref of [`repo:${path}@${commit}`, `diff:${commit}#${path}`]) {
          const parsed = parseOrRefuse(ref);
          if (parsed === null) continue;
          const p = (parsed as { path: string }).path;
          expect(p.startsWith('/')).toBe(false);
          expect(p.split('/')).not.toContain('..');
          expect(p.split('/')).not.toContain('.');
          expect(p).not.toContain('\\');
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('refuse any ref longer than the limit', () => {
    fc.assert(
      fc.property(fc.string({ minLength: MAX_POINTER_REF_CHARS + 1, maxLength: MAX_POINTER_REF_CHARS + 200 }), (tail) => {
        expect(parseOrRefuse(`test:${tail}`)).toBeNull();
      }),
      { numRuns: 200 },
    );
  });
});
