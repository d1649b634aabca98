import { EngramError } from '../../errors.js';

/** A zod issue as far as naming a field needs it. */
export interface FieldIssue {
  readonly path: ReadonlyArray<PropertyKey>;
  readonly message: string;
  readonly code?: string;
  readonly keys?: readonly string[];
}

/** `ENGRAMS[0].pointers[1].ref` from a path, under `prefix` when given (`limits` -> `limits.maxInlineTokens`). */
export function fieldPath(path: ReadonlyArray<PropertyKey>, prefix = ''): string {
  const joined = path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
  if (prefix) return `${prefix}${joined}`;
  return joined.replace(/^\./, '') || '(root)';
}

/**
 * INVALID_INPUT for the first issue, naming the field. Unlike `invalidInputFromZod`, an unknown key is named
 * itself (`ENGRAMS[0].id`) rather than the object holding it, because agents fix messages field by field.
 */
export function invalidInputFromIssues(issues: readonly FieldIssue[], prefix = '', what = 'message'): EngramError {
  const first = issues[0];
  if (!first) return new EngramError('INVALID_INPUT', `invalid ${what}`, { field: '(root)' });
  const unknownKey = first.code === 'unrecognized_keys' ? first.keys?.[0] : undefined;
  const field = fieldPath(unknownKey === undefined ? first.path : [...first.path, unknownKey], prefix);
  const message = unknownKey === undefined ? `${field}: ${first.message}` : `${field}: unknown field`;
  return new EngramError('INVALID_INPUT', `invalid ${what}: ${message}`, {
    field,
    issues: issues.map((i) => ({ field: fieldPath(i.path, prefix), message: i.message })),
  });
}
