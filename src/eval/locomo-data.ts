/**
 * Loads LoCoMo conversations (snap-research/LoCoMo `data/locomo10.json` shape; see
 * ../shared/bench-data/locomo/README.md) for evaluation, checking the shape and naming what is wrong.
 * The data is for evaluation only (CC BY-NC 4.0): nothing read here is written into the project.
 */
import { readFileSync } from 'node:fs';
import { EngramError } from '../errors.js';

/** LoCoMo question categories by id. 1-4 are the usual scored set; 5 (adversarial) is reported apart. */
export const LOCOMO_CATEGORIES = { 1: 'multi-hop', 2: 'temporal', 3: 'open-domain', 4: 'single-hop', 5: 'adversarial' } as const;
export type LocomoCategory = keyof typeof LOCOMO_CATEGORIES;

export interface LocomoTurn {
  /** `D<session>:<turn>`. */
  diaId: string;
  session: number;
  speaker: string;
  text: string;
  /** The caption of a shared image, when the turn has one. */
  blipCaption?: string;
  /** Epoch ms: the session's start plus one second per turn, so turns keep their order. */
  tsMs: number;
}

export interface LocomoQuestion {
  question: string;
  category: LocomoCategory;
  /** Gold evidence turn ids, extracted with /D\d+:\d+/ (a few source strings hold two, `"D8:6; D9:17"`). */
  evidence: string[];
}

export interface LocomoConversation {
  sampleId: string;
  turns: LocomoTurn[];
  questions: LocomoQuestion[];
}

const DIA_ID = /^D(\d+):(\d+)$/;
const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];

/** Reads and validates a LoCoMo JSON file. */
export function loadLocomo(path: string): LocomoConversation[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new EngramError('NOT_FOUND', `${path}: cannot read the LoCoMo file (${(err as Error).message})`, { field: 'data', path }, { cause: err });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new EngramError('INVALID_INPUT', `${path}: not valid JSON (${(err as Error).message})`, { field: '(root)', path }, { cause: err });
  }
  return parseLocomo(json, path);
}

/** Validates parsed LoCoMo JSON; errors name the file and the JSON path of the first problem. */
export function parseLocomo(json: unknown, source = 'LoCoMo data'): LocomoConversation[] {
  const bad = (field: string, message: string): never => {
    throw new EngramError('INVALID_INPUT', `${source}: ${field}: ${message}`, { field, path: source });
  };
  if (!Array.isArray(json)) bad('(root)', 'expected a list of conversations');
  const list = json as unknown[];
  if (list.length === 0) bad('(root)', 'the list of conversations is empty');
  const seenSamples = new Set<string>();
  return list.map((item, i) => {
    const at = `[${i}]`;
    const sample = asObject(item, at, bad);
    const sampleId = asString(sample.sample_id, `${at}.sample_id`, bad);
    if (seenSamples.has(sampleId)) bad(`${at}.sample_id`, `"${sampleId}" appears twice`);
    seenSamples.add(sampleId);
    const conversation = asObject(sample.conversation, `${at}.conversation`, bad);

    const sessions = Object.keys(conversation)
      .map((key) => /^session_(\d+)$/.exec(key))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => Number(m[1]))
      .sort((a, b) => a - b);
    if (sessions.length === 0) bad(`${at}.conversation`, 'has no session_<n> lists of turns');

    const turns: LocomoTurn[] = [];
    const ids = new Set<string>();
    for (const session of sessions) {
      const sessionAt = `${at}.conversation.session_${session}`;
      const list = conversation[`session_${session}`];
      if (!Array.isArray(list)) bad(sessionAt, 'expected a list of turns');
      const dateField = `${sessionAt}_date_time`;
      const startMs = parseSessionTime(asString(conversation[`session_${session}_date_time`], dateField, bad), dateField, bad);
      (list as unknown[]).forEach((t, j) => {
        const turnAt = `${sessionAt}[${j}]`;
        const turn = asObject(t, turnAt, bad);
        const diaId = asString(turn.dia_id, `${turnAt}.dia_id`, bad);
        const m = DIA_ID.exec(diaId);
        if (!m) bad(`${turnAt}.dia_id`, `"${diaId}" does not look like D<session>:<turn>`);
        if (ids.has(diaId)) bad(`${turnAt}.dia_id`, `"${diaId}" appears twice`);
        ids.add(diaId);
        const parsed: LocomoTurn = {
          diaId,
          session,
          speaker: asString(turn.speaker, `${turnAt}.speaker`, bad),
          text: asString(turn.text, `${turnAt}.text`, bad, true),
          tsMs: startMs + j * 1000,
        };
        if (turn.blip_caption !== undefined) parsed.blipCaption = asString(turn.blip_caption, `${turnAt}.blip_caption`, bad, true);
        turns.push(parsed);
      });
    }

    if (!Array.isArray(sample.qa)) bad(`${at}.qa`, 'expected a list of questions');
    const questions = (sample.qa as unknown[]).map((q, j): LocomoQuestion => {
      const qAt = `${at}.qa[${j}]`;
      const qa = asObject(q, qAt, bad);
      const category = qa.category;
      if (typeof category !== 'number' || !(category in LOCOMO_CATEGORIES)) bad(`${qAt}.category`, `expected 1-5, found ${JSON.stringify(category)}`);
      if (!Array.isArray(qa.evidence)) bad(`${qAt}.evidence`, 'expected a list of turn ids');
      const evidence = (qa.evidence as unknown[]).map((e, k) => asString(e, `${qAt}.evidence[${k}]`, bad, true));
      return { question: asString(qa.question, `${qAt}.question`, bad), category: category as LocomoCategory, evidence: evidenceIds(evidence) };
    });
    return { sampleId, turns, questions };
  });
}

/** Turn ids in evidence strings, in order, without repeats. */
export function evidenceIds(evidence: string[]): string[] {
  return [...new Set(evidence.flatMap((e) => e.match(/D\d+:\d+/g) ?? []))];
}

/** The text a retriever indexes for a turn: `speaker: text`, plus `[image: caption]` when an image was shared. */
export function turnText(turn: LocomoTurn): string {
  const caption = turn.blipCaption ? ` [image: ${turn.blipCaption}]` : '';
  return `${turn.speaker}: ${turn.text}${caption}`;
}

/** "1:56 pm on 8 May, 2023" -> epoch ms (UTC; only the order and spacing of sessions matter here). */
function parseSessionTime(text: string, field: string, bad: (field: string, message: string) => never): number {
  const m = /^\s*(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$/i.exec(text);
  const month = m ? MONTHS.indexOf(m[5]!.toLowerCase()) : -1;
  if (!m || month < 0) return bad(field, `"${text}" is not a time like "1:56 pm on 8 May, 2023"`);
  const hour = (Number(m[1]) % 12) + (m[3]!.toLowerCase() === 'pm' ? 12 : 0);
  return Date.UTC(Number(m[6]), month, Number(m[4]), hour, Number(m[2]));
}

type Bad = (field: string, message: string) => never;

function asObject(v: unknown, field: string, bad: Bad): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) bad(field, `expected an object, found ${describe(v)}`);
  return v as Record<string, unknown>;
}

function asString(v: unknown, field: string, bad: Bad, allowEmpty = false): string {
  if (typeof v !== 'string') bad(field, `expected a string, found ${describe(v)}`);
  if (!allowEmpty && (v as string).trim().length === 0) bad(field, 'is empty');
  return v as string;
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'number' || typeof v === 'boolean' ? `${typeof v} ${String(v)}` : `a ${typeof v}`;
}
