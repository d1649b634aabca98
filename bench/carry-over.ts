/**
 * `npm run bench -- carry-over`: does memory reach a NEW Claude Code session without being asked? Everything goes
 * through the hook commands `engram hooks install --claude-code` writes, run as Claude Code runs them
 * (bench/lib/claude-hooks.ts), so the bench measures whatever the installed hooks do.
 *
 * Parts (`--parts`, default all):
 * - `locomo`: each LoCoMo conversation (../shared/bench-data/locomo/) written as Claude Code transcripts, one per
 *   session, in a project directory of its own (bench/lib/locomo-transcripts.ts), replayed through the hooks in
 *   time order into one store. Then per question a fresh session in that project: SessionStart (startup), then
 *   UserPromptSubmit with the question. Scored: the share of the question's gold evidence turns present in what
 *   the two hooks injected (quoted, or cited by an `evt_` id that maps to the turn; bench/lib/injection-score.ts),
 *   at each total budget of `--budgets` (split 2:1 between the brief, ENGRAM_BRIEF_TOKENS, and the prompt
 *   recall, ENGRAM_RECALL_TOKENS, the ratio of their defaults, 1,200 each), with the tokens injected.
 * - `noise`: tokens injected at UserPromptSubmit for questions of ANOTHER conversation asked in each project
 *   (their answer is nowhere in it) and for gibberish prompts (seeded), with the default budgets.
 * - `latency`: each hook's wall time (process start to exit, what Claude Code waits for) in fresh sessions of a
 *   project whose store holds about 1K and 100K events of synthetic coding sessions (filled through the hooks).
 * - `coding`: the sessions of one real project over a month (claude-code-projects/...danieldemmel-me-next),
 *   replayed through the hooks turn by turn; at each later session's first prompt, which files and errors of
 *   earlier sessions the later session goes on to touch were in what was injected.
 *
 * Writes bench/results/<out>.{md,json} (default carry-over). The reports hold no dataset text (LoCoMo is
 * CC BY-NC, evaluation only): questions are referred to by index.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { DEFAULT_BRIEF_TOKENS } from '../src/context/project-brief.js';
import { openEngram } from '../src/engine.js';
import { DEFAULT_PROMPT_RECALL_TOKENS } from '../src/memory/prompt-recall.js';
import { LOCOMO_CATEGORIES, loadLocomo, type LocomoCategory, type LocomoConversation } from '../src/eval/locomo-data.js';
import { createGptTokenizer } from '../src/providers/gpt-tokenizer.js';
import { ClaudeSession, engramCli, installHookWorld, pool, type HookRun, type HookWorld } from './lib/claude-hooks.js';
import { projectSessions, replayRecorded, withCwd } from './lib/claude-replay.js';
import { citedIds, mentionsError, mentionsPath, scoreEvidence } from './lib/injection-score.js';
import { deterministicUuid, locomoSessions, turnUuid } from './lib/locomo-transcripts.js';
import { Prng } from './lib/prng.js';
import { readCpuMs } from './lib/proc-cpu.js';
import { sharedBenchData } from './lib/shared-data.js';
import { machineLine, round, summarize } from './lib/stats.js';
import { EVENTS_PER_EXCHANGE, syntheticSession } from './lib/synthetic-claude.js';
import { claudeCodeTruth, type SessionTruth } from './lib/transcript-truth.js';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
export const CARRY_OVER_PARTS = ['locomo', 'noise', 'latency', 'coding'] as const;
export type CarryOverPart = (typeof CARRY_OVER_PARTS)[number];
/** The brief's share of a total budget: the ratio of the hooks' defaults (brief and prompt evidence). */
export const BRIEF_SHARE = DEFAULT_BRIEF_TOKENS / (DEFAULT_BRIEF_TOKENS + DEFAULT_PROMPT_RECALL_TOKENS);
const DEFAULT_CODING_DIR = join(sharedBenchData(), 'transcripts/claude-code-projects/-Users-dain-workspace-danieldemmel-me-next');
/** The LoCoMo development split (CC BY-NC, evaluation only: read in place, never copied). */
export const DEFAULT_CARRY_OVER_DATA = join(sharedBenchData(), 'locomo/locomo-dev.json');

export interface CarryOverOptions {
  data: string;
  /** LoCoMo sample ids to replay; all when empty. */
  conversations: string[];
  /** Total injected budgets, tokens. */
  budgets: number[];
  categories: LocomoCategory[];
  parts: CarryOverPart[];
  /** Store sizes for the latency part, events. */
  latencySizes: number[];
  codingDir: string;
  /** Hook sessions run at once in the replay and question phases. */
  jobs: number;
  /** The brief's share of each total budget (the rest goes to the prompt's evidence). Default {@link BRIEF_SHARE}. */
  briefShare: number;
  quick: boolean;
  out: string;
  /** Where to write the report; default bench/results. */
  resultsDir?: string;
  seed: number;
}

export const CARRY_OVER_DEFAULTS: Omit<CarryOverOptions, 'data'> = {
  conversations: [],
  budgets: [1000, 2000, 4000],
  categories: [1, 2, 3, 4],
  parts: [...CARRY_OVER_PARTS],
  latencySizes: [1000, 100_000],
  codingDir: DEFAULT_CODING_DIR,
  jobs: 2,
  briefShare: BRIEF_SHARE,
  quick: false,
  out: 'carry-over',
  seed: 42,
};

const tokenizer = createGptTokenizer();
const tokens = (text: string): number => (text === '' ? 0 : tokenizer.count(text));

export function budgetEnv(totalTokens: number, briefShare = BRIEF_SHARE): Record<string, string> {
  const brief = Math.round(totalTokens * briefShare);
  return { ENGRAM_BRIEF_TOKENS: String(brief), ENGRAM_RECALL_TOKENS: String(totalTokens - brief) };
}

/** A fixed list of gibberish prompts: random letter strings and keyboard mashes, the same for the same seed. */
export function gibberishPrompts(seed: number, count: number): string[] {
  const prng = new Prng(seed);
  const rows = ['qwertyuiop', 'asdfghjkl', 'zxcvbnm'];
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const words = 1 + Math.floor(prng.next() * 4);
    const parts: string[] = [];
    for (let w = 0; w < words; w++) {
      const length = 4 + Math.floor(prng.next() * 9);
      let word = '';
      if (i % 2 === 0) {
        for (let c = 0; c < length; c++) word += String.fromCharCode(97 + Math.floor(prng.next() * 26));
      } else {
        // A keyboard mash: runs along one row of the keyboard.
        const row = rows[Math.floor(prng.next() * rows.length)]!;
        let at = Math.floor(prng.next() * row.length);
        for (let c = 0; c < length; c++) {
          word += row[at]!;
          at = Math.max(0, Math.min(row.length - 1, at + (prng.next() < 0.5 ? -1 : 1)));
        }
      }
      parts.push(word);
    }
    out.push(parts.join(' '));
  }
  return out;
}

export interface Project {
  conversation: LocomoConversation;
  cwd: string;
  /** Record uuid -> dia id. */
  turnByUuid: Map<string, string>;
}

export interface QuestionResult {
  sampleId: string;
  index: number;
  category: LocomoCategory;
  evidence: string[];
  present: string[];
  quoted: string[];
  cited: string[];
  briefTokens: number;
  promptTokens: number;
}

/** A conversation's project directory (created under `parent`, named after the sample) and its turn map. */
export function locomoProject(conversation: LocomoConversation, parent: string): Project {
  const cwd = join(parent, conversation.sampleId);
  mkdirSync(cwd, { recursive: true });
  return { conversation, cwd, turnByUuid: new Map(conversation.turns.map((t) => [turnUuid(conversation.sampleId, t.diaId), t.diaId])) };
}

/** Copies a SQLite store (main file, WAL and shared memory) while no hook runs. */
function copyStore(from: string, to: string): void {
  for (const suffix of ['', '-wal', '-shm']) {
    if (existsSync(from + suffix)) copyFileSync(from + suffix, to + suffix);
    else if (existsSync(to + suffix)) rmSync(to + suffix);
  }
}

/** Replays every project's sessions through the hooks (projects in parallel, each in time order). */
export async function replayLocomo(world: HookWorld, projects: Project[], jobs: number): Promise<HookRun[]> {
  const runs = await pool(projects, jobs, async (project) => {
    const out: HookRun[] = [];
    for (const s of locomoSessions(project.conversation, project.cwd)) {
      const session = new ClaudeSession(world, s.sessionId, project.cwd);
      await session.start('startup');
      let needsStop = false;
      for (const step of s.steps) {
        if (step.kind === 'prompt') {
          await session.prompt(step.prompt);
          session.append(step.records);
          needsStop = true;
        } else {
          session.append(step.records);
          await session.stop();
          needsStop = false;
        }
      }
      if (needsStop) await session.stop();
      await session.end();
      out.push(...session.runs);
    }
    return out;
  });
  return runs.flat();
}

/** Maps the `evt_` ids cited in `texts` to LoCoMo turns through the store (event -> meta.uuid -> dia id). */
export async function resolveCitations(db: string, texts: string[], projects: Project[]): Promise<Map<string, string>> {
  const ids = new Set(texts.flatMap((t) => citedIds(t).events));
  const out = new Map<string, string>();
  if (ids.size === 0) return out;
  const byUuid = new Map<string, string>();
  for (const p of projects) for (const [uuid, dia] of p.turnByUuid) byUuid.set(uuid, `${p.conversation.sampleId}|${dia}`);
  const mem = await openEngram({ db });
  try {
    for (const id of ids) {
      try {
        const event = await mem.getEvent(id);
        const uuid = (event.meta as Record<string, unknown> | null)?.uuid;
        const turn = typeof uuid === 'string' ? byUuid.get(uuid) : undefined;
        if (turn !== undefined) out.set(id, turn);
      } catch {
        // An id the store does not know (a summary's own id shape, a typo in a brief) cites no turn.
      }
    }
  } finally {
    await mem.close();
  }
  return out;
}

export async function askQuestions(
  world: HookWorld,
  projects: Project[],
  budget: number,
  options: Pick<CarryOverOptions, 'categories' | 'quick' | 'jobs'> & Partial<Pick<CarryOverOptions, 'briefShare'>>,
): Promise<QuestionResult[]> {
  const items = projects.flatMap((project) =>
    project.conversation.questions
      .map((q, index) => ({ project, q, index }))
      .filter(({ q }) => options.categories.includes(q.category) && q.evidence.length > 0)
      .slice(0, options.quick ? 8 : undefined),
  );
  const env = budgetEnv(budget, options.briefShare);
  const asked = await pool(items, options.jobs, async ({ project, q, index }) => {
    const session = new ClaudeSession(world, deterministicUuid(`carry-over:${budget}:${project.conversation.sampleId}:${index}`), project.cwd, env);
    const brief = (await session.start('startup'))?.injected ?? '';
    const prompt = (await session.prompt(q.question))?.injected ?? '';
    return { project, q, index, brief, prompt };
  });
  const citations = await resolveCitations(world.db, asked.flatMap((a) => [a.brief, a.prompt]), projects);
  return asked.map(({ project, q, index, brief, prompt }) => {
    const sampleId = project.conversation.sampleId;
    const injected = `${brief}\n\n${prompt}`;
    const citedTurns = new Set<string>();
    for (const id of citedIds(injected).events) {
      const turn = citations.get(id);
      if (turn?.startsWith(`${sampleId}|`)) citedTurns.add(turn.slice(sampleId.length + 1));
    }
    const turnText = new Map(project.conversation.turns.map((t) => [t.diaId, t.text]));
    const outcome = scoreEvidence(q.evidence.map((id) => ({ id, text: turnText.get(id) ?? '' })), injected, citedTurns);
    return { sampleId, index, category: q.category, evidence: q.evidence, ...outcome, briefTokens: tokens(brief), promptTokens: tokens(prompt) };
  });
}

interface ShareRow {
  n: number;
  present: number;
  quoted: number;
  cited: number;
  briefTokens: number;
  promptTokens: number;
}

function shareRow(results: QuestionResult[]): ShareRow {
  const mean = (f: (r: QuestionResult) => number): number => (results.length === 0 ? 0 : results.reduce((s, r) => s + f(r), 0) / results.length);
  return {
    n: results.length,
    present: round(mean((r) => r.present.length / r.evidence.length) * 100, 1),
    quoted: round(mean((r) => r.quoted.length / r.evidence.length) * 100, 1),
    cited: round(mean((r) => r.cited.length / r.evidence.length) * 100, 1),
    briefTokens: round(mean((r) => r.briefTokens), 0),
    promptTokens: round(mean((r) => r.promptTokens), 0),
  };
}

interface NoiseResult {
  otherQuestions: { n: number; promptTokensMean: number; promptTokensMax: number; nonEmpty: number; briefTokensMean: number };
  gibberish: { n: number; promptTokensMean: number; promptTokensMax: number; nonEmpty: number };
}

async function measureNoise(world: HookWorld, projects: Project[], all: LocomoConversation[], options: CarryOverOptions): Promise<NoiseResult> {
  const perProject = options.quick ? 5 : 25;
  const gibberish = gibberishPrompts(options.seed, options.quick ? 6 : 20);
  const items: Array<{ project: Project; prompt: string; kind: 'other' | 'gibberish'; key: string }> = [];
  for (const project of projects) {
    const at = all.findIndex((c) => c.sampleId === project.conversation.sampleId);
    const other = all[(at + 1) % all.length]!;
    if (other.sampleId === project.conversation.sampleId) continue;
    const questions = other.questions.filter((q) => q.category !== 5).slice(0, perProject);
    questions.forEach((q, i) => items.push({ project, prompt: q.question, kind: 'other', key: `${other.sampleId}:${i}` }));
    gibberish.forEach((g, i) => items.push({ project, prompt: g, kind: 'gibberish', key: `g${i}` }));
  }
  const runs = await pool(items, options.jobs, async (item) => {
    const session = new ClaudeSession(world, deterministicUuid(`carry-over:noise:${item.project.conversation.sampleId}:${item.kind}:${item.key}`), item.project.cwd);
    const brief = (await session.start('startup'))?.injected ?? '';
    const prompt = (await session.prompt(item.prompt))?.injected ?? '';
    return { kind: item.kind, briefTokens: tokens(brief), promptTokens: tokens(prompt) };
  });
  const stats = (list: typeof runs) => ({
    n: list.length,
    promptTokensMean: round(list.reduce((s, r) => s + r.promptTokens, 0) / Math.max(1, list.length), 1),
    promptTokensMax: Math.max(0, ...list.map((r) => r.promptTokens)),
    nonEmpty: list.filter((r) => r.promptTokens > 0).length,
  });
  const other = runs.filter((r) => r.kind === 'other');
  return {
    otherQuestions: { ...stats(other), briefTokensMean: round(other.reduce((s, r) => s + r.briefTokens, 0) / Math.max(1, other.length), 1) },
    gibberish: stats(runs.filter((r) => r.kind === 'gibberish')),
  };
}

type HookStats = Record<string, { p50: number; p95: number; n: number; cpuP50?: number; cpuP95?: number }>;

interface LatencyRow {
  targetEvents: number;
  storedEvents: number;
  fillSeconds: number;
  /**
   * `alone`: every hook in its own process (ENGRAM_HOOK_DAEMON=off; also what the first hook after the resident
   * process ended waits). `resident`: hooks answered by the store's resident process (the default).
   */
  modes: Record<LatencyMode, HookStats>;
  /** The resident process's own CPU over the counted resident hooks (their CPU columns are the hook processes' only). */
  residentCpu?: { hooks: number; ms: number };
}

const LATENCY_MODES = { alone: { ENGRAM_HOOK_DAEMON: 'off' }, resident: {} } as const;
type LatencyMode = keyof typeof LATENCY_MODES;

const LATENCY_PROMPTS = [
  'why does the billing retry loop give up after one attempt?',
  'where is the search cache invalidated',
  'run the ledger tests again and fix what fails',
  'what did we change in src/auth last time?',
  'the mailer drops messages with ECONNREFUSED 127.0.0.1:5432, where is that configured',
];

async function measureLatency(root: string, cacheDir: string, size: number, options: CarryOverOptions): Promise<LatencyRow> {
  const home = join(root, `latency-${size}`, 'home');
  const cwd = join(root, `latency-${size}`, 'shop');
  mkdirSync(cwd, { recursive: true });
  const world = installHookWorld({ home, db: join(root, `latency-${size}`, 'engram.db'), cacheDir });
  // Sessions of about 1,000 events (250 exchanges), each stored by its own hooks, oldest first.
  const perSession = Math.min(250, Math.max(1, Math.ceil(size / EVENTS_PER_EXCHANGE)));
  const sessions = Math.max(1, Math.round(size / (perSession * EVENTS_PER_EXCHANGE)));
  const fillStart = performance.now();
  const day = 86_400_000;
  for (let i = 0; i < sessions; i++) {
    const sessionId = deterministicUuid(`carry-over:latency:${size}:${i}`);
    const session = new ClaudeSession(world, sessionId, cwd);
    await session.start('startup');
    session.append(syntheticSession({ seed: options.seed + i, sessionId, cwd, exchanges: perSession, startMs: Date.UTC(2026, 0, 1) + i * day }));
    await session.stop();
    await session.end();
  }
  const fillSeconds = (performance.now() - fillStart) / 1000;
  const mem = await openEngram({ db: world.db });
  const storedEvents = (await mem.stats()).events;
  await mem.close();

  const rounds = options.quick ? 6 : 22;
  const modes = {} as Record<LatencyMode, HookStats>;
  let residentCpu: LatencyRow['residentCpu'];
  for (const mode of Object.keys(LATENCY_MODES) as LatencyMode[]) {
    const samples = new Map<string, number[]>();
    const cpuSamples = new Map<string, number[]>();
    let cpuBefore: { pid: number; ms: number } | undefined;
    for (let i = 0; i < rounds; i++) {
      // The first two rounds warm the CLI's code cache, the OS file cache (and start the resident process); they are not counted.
      if (i === 2 && mode === 'resident') cpuBefore = residentProcessCpu(world, cwd);
      const sessionId = deterministicUuid(`carry-over:latency:${size}:${mode}:probe:${i}`);
      const session = new ClaudeSession(world, sessionId, cwd, { ...LATENCY_MODES[mode] }, undefined, true);
      await session.start('startup');
      const prompt = LATENCY_PROMPTS[i % LATENCY_PROMPTS.length]!;
      await session.prompt(prompt);
      session.append(syntheticSession({ seed: 9000 + i, sessionId, cwd, exchanges: 1, startMs: Date.UTC(2026, 6, 1) + i * 60_000 }));
      await session.stop();
      await session.end();
      if (i < 2) continue;
      for (const run of session.runs) {
        samples.set(run.event, [...(samples.get(run.event) ?? []), run.ms]);
        if (run.cpuMs !== undefined) cpuSamples.set(run.event, [...(cpuSamples.get(run.event) ?? []), run.cpuMs]);
      }
    }
    if (mode === 'resident') {
      const after = residentProcessCpu(world, cwd);
      const hooks = [...samples.values()].reduce((n, l) => n + l.length, 0);
      if (cpuBefore && after && after.pid === cpuBefore.pid) residentCpu = { hooks, ms: round(after.ms - cpuBefore.ms, 0) };
      engramCli(world, ['hooks', 'daemon', '--stop'], cwd);
    }
    const hooks: HookStats = {};
    for (const [event, list] of samples) {
      const st = summarize(list);
      const cpu = cpuSamples.get(event);
      hooks[event] = { p50: round(st.p50, 0), p95: round(st.p95, 0), n: st.n, ...(cpu ? { cpuP50: round(summarize(cpu).p50, 0), cpuP95: round(summarize(cpu).p95, 0) } : {}) };
    }
    modes[mode] = hooks;
  }
  return { targetEvents: size, storedEvents, fillSeconds: round(fillSeconds, 1), modes, ...(residentCpu ? { residentCpu } : {}) };
}

/** The store's resident hook process and its CPU time so far (user + system, from /proc), or undefined when none runs. */
function residentProcessCpu(world: HookWorld, cwd: string): { pid: number; ms: number } | undefined {
  const status = JSON.parse(engramCli(world, ['hooks', 'daemon', '--status', '--json'], cwd)) as { running: boolean; pid?: number };
  const ms = status.running && status.pid !== undefined ? readCpuMs(status.pid) : null;
  return ms === null ? undefined : { pid: status.pid!, ms };
}

interface CodingSessionRow {
  sessionId: string;
  date: string;
  briefTokens: number;
  promptTokens: number;
  files: Array<{ path: string; present: boolean }>;
  errors: Array<{ error: string; present: boolean }>;
}

/** Replays one real project's sessions and checks, at each later session's first prompt, what carried over. */
async function measureCoding(root: string, cacheDir: string, options: CarryOverOptions): Promise<CodingSessionRow[] | { skipped: string }> {
  if (!existsSync(options.codingDir)) return { skipped: `${options.codingDir} is absent` };
  const recorded = projectSessions(options.codingDir);
  const cwd = join(root, 'coding', 'danieldemmel-me-next');
  mkdirSync(cwd, { recursive: true });
  const world = installHookWorld({ home: join(root, 'coding', 'home'), db: join(root, 'coding', 'engram.db'), cacheDir });
  const rows: CodingSessionRow[] = [];
  const earlier: SessionTruth[] = [];
  for (const [i, s] of recorded.entries()) {
    const truth = claudeCodeTruth(s.records);
    const session = new ClaudeSession(world, s.sessionId, cwd);
    const outcome = await replayRecorded(session, withCwd(s.records, cwd));
    if (i > 0) {
      const injected = `${outcome.startInjected}\n\n${outcome.firstPromptInjected}`;
      const root = truth.projectRoot ?? earlier.find((e) => e.projectRoot)?.projectRoot;
      const touchedLater = new Set(truth.filesTouched);
      const earlierFiles = new Set(earlier.flatMap((e) => e.filesTouched));
      const files = [...touchedLater].filter((f) => earlierFiles.has(f)).sort();
      const laterErrors = new Set(truth.failures.map((f) => f.error));
      const errors = [
        ...new Set(
          earlier
            .flatMap((e) => e.failures)
            .filter((f) => f.error !== '' && (laterErrors.has(f.error) || [...touchedLater].some((path) => f.command.includes(path))))
            .map((f) => f.error),
        ),
      ];
      rows.push({
        sessionId: s.sessionId,
        date: new Date(s.startMs).toISOString().slice(0, 10),
        briefTokens: tokens(outcome.startInjected),
        promptTokens: tokens(outcome.firstPromptInjected),
        files: files.map((path) => ({ path: root && path.startsWith(`${root}/`) ? path.slice(root.length + 1) : path, present: mentionsPath(path, injected, root) })),
        errors: errors.map((error) => ({ error: error.slice(0, 80), present: mentionsError(error, injected) })),
      });
    }
    earlier.push(truth);
  }
  return rows;
}

export interface CarryOverReport {
  date: string;
  machine: string;
  commit: string;
  label: string;
  options: Omit<CarryOverOptions, 'data' | 'codingDir' | 'resultsDir'>;
  seconds: Record<string, number>;
  locomo?: {
    conversations: string[];
    replay: { sessions: number; hookRuns: number; failures: number; hooks: Record<string, { p50: number; p95: number; n: number }> };
    budgets: Array<{ budget: number; env: Record<string, string>; overall: ShareRow; byCategory: Record<string, ShareRow>; byConversation: Record<string, ShareRow>; questions: QuestionResult[] }>;
  };
  noise?: NoiseResult;
  latency?: LatencyRow[];
  coding?: CodingSessionRow[] | { skipped: string };
  /** Said at the top of the report (e.g. parts taken from another run). */
  notes?: string[];
}

/** Runs the bench and writes the report; returns it. */
export async function runCarryOver(options: CarryOverOptions & { label?: string }): Promise<CarryOverReport> {
  const started = performance.now();
  const root = mkdtempSync(join(tmpdir(), 'engram-carry-over-'));
  const cacheDir = join(root, 'cache');
  const seconds: Record<string, number> = {};
  const { data: _data, codingDir: _codingDir, resultsDir: _resultsDir, ...shown } = options;
  const report: CarryOverReport = { date: new Date().toISOString(), machine: machineLine(), commit: gitCommit(), label: options.label ?? '', options: shown, seconds };
  const dir = options.resultsDir ?? join(REPO_ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  // The report is written after every part, so a long run that is stopped still leaves what it measured.
  const write = (): void => {
    seconds.total = round((performance.now() - started) / 1000, 1);
    writeFileSync(join(dir, `${options.out}.json`), `${JSON.stringify(report, null, 2)}\n`);
    writeFileSync(join(dir, `${options.out}.md`), renderCarryOver(report));
  };
  const lap = async <T>(name: string, f: () => Promise<T>): Promise<T> => {
    const t = performance.now();
    const value = await f();
    seconds[name] = round((performance.now() - t) / 1000, 1);
    console.log(`carry-over: ${name} done in ${seconds[name]} s`);
    return value;
  };
  try {
    // Cheapest parts first, the target budget (2K) before the others.
    if (options.parts.includes('coding')) {
      report.coding = await lap('coding', () => measureCoding(root, cacheDir, options));
      write();
    }
    if (options.parts.includes('locomo') || options.parts.includes('noise')) {
      const all = loadLocomo(options.data);
      const chosen = options.conversations.length === 0 ? all : all.filter((c) => options.conversations.includes(c.sampleId));
      if (chosen.length === 0) throw new Error(`--conversations: none of ${options.conversations.join(', ')} is in ${options.data}`);
      const projects = chosen
        .slice(0, options.quick && options.conversations.length === 0 ? 1 : undefined)
        .map((c) => locomoProject(options.quick ? firstSessions(c, QUICK_SESSIONS) : c, join(root, 'locomo', 'projects')));
      const world = installHookWorld({ home: join(root, 'locomo', 'home'), db: join(root, 'locomo', 'engram.db'), cacheDir });
      const replayRuns = await lap('replay', () => replayLocomo(world, projects, options.jobs));
      const snapshot = join(root, 'locomo', 'snapshot.db');
      copyStore(world.db, snapshot);
      const byEvent = new Map<string, number[]>();
      for (const r of replayRuns) byEvent.set(r.event, [...(byEvent.get(r.event) ?? []), r.ms]);
      const replayHooks: Record<string, { p50: number; p95: number; n: number }> = {};
      for (const [event, list] of byEvent) {
        const s = summarize(list);
        replayHooks[event] = { p50: round(s.p50, 0), p95: round(s.p95, 0), n: s.n };
      }
      const sessions = projects.reduce((n, p) => n + new Set(p.conversation.turns.map((t) => t.session)).size, 0);
      const locomo: NonNullable<CarryOverReport['locomo']> = {
        conversations: projects.map((p) => p.conversation.sampleId),
        replay: { sessions, hookRuns: replayRuns.length, failures: replayRuns.filter((r) => r.codes.some((c) => c !== 0)).length, hooks: replayHooks },
        budgets: [],
      };
      report.locomo = locomo;
      write();
      const failed = replayRuns.find((r) => r.codes.some((c) => c !== 0));
      if (failed) console.warn(`carry-over: a ${failed.event} hook failed during the replay: ${failed.stderr.slice(0, 400)}`);

      const askAt = async (budget: number): Promise<void> => {
        copyStore(snapshot, world.db);
        const results = await lap(`questions@${budget}`, () => askQuestions(world, projects, budget, options));
        const group = <K extends string | number>(key: (r: QuestionResult) => K): Record<string, ShareRow> =>
          Object.fromEntries([...new Set(results.map(key))].sort().map((k) => [String(k), shareRow(results.filter((r) => key(r) === k))]));
        locomo.budgets.push({
          budget,
          env: budgetEnv(budget, options.briefShare),
          overall: shareRow(results),
          byCategory: group((r) => `${r.category} ${LOCOMO_CATEGORIES[r.category]}`),
          byConversation: group((r) => r.sampleId),
          questions: results,
        });
        locomo.budgets.sort((a, b) => a.budget - b.budget);
        write();
      };
      const budgets = options.parts.includes('locomo') ? [...options.budgets].sort((a, b) => Math.abs(a - 2000) - Math.abs(b - 2000) || a - b) : [];
      if (budgets.length > 0) await askAt(budgets[0]!);
      if (options.parts.includes('noise')) {
        copyStore(snapshot, world.db);
        report.noise = await lap('noise', () => measureNoise(world, projects, all, options));
        write();
      }
      if (options.parts.includes('latency')) await latency();
      for (const budget of budgets.slice(1)) await askAt(budget);
    } else if (options.parts.includes('latency')) await latency();
  } finally {
    // ENGRAM_BENCH_KEEP=1 keeps the stores and hook worlds (to profile a hook on a filled store afterwards).
    if (process.env.ENGRAM_BENCH_KEEP === '1') console.log(`carry-over: kept ${root}`);
    else rmSync(root, { recursive: true, force: true });
  }
  write();
  console.log(`carry-over: wrote ${join(dir, `${options.out}.md`)} in ${seconds.total} s`);
  return report;

  async function latency(): Promise<void> {
    report.latency = [];
    for (const size of options.latencySizes) {
      report.latency.push(await lap(`latency@${size}`, () => measureLatency(root, cacheDir, size, options)));
      write();
    }
  }
}

/** Sessions a quick run replays per conversation (its questions: those whose evidence is all in them). */
const QUICK_SESSIONS = 4;

/** The conversation cut to its first `sessions` sessions, with the questions answered inside them. */
export function firstSessions(conversation: LocomoConversation, sessions: number): LocomoConversation {
  const turns = conversation.turns.filter((t) => t.session <= sessions);
  const ids = new Set(turns.map((t) => t.diaId));
  return { ...conversation, turns, questions: conversation.questions.filter((q) => q.evidence.length > 0 && q.evidence.every((e) => ids.has(e))) };
}

function gitCommit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

const pct = (n: number): string => `${n.toFixed(1)} %`;

/** The Markdown report. */
export function renderCarryOver(r: CarryOverReport): string {
  const lines: string[] = [];
  lines.push(`# Carry-over: memory a new Claude Code session gets without asking`, '');
  if (r.label) lines.push(`**${r.label}**`, '');
  for (const note of r.notes ?? []) lines.push(`> ${note}`, '');
  lines.push(
    `Generated by \`npm run bench -- carry-over\` on ${r.date.slice(0, 10)} at commit ${r.commit} (${r.machine}); options: \`${JSON.stringify({ ...r.options, questions: undefined })}\`. ` +
      `Run time: ${Object.entries(r.seconds).map(([k, v]) => `${k} ${v} s`).join(', ')}.`,
    '',
    'Every hook is the command `engram hooks install --claude-code` wrote into a temporary `~/.claude/settings.json`, run as Claude Code runs it: `sh -c "<command>"`, the hook JSON on stdin, the project directory as working directory. See bench/carry-over.ts for the method.',
    '',
  );
  if (r.locomo) {
    const l = r.locomo;
    lines.push(
      '## LoCoMo conversations as Claude Code sessions',
      '',
      `Conversations ${l.conversations.join(', ')}: ${l.replay.sessions} sessions replayed (${l.replay.hookRuns} hook runs, ${l.replay.failures} failed). ` +
        'Speaker A (the first to speak) is the user, speaker B the assistant, each turn as `Name: text`. Each question of categories ' +
        `${r.options.categories.join(', ')} is asked in a fresh session of its conversation's project: SessionStart (startup), then UserPromptSubmit.`,
      '',
      'Evidence present: the share of a question\'s gold evidence turns found in the brief plus the prompt injection, quoted (the whole turn, or one excerpt of at least half the turn and 48 characters, whitespace, case and quote marks normalised) or cited by an `evt_` id or a turn reference (`#N` under a line naming its session, opened as `engram show <session>#N` opens it) whose event is the turn (`meta.uuid`). The budget is the total, split between `ENGRAM_BRIEF_TOKENS` and `ENGRAM_RECALL_TOKENS` as each row shows (`--brief-share`; default 1/2 to the brief, the ratio of their defaults, 1,200 and 1,200). Tokens: o200k (gpt-tokenizer), as the project counts.',
      '',
      '| budget (brief + recall) | questions | evidence present | quoted | cited | brief tokens (mean) | prompt tokens (mean) |',
      '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    );
    for (const b of l.budgets) {
      lines.push(`| ${b.budget} (${b.env.ENGRAM_BRIEF_TOKENS} + ${b.env.ENGRAM_RECALL_TOKENS}) | ${b.overall.n} | ${pct(b.overall.present)} | ${pct(b.overall.quoted)} | ${pct(b.overall.cited)} | ${b.overall.briefTokens} | ${b.overall.promptTokens} |`);
    }
    lines.push('', 'Target (issue #29): evidence present at 2K >= 80 %, at 1K >= 70 %.', '');
    if (l.budgets.length > 0) {
      lines.push('### Per category (evidence present)', '', `| category | ${l.budgets.map((b) => `@${b.budget}`).join(' | ')} |`, `| --- | ${l.budgets.map(() => '---:').join(' | ')} |`);
      for (const key of Object.keys(l.budgets[0]!.byCategory)) lines.push(`| ${key} (n=${l.budgets[0]!.byCategory[key]!.n}) | ${l.budgets.map((b) => pct(b.byCategory[key]?.present ?? 0)).join(' | ')} |`);
      lines.push('', '### Per conversation (evidence present)', '', `| conversation | ${l.budgets.map((b) => `@${b.budget}`).join(' | ')} | tokens injected @${l.budgets[0]!.budget} |`, `| --- | ${l.budgets.map(() => '---:').join(' | ')} | ---: |`);
      for (const key of Object.keys(l.budgets[0]!.byConversation)) {
        const first = l.budgets[0]!.byConversation[key]!;
        lines.push(`| ${key} (n=${first.n}) | ${l.budgets.map((b) => pct(b.byConversation[key]?.present ?? 0)).join(' | ')} | ${first.briefTokens + first.promptTokens} |`);
      }
      lines.push('');
    }
    lines.push('Hook wall time during the replay (the store growing from empty), ms:', '', '| hook | p50 | p95 | runs |', '| --- | ---: | ---: | ---: |');
    for (const [event, s] of Object.entries(l.replay.hooks)) lines.push(`| ${event} | ${s.p50} | ${s.p95} | ${s.n} |`);
    lines.push('');
  }
  if (r.noise) {
    const n = r.noise;
    lines.push(
      '## Noise (default budgets)',
      '',
      'Tokens injected at UserPromptSubmit when the answer is nowhere in the project: questions of the next conversation in the data file asked in each project, and seeded gibberish (random letter strings, keyboard mashes).',
      '',
      '| prompts | n | mean tokens | max | prompts with any injection | target |',
      '| --- | ---: | ---: | ---: | ---: | --- |',
      `| another conversation's questions | ${n.otherQuestions.n} | ${n.otherQuestions.promptTokensMean} | ${n.otherQuestions.promptTokensMax} | ${n.otherQuestions.nonEmpty} | mean <= 50 |`,
      `| gibberish | ${n.gibberish.n} | ${n.gibberish.promptTokensMean} | ${n.gibberish.promptTokensMax} | ${n.gibberish.nonEmpty} | 0 |`,
      '',
      `The SessionStart brief of those sessions (the project's own memory, expected): ${n.otherQuestions.briefTokensMean} tokens on average.`,
      '',
    );
  }
  if (r.latency) {
    lines.push(
      '## Hook latency',
      '',
      'Wall time of each hook command (process start to exit: what Claude Code waits for) in fresh sessions of a project whose store holds synthetic coding sessions (stored through the same hooks), default budgets; in each mode the first two sessions warm caches (and start the resident process) and are not counted. Target: each hook p95 < 300 ms at 100K events.',
      '',
      '- **resident** (the default): the hook hands its input to the store\'s resident hook process (`engram hooks daemon`, started by the first hook, ended after 60 idle minutes) and prints its answer: Node\'s start and one round trip.',
      '- **alone** (`ENGRAM_HOOK_DAEMON=off`, and the first hook after the resident process ended): the hook loads Engram and opens the store itself.',
      '',
      '| store (events) | fill | hook | resident p50 ms | resident p95 ms | alone p50 ms | alone p95 ms | hook CPU p50 ms (resident / alone) | runs |',
      '| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    );
    for (const row of r.latency) {
      for (const [event, s] of Object.entries(row.modes.resident)) {
        const a = row.modes.alone[event];
        lines.push(`| ${row.storedEvents.toLocaleString('en-US')} | ${row.fillSeconds} s | ${event} | ${s.p50} | ${s.p95} | ${a?.p50 ?? '-'} | ${a?.p95 ?? '-'} | ${s.cpuP50 ?? '-'} / ${a?.cpuP50 ?? '-'} | ${s.n} |`);
      }
    }
    lines.push('', 'Hook CPU: user + system time of the hook process and its children (GNU time), which the wait for a core on a busy machine does not inflate.');
    for (const row of r.latency) {
      if (row.residentCpu) lines.push(`At ${row.storedEvents.toLocaleString('en-US')} events the resident process itself used ${row.residentCpu.ms} ms of CPU for the ${row.residentCpu.hooks} counted hooks (${round(row.residentCpu.ms / Math.max(1, row.residentCpu.hooks), 1)} ms a hook; /proc, 10 ms ticks).`);
    }
    lines.push('');
  }
  if (r.coding) {
    lines.push('## Real coding work: one project over a month', '');
    if ('skipped' in r.coding) lines.push(`Skipped: ${r.coding.skipped}.`, '');
    else {
      lines.push(
        'The main sessions of `claude-code-projects/-Users-dain-workspace-danieldemmel-me-next/` (empty files and `agent-*` sub-agent files left out), oldest first, replayed turn by turn (UserPromptSubmit, the turn\'s records, Stop; SessionEnd at the end). At each later session\'s first prompt: the files of earlier sessions\' tool calls that this session goes on to touch (`file_path` of its calls), and the earlier error lines that recur in it or came from a call on such a file; present when the path (or its path relative to the project root) or the error line\'s first 60 characters is in the SessionStart plus first-prompt injection.',
        '',
        '| session | date | brief tokens | prompt tokens | earlier files touched again: present | earlier errors: present |',
        '| --- | --- | ---: | ---: | --- | --- |',
      );
      for (const s of r.coding) {
        const f = s.files.filter((x) => x.present).length;
        const e = s.errors.filter((x) => x.present).length;
        lines.push(`| ${s.sessionId.slice(0, 8)} | ${s.date} | ${s.briefTokens} | ${s.promptTokens} | ${f} of ${s.files.length}${s.files.length ? `: ${s.files.map((x) => `${x.present ? '✓' : '✗'} \`${x.path}\``).join(', ')}` : ''} | ${e} of ${s.errors.length} |`);
      }
      const files = r.coding.flatMap((s) => s.files);
      const errors = r.coding.flatMap((s) => s.errors);
      lines.push(
        '',
        `Over the ${r.coding.length} later sessions: ${files.filter((x) => x.present).length} of ${files.length} earlier files touched again and ${errors.filter((x) => x.present).length} of ${errors.length} earlier errors were in the first injection.`,
        ...(errors.length > 0 ? ['', 'Earlier errors checked (first 80 characters):', '', ...[...new Set(errors.map((x) => x.error))].map((text) => `- \`${text.replace(/`/g, "'")}\``)] : []),
      );
      lines.push('');
    }
  }
  return `${lines.join('\n')}\n`;
}
