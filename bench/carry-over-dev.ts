/**
 * A fast development loop for the carry-over bench's LoCoMo part (bench/carry-over.ts): the same stores, the same
 * questions, the same scoring, in minutes instead of an hour, and a breakdown of where each missed evidence turn
 * was lost. Development figures only: the committed report comes from `npm run bench -- carry-over`.
 *
 *   node --import tsx bench/carry-over-dev.ts [--conversations conv-26,conv-30] [--budgets 1000,2000,4000]
 *     [--brief-share 0.667] [--opt name=value ...] [--label NAME] [--rebuild] [--dir /tmp/engram-carry-dev]
 *
 * - Build (once per conversation, kept in `--dir`): the conversation's sessions written as Claude Code
 *   transcripts (bench/lib/locomo-transcripts.ts) and driven in-process through the hook handlers the CLI runs
 *   (`runClaudeCodeHook`: SessionStart, UserPromptSubmit, Stop, SessionEnd in the order the bench fires them), so
 *   the store is the one the installed hooks build, without 2,300 Node start-ups. `--rebuild` builds again (after a
 *   change to what is stored or summarized).
 * - Evaluate (per budget, on a copy of the kept store): one SessionStart hook of a fresh session gives the brief
 *   (the same store gives the same brief to every question), then each question's evidence is what
 *   `recallForPrompt` answers with the brief as already quoted, which is what the UserPromptSubmit hook of a fresh
 *   session does (the first question of each budget is also run through the hook, and the two must agree).
 *   `--opt name=value` passes an extra option to `recallForPrompt` (to try a setting before making it a default).
 * - Noise: another conversation's questions and gibberish, at the default budgets, as the bench asks them.
 *
 * Loss breakdown of each gold turn not present: not among recall's hits (with its rank in a deeper recall),
 * among them but below the confidence floor, cut by the budget, left out as already quoted by the brief, or
 * injected but not scored present (its excerpt holds less than half the turn).
 *
 * Writes `<dir>/results/<label>.json` (per question: present turns and losses per budget) for leave-one-out
 * selection (bench/carry-over-dev-loo.ts).
 */
import { copyFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { openEngram, type Engram } from '../src/engine.js';
import { LOCOMO_CATEGORIES, loadLocomo, type LocomoConversation } from '../src/eval/locomo-data.js';
import { projectForDirectory } from '../src/memory/project-identity.js';
import type { PromptRecallOptions } from '../src/memory/prompt-recall.js';
import { runClaudeCodeHook, type ClaudeCodeHookInput, type HookRunOptions } from '../src/interfaces/claude-code/hook-handlers.js';
import type { HookEventName } from '../src/interfaces/claude-code/claude-settings.js';
import type { SessionId } from '../src/model/ids.js';
import { budgetEnv, BRIEF_SHARE, DEFAULT_CARRY_OVER_DATA, gibberishPrompts } from './carry-over.js';
import { citedIds, scoreEvidence } from './lib/injection-score.js';
import { deterministicUuid, locomoSessions, turnUuid } from './lib/locomo-transcripts.js';
import { createGptTokenizer } from '../src/providers/gpt-tokenizer.js';

const tokenizer = createGptTokenizer();
const tokens = (text: string): number => (text === '' ? 0 : tokenizer.count(text));

type Loss = 'present' | 'not-in-hits' | 'below-floor' | 'budget' | 'quoted-by-brief' | 'excerpt-cut' | 'given' | 'derived' | 'no-event';
const LOSSES: Loss[] = ['present', 'not-in-hits', 'below-floor', 'budget', 'quoted-by-brief', 'excerpt-cut', 'given', 'derived', 'no-event'];

interface DevQuestion {
  sampleId: string;
  index: number;
  category: number;
  evidence: string[];
  /** Per budget. */
  at: Record<string, { present: string[]; losses: Record<string, Loss>; deepRank: Record<string, number>; goldRanks: number[]; briefPresent: number; briefTokens: number; promptTokens: number }>;
}

const { values } = parseArgs({
  options: {
    conversations: { type: 'string', default: '' },
    budgets: { type: 'string', default: '1000,2000,4000' },
    'brief-share': { type: 'string', default: String(BRIEF_SHARE) },
    opt: { type: 'string', multiple: true, default: [] },
    label: { type: 'string', default: 'dev' },
    rebuild: { type: 'boolean', default: false },
    dir: { type: 'string', default: '/tmp/engram-carry-dev' },
    data: { type: 'string', default: DEFAULT_CARRY_OVER_DATA },
    'no-noise': { type: 'boolean', default: false },
    /** Noise from every other conversation's questions (all of them), besides the bench's 25 of the next one. */
    'noise-all': { type: 'boolean', default: false },
    quiet: { type: 'boolean', default: false },
  },
});

const dir = resolve(values.dir!);
const budgets = values.budgets!.split(',').map(Number);
const briefShare = Number(values['brief-share']);
const extra: Record<string, unknown> = {};
for (const kv of values.opt ?? []) {
  const [k, v] = kv.split('=');
  extra[k!] = v === 'true' ? true : v === 'false' ? false : Number.isNaN(Number(v)) ? v : Number(v);
}

function transcriptPath(home: string, cwd: string, sessionId: string): string {
  const d = join(home, '.claude', 'projects', resolve(cwd).replace(/[^A-Za-z0-9]/g, '-'));
  mkdirSync(d, { recursive: true });
  return join(d, `${sessionId}.jsonl`);
}

function additional(stdout: string | undefined): string {
  if (!stdout) return '';
  const json = JSON.parse(stdout) as { hookSpecificOutput?: { additionalContext?: string } };
  return json.hookSpecificOutput?.additionalContext ?? '';
}

async function hook(mem: Engram, event: HookEventName, input: Omit<ClaudeCodeHookInput, 'hook_event_name'>, options: HookRunOptions = {}): Promise<string> {
  const outcome = await runClaudeCodeHook(mem, event, input as ClaudeCodeHookInput, { hostPids: [], llm: null, ...options });
  return additional(outcome.stdout);
}

function cwdOf(sampleId: string): string {
  const cwd = join(dir, 'projects', sampleId);
  mkdirSync(cwd, { recursive: true });
  return cwd;
}

/** Builds the conversation's store through the hook handlers, as the bench's replay does. */
async function build(c: LocomoConversation): Promise<string> {
  const db = join(dir, 'stores', `${c.sampleId}.db`);
  const done = `${db}.done`;
  if (existsSync(done) && !values.rebuild) return db;
  mkdirSync(join(dir, 'stores'), { recursive: true });
  for (const s of ['', '-wal', '-shm']) rmSync(db + s, { force: true });
  const home = join(dir, 'home');
  const cwd = cwdOf(c.sampleId);
  const started = Date.now();
  const mem = await openEngram({ db, sqlite: { create: true }, ingest: { redact: true } });
  try {
    for (const s of locomoSessions(c, cwd)) {
      const path = transcriptPath(home, cwd, s.sessionId);
      writeFileSync(path, '');
      const base = { session_id: s.sessionId, transcript_path: path, cwd };
      const append = (records: unknown[]): void => writeFileSync(path, records.map((r) => `${JSON.stringify(r)}\n`).join(''), { flag: 'a' });
      await hook(mem, 'session-start', { ...base, source: 'startup' });
      let needsStop = false;
      for (const step of s.steps) {
        if (step.kind === 'prompt') {
          await hook(mem, 'user-prompt-submit', { ...base, prompt: step.prompt });
          append(step.records);
          needsStop = true;
        } else {
          append(step.records);
          await hook(mem, 'stop', base);
          needsStop = false;
        }
      }
      if (needsStop) await hook(mem, 'stop', base);
      await hook(mem, 'session-end', { ...base, reason: 'prompt_input_exit' });
    }
  } finally {
    await mem.close();
  }
  writeFileSync(done, new Date().toISOString());
  console.log(`built ${c.sampleId} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return db;
}

function copyStore(from: string, to: string): void {
  for (const suffix of ['', '-wal', '-shm']) {
    if (existsSync(from + suffix)) copyFileSync(from + suffix, to + suffix);
    else rmSync(to + suffix, { force: true });
  }
}

/** The conversation's turn events: dia id <-> event id (through `meta.uuid`). */
async function turnEvents(mem: Engram, c: LocomoConversation, project: string): Promise<{ byDia: Map<string, string>; diaByEvent: Map<string, string> }> {
  const diaByUuid = new Map(c.turns.map((t) => [turnUuid(c.sampleId, t.diaId), t.diaId]));
  const byDia = new Map<string, string>();
  const diaByEvent = new Map<string, string>();
  const sessions = (await mem.store.listSessions({ visibleToProject: project, limit: 1000 })).filter((s) => s.project === project);
  for (const s of sessions) {
    for (const e of await mem.store.listEvents({ sessionId: s.id as SessionId, limit: 100_000 })) {
      const uuid = (e.meta as Record<string, unknown> | null)?.['uuid'];
      const dia = typeof uuid === 'string' ? diaByUuid.get(uuid) : undefined;
      if (dia !== undefined) {
        byDia.set(dia, e.id);
        diaByEvent.set(e.id, dia);
      }
    }
  }
  return { byDia, diaByEvent };
}

async function evaluate(c: LocomoConversation, db: string, budget: number, noiseFrom: LocomoConversation | undefined, others: LocomoConversation[]): Promise<{ questions: DevQuestion[]; noise?: { other: number[]; gibberish: number[]; all?: number[] } }> {
  const evalDb = join(dir, 'eval', `${c.sampleId}-${budget}-${process.pid}.db`);
  mkdirSync(join(dir, 'eval'), { recursive: true });
  copyStore(db, evalDb);
  const cwd = cwdOf(c.sampleId);
  const project = projectForDirectory(cwd).project;
  const env = budgetEnv(budget, briefShare);
  const briefTokens = Number(env.ENGRAM_BRIEF_TOKENS);
  const recallTokens = Number(env.ENGRAM_RECALL_TOKENS);
  const mem = await openEngram({ db: evalDb, ingest: { redact: true } });
  try {
    const { byDia, diaByEvent } = await turnEvents(mem, c, project);
    // The turns a text cites, by event id or by turn reference, each opened as `engram show` opens it.
    const citedTurns = async (text: string): Promise<Set<string>> => {
      const out = new Set<string>();
      for (const ref of citedIds(text).events) {
        const id = ref.startsWith('evt_') ? ref : await mem.getEvent(ref).then((e) => e.id, () => undefined);
        const dia = id === undefined ? undefined : diaByEvent.get(id);
        if (dia !== undefined) out.add(dia);
      }
      return out;
    };
    const briefSession = deterministicUuid(`carry-dev:${budget}:${c.sampleId}:brief`);
    const brief = await hook(mem, 'session-start', { session_id: briefSession, cwd, source: 'startup' }, { briefTokens, recallTokens });
    const sessionIds = (await mem.store.listSessions({ visibleToProject: project, limit: 1000 })).filter((s) => s.project === project && s.id !== briefSession).map((s) => s.id as string);
    const questions = c.questions.map((q, index) => ({ q, index })).filter(({ q }) => [1, 2, 3, 4].includes(q.category) && q.evidence.length > 0);
    const turnText = new Map(c.turns.map((t) => [t.diaId, t.text]));
    const out: DevQuestion[] = [];
    let checked = false;
    for (const { q, index } of questions) {
      const sessionId = deterministicUuid(`carry-dev:${budget}:${c.sampleId}:${index}`);
      const options = { project, sessionId, budgetTokens: recallTokens, alreadyQuoted: brief, explain: true, ...extra } as PromptRecallOptions;
      const found = await mem.recallForPrompt(q.question, options);
      if (!checked && Object.keys(extra).length === 0) {
        // The hook path must give the same evidence: a fresh session, its brief, then the prompt.
        checked = true;
        const probe = deterministicUuid(`carry-dev:${budget}:${c.sampleId}:probe`);
        await hook(mem, 'session-start', { session_id: probe, cwd, source: 'startup' }, { briefTokens, recallTokens });
        const viaHook = await hook(mem, 'user-prompt-submit', { session_id: probe, cwd, prompt: q.question }, { briefTokens, recallTokens });
        if (viaHook.replace(/for="[^"]*"/, '') !== found.text.replace(/for="[^"]*"/, '')) console.warn(`WARNING ${c.sampleId}@${budget} q${index}: the hook's evidence differs from recallForPrompt's`);
      }
      const injected = `${brief}\n\n${found.text}`;
      const cited = await citedTurns(injected);
      const outcome = scoreEvidence(q.evidence.map((id) => ({ id, text: turnText.get(id) ?? '' })), injected, cited);
      const losses: Record<string, Loss> = {};
      const deepRank: Record<string, number> = {};
            const r = await mem.recall(q.question, { sessionIds, k: 100, budgetTokens: 200_000, maxExcerptChars: 120, logRecall: false });
      const deep: string[] = r.hits.map((h) => h.eventId);
      const briefOnly = scoreEvidence(q.evidence.map((id) => ({ id, text: turnText.get(id) ?? '' })), brief, await citedTurns(brief));
      const goldRanks = q.evidence.map((id) => { const e = byDia.get(id); const i = e ? deep.indexOf(e) : -1; return i < 0 ? -1 : i + 1; });
      for (const id of q.evidence) {
        if (outcome.present.includes(id)) {
          losses[id] = 'present';
          continue;
        }
        const eventId = byDia.get(id);
        if (!eventId) {
          losses[id] = 'no-event';
          continue;
        }
        const t = found.trace?.find((x) => x.eventId === eventId);
        if (t) {
          losses[id] = t.fate === 'injected' ? 'excerpt-cut' : t.fate === 'quoted' ? 'quoted-by-brief' : t.fate;
          continue;
        }
        losses[id] = 'not-in-hits';
        const rank = deep.indexOf(eventId);
        deepRank[id] = rank < 0 ? -1 : rank + 1;
      }
      out.push({ sampleId: c.sampleId, index, category: q.category, evidence: q.evidence, at: { [budget]: { present: outcome.present, losses, deepRank, goldRanks, briefPresent: briefOnly.present.length, briefTokens: tokens(brief), promptTokens: found.tokens } } });
    }
    let noise: { other: number[]; gibberish: number[]; all?: number[] } | undefined;
    if (noiseFrom && !values['no-noise'] && budget === budgets[0]) {
      // Default budgets, as the bench's noise part.
      const defaultBrief = await hook(mem, 'session-start', { session_id: deterministicUuid(`carry-dev:noise:${c.sampleId}`), cwd, source: 'startup' });
      const ask = async (prompt: string, i: number): Promise<number> =>
        (await mem.recallForPrompt(prompt, { project, sessionId: deterministicUuid(`carry-dev:noise:${c.sampleId}:${i}`), alreadyQuoted: defaultBrief, ...extra } as PromptRecallOptions)).tokens;
      const other: number[] = [];
      for (const [i, q] of noiseFrom.questions.filter((x) => x.category !== 5).slice(0, 25).entries()) other.push(await ask(q.question, i));
      const gibberish: number[] = [];
      for (const [i, g] of gibberishPrompts(42, 20).entries()) gibberish.push(await ask(g, 100 + i));
      noise = { other, gibberish };
      if (values['noise-all']) {
        const every: number[] = [];
        for (const [i, q] of others.flatMap((o) => o.questions.filter((x) => x.category !== 5)).entries()) every.push(await ask(q.question, 1000 + i));
        Object.assign(noise, { all: every });
      }
    }
    return { questions: out, ...(noise ? { noise } : {}) };
  } finally {
    await mem.close();
    for (const s of ['', '-wal', '-shm']) rmSync(evalDb + s, { force: true });
  }
}

const pct = (n: number, d: number): string => (d === 0 ? '-' : `${((n / d) * 100).toFixed(1)}`);

function share(qs: DevQuestion[], budget: number): number {
  return qs.length === 0 ? 0 : qs.reduce((s, q) => s + q.at[budget]!.present.length / q.evidence.length, 0) / qs.length;
}

async function main(): Promise<void> {
  const all = loadLocomo(values.data!);
  const wanted = values.conversations ? values.conversations.split(',') : [];
  const chosen = wanted.length === 0 ? all : all.filter((c) => wanted.includes(c.sampleId));
  const results: DevQuestion[] = [];
  const noise: Record<string, { other: number[]; gibberish: number[]; all?: number[] }> = {};
  for (const c of chosen) {
    const db = await build(c);
    const at = all.findIndex((x) => x.sampleId === c.sampleId);
    const other = all[(at + 1) % all.length];
    const byIndex = new Map<number, DevQuestion>();
    for (const budget of budgets) {
      const r = await evaluate(c, db, budget, other?.sampleId !== c.sampleId ? other : undefined, all.filter((x) => x.sampleId !== c.sampleId));
      if (r.noise) noise[c.sampleId] = r.noise;
      for (const q of r.questions) {
        const prev = byIndex.get(q.index);
        if (prev) Object.assign(prev.at, q.at);
        else byIndex.set(q.index, q);
      }
    }
    results.push(...byIndex.values());
  }
  mkdirSync(join(dir, 'results'), { recursive: true });
  writeFileSync(join(dir, 'results', `${values.label}.json`), JSON.stringify({ options: { budgets, briefShare, extra }, results, noise }));

  const lines: string[] = [];
  const convs = [...new Set(results.map((r) => r.sampleId))];
  lines.push(`# carry-over dev: ${values.label} (brief share ${briefShare.toFixed(3)}, opts ${JSON.stringify(extra)})`);
  lines.push(`evidence present %: ${['all', ...convs].map((k) => `${k} ${budgets.map((b) => (share(k === 'all' ? results : results.filter((r) => r.sampleId === k), b) * 100).toFixed(1)).join('/')}`).join(' | ')}`);
  for (const b of budgets) {
    const mean = (f: (q: DevQuestion) => number): string => (results.reduce((s, q) => s + f(q), 0) / Math.max(1, results.length)).toFixed(0);
    const turnsAll = results.reduce((s, q) => s + q.evidence.length, 0);
    const at = (k: number): string => ((results.reduce((s, q) => s + q.at[b]!.goldRanks.filter((r) => r > 0 && r <= k).length / q.evidence.length, 0) / results.length) * 100).toFixed(1);
    lines.push(`@${b}: gold turns present via the brief alone ${pct(results.reduce((s, q) => s + q.at[b]!.briefPresent, 0), turnsAll)} %; recall@10/25/50/100 ${at(10)}/${at(25)}/${at(50)}/${at(100)}`);
    lines.push(`@${b}: brief ${mean((q) => q.at[b]!.briefTokens)} + prompt ${mean((q) => q.at[b]!.promptTokens)} tokens; by category ${[1, 2, 3, 4].map((cat) => `${cat} ${LOCOMO_CATEGORIES[cat as 1]} ${(share(results.filter((r) => r.category === cat), b) * 100).toFixed(1)}`).join(', ')}`);
  }
  if (!values.quiet) {
    for (const b of budgets) {
      lines.push('', `## gold turns at ${b}: share by fate (%)`, `| group | turns | ${LOSSES.join(' | ')} | not-in-hits: deep rank <=25 / <=100 / none |`);
      const groups: Array<[string, DevQuestion[]]> = [['all', results], ...convs.map((k) => [k, results.filter((r) => r.sampleId === k)] as [string, DevQuestion[]]), ...[1, 2, 3, 4].map((cat) => [`cat ${cat}`, results.filter((r) => r.category === cat)] as [string, DevQuestion[]])];
      for (const [name, qs] of groups) {
        const fates = qs.flatMap((q) => Object.entries(q.at[b]!.losses));
        const ranks = qs.flatMap((q) => Object.values(q.at[b]!.deepRank));
        const count = (l: Loss): number => fates.filter(([, f]) => f === l).length;
        lines.push(
          `| ${name} | ${fates.length} | ${LOSSES.map((l) => pct(count(l), fates.length)).join(' | ')} | ${ranks.filter((r) => r > 0 && r <= 25).length} / ${ranks.filter((r) => r > 25).length} / ${ranks.filter((r) => r < 0).length} |`,
        );
      }
    }
  }
  for (const [k, n] of Object.entries(noise)) {
    const mean = (a: number[]): string => (a.reduce((s, x) => s + x, 0) / Math.max(1, a.length)).toFixed(1);
    lines.push(`noise ${k}: other-conversation mean ${mean(n.other)} max ${Math.max(0, ...n.other)} non-empty ${n.other.filter((x) => x > 0).length}/${n.other.length}; gibberish mean ${mean(n.gibberish)} non-empty ${n.gibberish.filter((x) => x > 0).length}/${n.gibberish.length}${n.all ? `; every other conversation's questions: mean ${mean(n.all)} non-empty ${n.all.filter((x) => x > 0).length}/${n.all.length}` : ''}`);
  }
  const text = lines.join('\n');
  console.log(text);
  writeFileSync(join(dir, 'results', `${values.label}.md`), `${text}\n`);
}

await main();
