import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { Engram } from '../../engine.js';
import { EngramError, invalidInputFromZod } from '../../errors.js';
import type { ImportReport } from '../../memory/import-runner.js';
import { validateSessionId } from '../../memory/ingest.js';
import { projectForDirectory } from '../../memory/project-identity.js';
import type { CarryOverOptions } from '../../context/carry-over.js';
import type { ChatModel } from '../../providers/llm/chat-model.js';

/**
 * What `engram hooks run codex-notify '<json>'` does: Codex runs its `notify` program after every agent turn with a
 * JSON object as the last argument (`{"type": "agent-turn-complete", "thread-id", "turn-id", "cwd",
 * "input-messages", "last-assistant-message"}`). The thread's rollout (`$CODEX_HOME/sessions/YYYY/MM/DD/
 * rollout-<time>-<thread-id>.jsonl`, which Codex has written by then) is imported into the session named by the
 * thread id, in the project of `cwd` (memory/project-identity.ts): idempotent by line, so each turn stores only what
 * is new. Then the session's summary is kept current (context/carry-over.ts `turnEnded`), and the start is recorded
 * once per session and Codex process, so `engram mcp` started by that Codex finds the session (memory/host-sessions.ts)
 * even where Codex's hooks are not trusted yet.
 */

/** The host name start records and stored context carry. */
export const CODEX_HOST = 'codex';
/** The notification Codex sends after a turn; other types (newer Codex versions may add some) are passed over. */
export const TURN_COMPLETE = 'agent-turn-complete';

const notificationSchema = z
  .object({
    type: z.string(),
    'thread-id': z.string().optional(),
    'turn-id': z.string().optional(),
    cwd: z.string().optional(),
  })
  .loose();
export type CodexNotification = z.infer<typeof notificationSchema>;

/** Parses the notification argument; INVALID_INPUT names the field. */
export function parseCodexNotification(text: string): CodexNotification {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new EngramError('INVALID_INPUT', `notification: not valid JSON (${(err as Error).message}); Codex passes a JSON object as the notify program's last argument`, {
      field: 'notification',
    });
  }
  const parsed = notificationSchema.safeParse(value);
  if (!parsed.success) throw invalidInputFromZod(parsed.error.issues, 'notification');
  return parsed.data;
}

/**
 * The rollout file of a thread under `sessionsDir` (`YYYY/MM/DD/rollout-<time>-<thread-id>.jsonl`), newest day
 * first: a turn's rollout is usually today's. Undefined when there is none (yet).
 */
export function findRollout(sessionsDir: string, threadId: string): string | undefined {
  const suffix = `-${threadId}.jsonl`;
  const walk = (dir: string, depth: number): string | undefined => {
    let names: string[];
    try {
      names = readdirSync(dir).sort().reverse();
    } catch {
      return undefined;
    }
    if (depth === 3) {
      const hit = names.find((n) => n.startsWith('rollout-') && n.endsWith(suffix));
      return hit === undefined ? undefined : join(dir, hit);
    }
    for (const name of names) {
      if (!/^\d+$/.test(name)) continue;
      const found = walk(join(dir, name), depth + 1);
      if (found) return found;
    }
    return undefined;
  };
  return walk(sessionsDir, 0);
}

export interface CodexNotifyOptions extends CarryOverOptions {
  /** `$CODEX_HOME/sessions`. */
  sessionsDir: string;
  /** The Codex process (the notify program's parent), recorded with the start. */
  hostPids: number[];
  llm?: ChatModel | null;
}

export interface CodexNotifyOutcome {
  /** Why nothing was done, when nothing was. */
  skipped?: string;
  rollout?: string;
  imported?: ImportReport;
  project?: string;
  sessionId?: string;
}

/** Imports the turn's rollout and keeps the session's summary current. */
export async function runCodexNotify(mem: Engram, notification: CodexNotification, options: CodexNotifyOptions): Promise<CodexNotifyOutcome> {
  if (notification.type !== TURN_COMPLETE) return { skipped: `notification type ${notification.type} is not ${TURN_COMPLETE}` };
  const threadId = notification['thread-id'];
  if (!threadId) throw new EngramError('INVALID_INPUT', 'notification.thread-id: missing; Codex names the thread of the turn that completed', { field: 'notification.thread-id' });
  const sessionId = validateSessionId(threadId, 'notification.thread-id');
  const identity = projectForDirectory(notification.cwd ?? process.cwd());
  const rollout = findRollout(options.sessionsDir, threadId);
  if (!rollout || statSync(rollout).size === 0) return { skipped: `no rollout of thread ${threadId} under ${options.sessionsDir}`, project: identity.project, sessionId };
  const carry = mem.carryOver({ llm: options.llm ?? null });
  const session = { sessionId, project: identity.project, host: CODEX_HOST };
  // Recorded first (stored once per Codex process): the session's own turns follow it.
  await carry.recordStart({ ...session, source: 'notify', cwd: notification.cwd ?? identity.root, hostPids: options.hostPids });
  const imported = await mem.importFile({ path: rollout, displayName: rollout }, { format: 'codex', sessionId, project: identity.project, skipInvalid: true });
  await carry.turnEnded(session, options);
  return { rollout, imported, project: identity.project, sessionId };
}
