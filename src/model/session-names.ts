import { createHash } from 'node:crypto';

/**
 * Per-project session names (issue 31: "no squatting, no oracle"; docs/security.md, "Session names").
 *
 * Session ids are one store-wide space, and sessions are created on first write. Without more, an agent of one
 * project could create the ids another project will use (an agent's name is its MCP default session; a delegated
 * child is `<parent>.<subtask>`) and lock it out, and whether a write creates a session or is refused would tell
 * any token which ids exist. So the name a bounded agent gives means a session in its project's own space:
 *
 * 1. the stored session of that id, when the agent's project owns it (every session of a store without
 *    collisions: ids are unchanged, and the local CLI's sessions, named by Claude Code's session uuids in the
 *    project the hooks derive, are reached under their own ids);
 * 2. else `<qualifier>~<name>`, the project's own session of that name, when it exists;
 * 3. else, for reads, the stored session of that id when it is shared with the project;
 * 4. else the stored id itself when no session holds it (created in the project on first write);
 * 5. else (another project holds the id, or shares it read-only and this is a write): `<qualifier>~<name>`.
 *
 * An id another project holds and an id nobody holds are then the same to the agent: both name a session of its
 * own project that does not exist yet, on every route (reads, writes, the task card, recall). Answers show the
 * agent its own qualified sessions under their plain names ({@link displaySessionIds}), so nothing it receives
 * differs either. Ids already qualified (`shop~x`) are taken as they are. Full-trust callers (the local CLI, an
 * admin) use stored ids as given.
 */

/** Separates a project's qualifier from a name. Not in the alphabet of names (model/ids.ts). */
export const QUALIFIER_SEPARATOR = '~';

const QUALIFIER_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}$/;

/**
 * The qualifier of a project's session names: the project name when it fits the session alphabet (64 characters
 * at most), else `p-` and 16 hex characters of its sha256 (projects are free text).
 */
export function projectQualifier(project: string): string {
  if (QUALIFIER_PATTERN.test(project)) return project;
  return `p-${createHash('sha256').update(project, 'utf8').digest('hex').slice(0, 16)}`;
}

/** Whether a session id is project-qualified (`shop~alice`). */
export function isQualifiedSessionId(id: string): boolean {
  return id.includes(QUALIFIER_SEPARATOR);
}

/** The qualifier of a qualified id, or null for a plain one. */
export function qualifierOf(id: string): string | null {
  const at = id.indexOf(QUALIFIER_SEPARATOR);
  return at < 0 ? null : id.slice(0, at);
}

/** The project's own session of a name: `<qualifier>~<name>`. */
export function qualifiedSessionId(project: string, name: string): string {
  return `${projectQualifier(project)}${QUALIFIER_SEPARATOR}${name}`;
}

/**
 * A JSON-like answer with the project's own qualified session ids (`shop~alice`) shown as their plain names
 * (`alice`), as the project's agents address them: whole strings (ids) and ids standing alone as words in text
 * (`session shop~alice, turn 3` in a recall pack). A stored text that itself contains `shop~name` as a word is
 * shown the same way to that project's agents (`~` is not in names, so only such ids normally read like this).
 * Returns the same object when nothing changes.
 */
export function displaySessionIds<T>(value: T, project: string): T {
  const prefix = `${projectQualifier(project)}${QUALIFIER_SEPARATOR}`;
  const escaped = prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const word = new RegExp(`(?<![A-Za-z0-9._:@~-])${escaped}(?=[A-Za-z0-9])`, 'g');
  return rewrite(value, prefix, word) as T;
}

function rewrite(value: unknown, prefix: string, word: RegExp): unknown {
  if (typeof value === 'string') return value.includes(prefix) ? value.replace(word, '') : value;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const v = rewrite(value[i], prefix, word);
      if (v !== value[i]) (out ??= value.slice())[i] = v;
    }
    return out ?? value;
  }
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    let out: Record<string, unknown> | undefined;
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      const r = rewrite(v, prefix, word);
      if (r !== v) (out ??= { ...(value as Record<string, unknown>) })[k] = r;
    }
    return out ?? value;
  }
  return value;
}

/** {@link displaySessionIds} of one text (an MCP tool's text content). */
export function displaySessionIdsInText(text: string, project: string): string {
  return displaySessionIds(text, project);
}
