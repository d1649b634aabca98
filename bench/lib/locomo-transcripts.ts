/**
 * LoCoMo conversations written as Claude Code sessions: one JSONL transcript per LoCoMo session, records shaped
 * like Claude Code's (`type`, `uuid`, `parentUuid`, `sessionId`, `cwd`, `timestamp`, `message`), so the real hooks
 * and importer read them as they read a coding session.
 *
 * Speakers: the conversation's first speaker is the user and the other one the assistant. Claude Code has exactly
 * these two roles, and both speakers' turns hold evidence, so both must be stored as conversation (not as tool
 * output). Each turn's text is prefixed with its speaker's name ("Caroline: ..."): the questions name people, and
 * in a coding transcript the role alone would not say who spoke. A shared image's caption is kept as
 * `[image: ...]`, as the LoCoMo retrieval bench indexes it.
 */
import { createHash } from 'node:crypto';
import type { LocomoConversation, LocomoTurn } from '../../src/eval/locomo-data.js';

/** A UUID (version-8 layout, RFC 9562) derived from `key`: the same key gives the same id on every run. */
export function deterministicUuid(key: string): string {
  const h = createHash('sha256').update(key).digest('hex');
  const variant = ((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The record uuid of one LoCoMo turn. */
export function turnUuid(sampleId: string, diaId: string): string {
  return deterministicUuid(`locomo:${sampleId}:${diaId}`);
}

export function sessionUuid(sampleId: string, session: number): string {
  return deterministicUuid(`locomo:${sampleId}:session:${session}`);
}

/** The message text of a turn: `Speaker: text`, plus `[image: caption]` when an image was shared. */
export function turnMessage(turn: LocomoTurn): string {
  return `${turn.speaker}: ${turn.text}${turn.blipCaption ? ` [image: ${turn.blipCaption}]` : ''}`;
}

/** One step of a replay: hooks fire between steps as Claude Code fires them. */
export type ReplayStep =
  | { kind: 'prompt'; prompt: string; records: Array<Record<string, unknown>> }
  | { kind: 'reply'; records: Array<Record<string, unknown>> };

export interface LocomoSession {
  sessionId: string;
  session: number;
  startMs: number;
  steps: ReplayStep[];
}

/**
 * The conversation's sessions in time order, each as replay steps: every user-speaker turn is a prompt
 * (UserPromptSubmit, then its record is appended); every run of assistant-speaker turns is a reply (records
 * appended, then Stop).
 */
export function locomoSessions(conversation: LocomoConversation, cwd: string): LocomoSession[] {
  const userSpeaker = conversation.turns[0]?.speaker;
  const bySession = new Map<number, LocomoTurn[]>();
  for (const t of conversation.turns) {
    const list = bySession.get(t.session) ?? [];
    list.push(t);
    bySession.set(t.session, list);
  }
  const sessions: LocomoSession[] = [];
  for (const [session, turns] of [...bySession].sort((a, b) => a[1][0]!.tsMs - b[1][0]!.tsMs)) {
    const sessionId = sessionUuid(conversation.sampleId, session);
    const steps: ReplayStep[] = [];
    let parentUuid: string | null = null;
    for (const turn of turns) {
      const uuid = turnUuid(conversation.sampleId, turn.diaId);
      const isUser = turn.speaker === userSpeaker;
      const text = turnMessage(turn);
      const common = { parentUuid, isSidechain: false, userType: 'external', cwd, sessionId, version: '1.0.98', gitBranch: '', uuid, timestamp: new Date(turn.tsMs).toISOString() };
      parentUuid = uuid;
      if (isUser) {
        steps.push({ kind: 'prompt', prompt: text, records: [{ ...common, type: 'user', message: { role: 'user', content: text } }] });
      } else {
        const record = {
          ...common,
          type: 'assistant',
          message: {
            id: `msg_${uuid.replace(/-/g, '').slice(0, 24)}`,
            type: 'message',
            role: 'assistant',
            model: 'locomo-speaker',
            content: [{ type: 'text', text }],
            stop_reason: 'end_turn',
            stop_sequence: null,
            usage: { input_tokens: 0, output_tokens: 0 },
          },
          requestId: `req_${uuid.replace(/-/g, '').slice(0, 24)}`,
        };
        const last = steps[steps.length - 1];
        if (last?.kind === 'reply') last.records.push(record);
        else steps.push({ kind: 'reply', records: [record] });
      }
    }
    sessions.push({ sessionId, session, startMs: turns[0]!.tsMs, steps });
  }
  return sessions;
}
