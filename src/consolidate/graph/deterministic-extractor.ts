import type { EdgeType, EntityKind } from '../../model/graph.js';
import { MAX_ENTITY_NAME_CHARS } from '../../model/graph.js';
import type { EntityExtractor, ExtractedEdge, ExtractedEntity, Extraction, ExtractionInput } from './extractor.js';

/** File extensions a path mention must end with (so "e.g." and "v1.2" are not files). */
const FILE_EXT = 'ts|tsx|mts|cts|js|jsx|mjs|cjs|json|md|py|go|rs|java|kt|rb|php|cs|c|h|cc|cpp|hpp|sql|yaml|yml|toml|sh|css|html|proto|tf|lock|txt|env|ini|cfg|conf';
const PATH_RE = new RegExp(`(?<![\\w/.-])(?:\\.{0,2}/)?(?:[\\w@.-]+/)*[\\w.-]+\\.(?:${FILE_EXT})(?![\\w/-])`, 'g');
/** `payment service`, `payment-service`, `services/payment/`, `service:payment`. */
const SERVICE_RES = [/\b([a-z][a-z0-9]*(?:-[a-z0-9]+)*)[- ]service\b/gi, /\bservices\/([a-z][\w-]*)\//gi, /\bservice:([a-z][\w-]*)/gi];
/** Error codes and error classes: ECONNREFUSED, ERR_PAYMENT_TIMEOUT, TS2345, E1234, HTTP 503, CardDeclinedError. */
/** Words before "service" that name no service ("the service", "each service", "a web service"). */
const NOT_A_SERVICE = new Set(
  'the a an this that these those our your their its my his her each every any which what whose one same other another new old main whole web micro some no all both either'.split(' '),
);
const ERROR_RE = /\b(E[A-Z]{4,}|ERR_[A-Z0-9_]+|[A-Z][A-Z0-9]*_ERROR|TS\d{4,5}|E\d{3,5}|HTTP [45]\d\d|[A-Z][A-Za-z0-9]*(?:Error|Exception))\b/g;
/** Command-line tools whose invocations name a command entity (first words: `npm run build`, `git rebase`). */
const CLI_TOOLS = new Set([
  'npm', 'npx', 'pnpm', 'yarn', 'node', 'git', 'make', 'docker', 'kubectl', 'helm', 'cargo', 'go', 'pytest', 'python', 'python3', 'pip',
  'terraform', 'psql', 'curl', 'engram', 'tsc', 'vitest', 'jest', 'eslint', 'bash', 'sh', 'gradle', 'mvn', 'bundle', 'rake', 'deno', 'bun',
]);
/** Subcommands kept as a third word (`npm run build`, `docker compose up`). */
const RUNNERS = new Set(['run', 'exec', 'compose', 'workspace']);
/** camelCase or PascalCase with two humps at least, optionally called: `processPayment`, `LedgerClient.reserve()`. */
const SYMBOL_RE = /\b((?:[a-z][a-z0-9]*[A-Z]|[A-Z][a-z0-9]+[A-Z])[A-Za-z0-9]*(?:\.[A-Za-z_$][\w$]*)?)(\(\))?/g;
const SNAKE_CALL_RE = /\b([a-z][a-z0-9]*_[a-z0-9_]+)\(\)/g;
const PERSON_RE = /(?<![\w.])@([a-z][a-z0-9_-]{1,38})\b/gi;
const PROJECT_TAG = /^project:([\w.-]+)$/;

/** Verbs between two entities of a sentence that make a typed edge from the first to the second. */
const RELATIONS: { re: RegExp; type: EdgeType }[] = [
  { re: /\b(?:depends on|relies on|requires|needs|talks to|is downstream of)\b/i, type: 'depends_on' },
  { re: /\b(?:calls|invokes|hits|sends requests to)\b/i, type: 'calls' },
  { re: /\b(?:imports|loads)\b/i, type: 'imports' },
  { re: /\b(?:(?:was |is |got )?fixed (?:by|in|with)|fix(?:ed)? (?:is )?in|resolved (?:by|in))\b/i, type: 'fixed_by' },
];
/** A sentence-level relation's confidence: a stated relation, read by a pattern. */
const RELATION_CONFIDENCE = 0.8;
/** What a decision event decides about each entity it names. */
const DECIDED_CONFIDENCE = 0.9;
/** Co-mention of an error, service or decision with another entity in one event: weak, below impact's default. */
const MENTION_CONFIDENCE = 0.5;
/** Kinds whose co-mentions are kept as `mentions` edges (hubs a question is asked about). */
const HUB_KINDS: ReadonlySet<EntityKind> = new Set(['error', 'service', 'decision']);
/** Most characters of a decision's text used as its name. */
const DECISION_NAME_CHARS = 120;
const QUOTE_CHARS = 160;
/** Most distinct entities kept per event, of hub kinds and of the others each (a listing of a thousand paths is not a thousand facts). */
const MAX_ENTITIES_PER_EVENT = 200;
/** Most co-mentioned entities linked from one hub entity of an event. */
const MAX_MENTIONS_PER_HUB = 30;

/**
 * Deterministic extraction from one event: file paths, services, error codes and classes, commands, symbols,
 * people (@handles), projects (project:<name> tags) and, for decision events, the decision itself; typed edges
 * from relation verbs between two entities of a sentence, `decided` from a decision to what it names, and weak
 * `mentions` from an error, service or decision to the other entities of the event.
 */
export class DeterministicExtractor implements EntityExtractor {
  readonly name = 'deterministic';

  async extract(event: ExtractionInput): Promise<Extraction> {
    const text = event.content;
    const found: ExtractedEntity[] = [];
    const seen = new Set<string>();
    const add = (kind: EntityKind, rawName: string, at: number) => {
      const name = rawName.trim().slice(0, MAX_ENTITY_NAME_CHARS);
      if (name === '') return;
      const key = `${kind}:${name}`;
      // Every mention is kept for sentence relations; the entity list dedupes in toExtraction.
      found.push({ kind, name, at, quote: quoteAround(text, at) });
      seen.add(key);
    };
    const taken: [number, number][] = [];
    const isTaken = (a: number, b: number) => taken.some(([s, e]) => a < e && b > s);

    for (const m of text.matchAll(PATH_RE)) {
      const path = m[0].replace(/^\.\//, '');
      if (/^\d+(\.\d+)+$/.test(path) || path.startsWith('http')) continue;
      add('file', path, m.index);
      taken.push([m.index, m.index + m[0].length]);
    }
    for (const re of SERVICE_RES) {
      for (const m of text.matchAll(re)) if (!NOT_A_SERVICE.has(m[1]!.toLowerCase())) add('service', m[1]!.toLowerCase(), m.index);
    }
    for (const m of text.matchAll(ERROR_RE)) {
      if (isTaken(m.index, m.index + m[0].length)) continue;
      add('error', m[1]!, m.index);
      taken.push([m.index, m.index + m[0].length]);
    }
    for (const { name, at } of commandsIn(text, event)) add('command', name, at);
    for (const m of text.matchAll(SYMBOL_RE)) {
      const end = m.index + m[0].length;
      if (isTaken(m.index, end)) continue;
      add('symbol', m[1]!, m.index);
    }
    for (const m of text.matchAll(SNAKE_CALL_RE)) if (!isTaken(m.index, m.index + m[0].length)) add('symbol', m[1]!, m.index);
    for (const m of text.matchAll(PERSON_RE)) add('person', m[1]!.toLowerCase(), m.index);
    for (const tag of event.tags) {
      const p = PROJECT_TAG.exec(tag);
      if (p) add('project', p[1]!, 0);
    }
    if (event.kind === 'decision') add('decision', decisionName(text), 0);
    return toExtraction(text, found, event.kind === 'decision' ? decisionName(text) : null);
  }
}

/** The name of the decision an event records: its first sentence, cut. */
export function decisionName(text: string): string {
  const first = text.trim().split(/(?<=[.!?])\s|\n/)[0] ?? '';
  return first.slice(0, DECISION_NAME_CHARS).trim();
}

function toExtraction(text: string, found: ExtractedEntity[], decision: string | null): Extraction {
  const entities: ExtractedEntity[] = [];
  const byKey = new Set<string>();
  let hubs = 0;
  let others = 0;
  for (const e of found) {
    const key = `${e.kind}:${e.name}`;
    if (byKey.has(key)) continue;
    // Hubs (errors, services, decisions) and the rest are capped apart, so a long listing cannot crowd out its error.
    const isHub = HUB_KINDS.has(e.kind);
    if ((isHub ? hubs : others) >= MAX_ENTITIES_PER_EVENT) continue;
    if (isHub) hubs++;
    else others++;
    byKey.add(key);
    entities.push(e);
  }
  const edges = new Map<string, ExtractedEdge>();
  const put = (edge: ExtractedEdge) => {
    const key = `${edge.type}:${edge.src.kind}:${edge.src.name}:${edge.dst.kind}:${edge.dst.name}`;
    const prior = edges.get(key);
    if (!prior || prior.confidence < edge.confidence) edges.set(key, edge);
  };
  // Relations: a verb between two consecutive mentions of one sentence.
  const mentions = found.filter((e) => e.kind !== 'decision' && e.kind !== 'project').sort((a, b) => a.at - b.at);
  for (const [start, end] of sentences(text)) {
    const inside = mentions.filter((m) => m.at >= start && m.at < end);
    for (let i = 0; i + 1 < inside.length; i++) {
      const a = inside[i]!;
      for (let j = i + 1; j < inside.length; j++) {
        const b = inside[j]!;
        if (b.kind === a.kind && b.name === a.name) continue;
        const between = text.slice(a.at + a.name.length, b.at);
        const rel = RELATIONS.find((r) => r.re.test(between));
        if (rel) put({ type: rel.type, src: a, dst: b, confidence: RELATION_CONFIDENCE, quote: quote(text.slice(a.at, b.at + b.name.length)) });
        break; // only the next entity after a verb: "A depends on B and C" also links A to C through the list below
      }
    }
    // "A depends on B, C and D": a verb after the first mention applies to each later mention of the sentence.
    const head = inside[0];
    if (head) {
      const later = inside.slice(1);
      const firstGap = later[0] ? text.slice(head.at + head.name.length, later[0].at) : '';
      const rel = RELATIONS.find((r) => r.re.test(firstGap));
      if (rel) for (const b of later) if (!(b.kind === head.kind && b.name === head.name)) put({ type: rel.type, src: head, dst: b, confidence: RELATION_CONFIDENCE, quote: quote(text.slice(start, end)) });
    }
  }
  if (decision !== null) {
    for (const e of entities) if (e.kind !== 'decision') put({ type: 'decided', src: { kind: 'decision', name: decision }, dst: e, confidence: DECIDED_CONFIDENCE, quote: quote(text) });
  }
  for (const hub of entities) {
    if (!HUB_KINDS.has(hub.kind) || hub.kind === 'decision') continue;
    let linked = 0;
    for (const other of entities) {
      if (other === hub || other.kind === 'decision') continue;
      if (++linked > MAX_MENTIONS_PER_HUB) break;
      put({ type: 'mentions', src: hub, dst: other, confidence: MENTION_CONFIDENCE, quote: hub.quote });
    }
  }
  return { entities, edges: [...edges.values()].map((e) => ({ ...e, src: { kind: e.src.kind, name: e.src.name }, dst: { kind: e.dst.kind, name: e.dst.name } })) };
}

/** Commands: a tool call's command line (meta.command or the content of a shell tool), `$ ` lines, backticked invocations. */
function commandsIn(text: string, event: ExtractionInput): { name: string; at: number }[] {
  const out: { name: string; at: number }[] = [];
  const metaCommand = typeof event.meta?.command === 'string' ? event.meta.command : undefined;
  const isShell = event.kind === 'tool_call' && /^(bash|shell|sh|terminal|run_command|exec)$/i.test(event.toolName ?? '');
  if (metaCommand) {
    const name = commandName(metaCommand);
    if (name) out.push({ name, at: 0 });
  } else if (isShell) {
    const name = commandName(text.replace(/^\{?\s*"?command"?\s*:\s*"?/, ''));
    if (name) out.push({ name, at: 0 });
  }
  for (const m of text.matchAll(/(?:^|\n)\s*\$ ([^\n]+)|`([^`\n]+)`/g)) {
    const line = m[1] ?? m[2]!;
    const name = commandName(line);
    if (name) out.push({ name, at: m.index });
  }
  return out;
}

function commandName(line: string): string | null {
  const words = line.trim().split(/\s+/).filter((w) => !/^[A-Z_]+=/.test(w));
  const tool = words[0];
  if (!tool || !CLI_TOOLS.has(tool)) return null;
  const sub = words[1];
  if (!sub || sub.startsWith('-') || /[^\w:.@/-]/.test(sub)) return tool;
  const third = words[2];
  if (RUNNERS.has(sub) && third && !third.startsWith('-') && !/[^\w:.@/-]/.test(third)) return `${tool} ${sub} ${third}`;
  return `${tool} ${sub}`;
}

function sentences(text: string): [number, number][] {
  const out: [number, number][] = [];
  let start = 0;
  for (const m of text.matchAll(/[.!?](?=\s)|\n/g)) {
    out.push([start, m.index + 1]);
    start = m.index + 1;
  }
  if (start < text.length) out.push([start, text.length]);
  return out;
}

function quoteAround(text: string, at: number): string {
  const from = Math.max(0, at - 60);
  return quote((from > 0 ? '…' : '') + text.slice(from, from + QUOTE_CHARS));
}

function quote(s: string): string {
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length > QUOTE_CHARS ? `${flat.slice(0, QUOTE_CHARS - 1)}…` : flat;
}
