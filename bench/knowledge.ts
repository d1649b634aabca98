/**
 * `npm run bench -- knowledge [--seed 42] [--quick]`: entity questions over a generated multi-session trace (SYNTHETIC:
 * made-up services, bugs and logs), answered two ways within the same token budget:
 *
 * - flat recall: `recall("which services did <ERROR> touch?")`, the hits' excerpts;
 * - expansion: `expand("error:<ERROR>", question)` over the knowledge graph built by `engram graph build`.
 *
 * Each bug touches 2-4 services. One of them floods the logs (retries: many events naming the error and that service),
 * the others appear once or twice among other sessions' work, and discussion events name the error with no service.
 * Measured per (bug, touched service) pair: the service is named in the answer (answer found), and the answer cites
 * an event that names both the error and the service (answer-bearing evidence found); and the untouched services
 * the answer names (false services). Writes bench/results/knowledge.{md,json}.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openEngram } from '../src/engine.js';
import type { EventInput } from '../src/model/event.js';
import { machineLine } from './lib/stats.js';
import { Prng } from './lib/prng.js';

const SERVICES = ['payments', 'ledger', 'checkout', 'billing', 'auth', 'inventory', 'shipping', 'catalog', 'search', 'notifications', 'gateway', 'pricing', 'refunds', 'reporting', 'identity', 'fraud', 'loyalty', 'tax'];
const BUDGET_TOKENS = 600;

interface Bug {
  code: string;
  nickname: string;
  services: string[];
  /** Events naming the error and each service: the answer-bearing events. */
  bearing: Map<string, Set<string>>;
}

/** The shared mulberry32 (lib/prng.ts) as a function: the same sequence for the same seed. */
function rng(seed: number): () => number {
  const prng = new Prng(seed);
  return () => prng.next();
}

export async function runKnowledgeBench(args: { seed: number; quick: boolean }): Promise<void> {
  const random = rng(args.seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
  const bugsCount = args.quick ? 10 : 40;
  const sessionsCount = args.quick ? 12 : 40;
  const fillerPerSession = args.quick ? 20 : 40;
  const dir = mkdtempSync(join(tmpdir(), 'engram-bench-knowledge-'));
  const mem = await openEngram({ db: join(dir, 'bench.db') });
  try {
    const bugs: Bug[] = [];
    for (let i = 0; i < bugsCount; i++) {
      const services = new Set<string>();
      const want = 2 + Math.floor(random() * 3);
      while (services.size < want) services.add(pick(SERVICES));
      const word = pick(['DECLINED', 'TIMEOUT', 'MISMATCH', 'OVERFLOW', 'STALE', 'DUPLICATE', 'MISSING', 'LOCKED']);
      bugs.push({ code: `ERR_${word}_${100 + i}`, nickname: `${word.toLowerCase()} bug #${i}`, services: [...services], bearing: new Map() });
    }
    // Events per session: filler work, then bug events scattered over random sessions.
    const sessions: { id: string; events: { input: EventInput; bug?: Bug; service?: string }[] }[] = Array.from({ length: sessionsCount }, (_, i) => ({ id: `s${i}`, events: [] }));
    for (const s of sessions) {
      for (let j = 0; j < fillerPerSession; j++) {
        const svc = pick(SERVICES);
        s.events.push({
          input: pick([
            { kind: 'user', content: `Can you look at the ${svc} service dashboard? Latency looks fine but I want a second opinion.` },
            { kind: 'assistant', content: `The ${svc} service handled the deploy well; nothing unusual in its metrics today.` },
            { kind: 'tool_result', toolName: 'bash', content: `${svc}-service: healthcheck ok (${Math.floor(random() * 900)} ms)` },
            { kind: 'note', content: `Reminder: rotate the ${svc} service credentials next sprint.` },
          ] as EventInput[]),
        });
      }
    }
    for (const bug of bugs) {
      const [flood, ...rest] = bug.services;
      const floods = 8 + Math.floor(random() * 8);
      const home = pick(sessions);
      for (let j = 0; j < floods; j++) home.events.push({ input: { kind: 'tool_result', toolName: 'bash', content: `${flood}-service: ${bug.code} retrying request ${j + 1}/${floods} (upstream answered 502)` }, bug, service: flood! });
      for (const svc of rest) {
        const s = pick(sessions);
        s.events.push({ input: { kind: 'assistant', content: `Found it: the ${svc} service also logs ${bug.code} when the batch job runs; that is the same root cause.` }, bug, service: svc });
      }
      for (let j = 0; j < 4; j++) pick(sessions).events.push({ input: { kind: 'user', content: `Still seeing ${bug.code} this morning, any news on the ${bug.nickname}?` } });
    }
    const t0 = performance.now();
    let events = 0;
    for (const s of sessions) {
      // Bug events land at random places in the session, not at its end.
      const ordered = s.events.map((e) => ({ e, k: random() })).sort((a, b) => a.k - b.k).map((x) => x.e);
      const out = await mem.append(s.id, ordered.map((e) => e.input));
      events += out.length;
      out.forEach((o, i) => {
        const { bug, service } = ordered[i]!;
        if (bug && service) bug.bearing.set(service, (bug.bearing.get(service) ?? new Set()).add(o.record.id));
      });
    }
    const ingestMs = performance.now() - t0;
    const t1 = performance.now();
    const built = await mem.graphBuilder().buildFromSessions();
    const buildMs = performance.now() - t1;

    const score = { recall: { found: 0, evidence: 0, falseServices: 0, tokens: 0 }, bare: { found: 0, evidence: 0, falseServices: 0, tokens: 0 }, expand: { found: 0, evidence: 0, falseServices: 0, tokens: 0 } };
    let pairs = 0;
    const t2 = performance.now();
    let expandMs = 0;
    let recallMs = 0;
    for (const bug of bugs) {
      const question = `which services did ${bug.code} touch?`;
      const r0 = performance.now();
      const flat = await mem.recall(question, { budgetTokens: BUDGET_TOKENS, retriever: 'fts' });
      recallMs += performance.now() - r0;
      const bare = await mem.recall(bug.code, { budgetTokens: BUDGET_TOKENS, retriever: 'fts' });
      const bareText = bare.hits.map((h) => h.excerpt).join('\n');
      const bareIds = new Set(bare.hits.map((h) => h.eventId));
      score.bare.tokens += bare.usedTokens;
      const e0 = performance.now();
      const expanded = await mem.knowledge.expand(`error:${bug.code}`, { question, maxTokens: BUDGET_TOKENS });
      expandMs += performance.now() - e0;
      const flatText = flat.hits.map((h) => h.excerpt).join('\n');
      const flatIds = new Set(flat.hits.map((h) => h.eventId));
      // Expansion: services named on lines of the block, with the events each line cites.
      const lines = expanded.groups.flatMap((g) => g.lines);
      const expandIds = new Set(lines.flatMap((l) => l.cites));
      score.recall.tokens += flat.usedTokens;
      score.expand.tokens += expanded.tokens;
      for (const svc of bug.services) {
        pairs++;
        const bearing = bug.bearing.get(svc) ?? new Set<string>();
        if (new RegExp(`\\b${svc}\\b`).test(flatText)) score.recall.found++;
        if ([...bearing].some((id) => flatIds.has(id))) score.recall.evidence++;
        if (new RegExp(`\\b${svc}\\b`).test(expanded.text)) score.expand.found++;
        if (new RegExp(`\\b${svc}\\b`).test(bareText)) score.bare.found++;
        if ([...bearing].some((id) => bareIds.has(id))) score.bare.evidence++;
        if ([...bearing].some((id) => expandIds.has(id))) score.expand.evidence++;
      }
      for (const svc of SERVICES.filter((s) => !bug.services.includes(s))) {
        if (new RegExp(`\\b${svc}\\b`).test(flatText)) score.recall.falseServices++;
        if (new RegExp(`\\b${svc}\\b`).test(expanded.text)) score.expand.falseServices++;
        if (new RegExp(`\\b${svc}\\b`).test(bareText)) score.bare.falseServices++;
      }
    }
    const askMs = performance.now() - t2;
    const pct = (n: number) => `${((100 * n) / pairs).toFixed(1)} %`;
    const counts = await mem.store.graph.counts();
    const report = {
      synthetic: true,
      seed: args.seed,
      bugs: bugsCount,
      sessions: sessionsCount,
      events,
      pairs,
      budgetTokens: BUDGET_TOKENS,
      graph: counts,
      ingestMs: Math.round(ingestMs),
      buildMs: Math.round(buildMs),
      buildEventsPerSecond: Math.round(built.events / (buildMs / 1000)),
      recall: { ...score.recall, meanTokens: Math.round(score.recall.tokens / bugsCount), meanMs: +(recallMs / bugsCount).toFixed(1) },
      bareRecall: { ...score.bare, meanTokens: Math.round(score.bare.tokens / bugsCount) },
      expand: { ...score.expand, meanTokens: Math.round(score.expand.tokens / bugsCount), meanMs: +(expandMs / bugsCount).toFixed(1) },
      askMs: Math.round(askMs),
      machine: machineLine(),
    };
    const md = [
      '# Knowledge graph: entity questions, expansion against flat recall (SYNTHETIC trace)',
      '',
      `Generated by \`npm run bench -- knowledge --seed ${args.seed}${args.quick ? ' --quick' : ''}\` (bench/knowledge.ts) on ${report.machine}, SQLite.`,
      '',
      `**Synthetic data**: ${sessionsCount} sessions, ${events} events, ${bugsCount} made-up bugs (error codes) each touching 2-4 of ${SERVICES.length} services.`,
      "One touched service floods the logs with the error (8-15 retry lines in one session); the others name it once, in other sessions; four",
      'discussion events per bug name the error and no service; the rest is filler work naming services without errors.',
      `Question per bug: "which services did ERR_... touch?", answered within ${BUDGET_TOKENS} tokens by flat recall (full-text) and by`,
      '`expand` of the error entity with the question. Per (bug, touched service) pair:',
      '',
      '| | flat recall (the question) | flat recall (the error code alone) | expansion |',
      '| --- | --- | --- | --- |',
      `| service named in the answer | ${pct(score.recall.found)} | ${pct(score.bare.found)} | ${pct(score.expand.found)} |`,
      `| answer-bearing evidence cited (an event naming the error and the service) | ${pct(score.recall.evidence)} | ${pct(score.bare.evidence)} | ${pct(score.expand.evidence)} |`,
      `| untouched services named (total over ${bugsCount} questions) | ${score.recall.falseServices} | ${score.bare.falseServices} | ${score.expand.falseServices} |`,
      `| mean answer tokens | ${report.recall.meanTokens} | ${report.bareRecall.meanTokens} | ${report.expand.meanTokens} |`,
      `| mean latency per question | ${report.recall.meanMs} ms | | ${report.expand.meanMs} ms |`,
      '',
      `${pairs} pairs. Graph build (\`engram graph build\`, deterministic extraction): ${built.events} events in ${report.buildMs} ms (${report.buildEventsPerSecond} events/s);`,
      `${counts.entities} entities, ${counts.edges} edges, ${counts.citations} citations.`,
      '',
      'Flat recall given the whole question spends part of its budget on filler events that share its common words (`services`,',
      '`touch`) once the events holding the error code are in. (Before b029ce7 none of its hits held the error at this size: the',
      "full-text path bounded for common words let the newest rows of any term crowd the identifier's rows out; fixed, with a",
      'contract test.) Given the error code alone, recall finds the events that hold it.',
      '',
      'Why expansion does better than the error code alone: recall ranks events, so the retry flood of one service fills the budget with near-identical lines, and a',
      'service named once, in another session, is ranked below them; expansion groups by neighbour entity, so each co-mentioned',
      "service is one line citing its events, whatever how often the logs repeat it. A service named with the error only in an event the",
      "extractor does not read as a service (here every mention is `<name> service` or `<name>-service`) would be missed by both the",
      'graph and this measure; real traces name services less regularly (docs/knowledge.md, limits).',
      '',
    ].join('\n');
    const out = join(import.meta.dirname, 'results');
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, 'knowledge.md'), md);
    writeFileSync(join(out, 'knowledge.json'), JSON.stringify(report, null, 2) + '\n');
    console.log(md);
  } finally {
    await mem.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
