/**
 * Entity extraction by a model (issue #16 item 1), through the structured escalation of consolidation
 * (structured-escalation.ts): a chunk of events is sent to the model, which answers entities and typed edges as
 * JSON (validated by a zod schema, near-JSON repaired), each citing the events it came from with the words that
 * say so. Normal level first; over its caps, invalid, or failing, an aggressive level (stricter prompt, half the
 * caps); then the deterministic level, where the model adds nothing. Citations and edges carry the confidence of
 * the level that made them (0.7 / 0.5). Nothing the model says is taken on its word: a cite of an event that was
 * not in the chunk, a quote that is not in the cited event, or a name the event does not contain is dropped, and
 * the drops are counted. The model's output is merged with the deterministic extractor's, per event, one entity
 * per key (kind and name): the deterministic rows stand, the model adds what patterns do not read.
 */
import { z } from 'zod';
import { EDGE_TYPES, ENTITY_KINDS, MAX_ENTITY_NAME_CHARS, type EdgeType, type EntityKind } from '../../model/graph.js';
import type { ChatMessage, ChatModel } from '../../providers/llm/chat-model.js';
import { LEVEL_CONFIDENCE, type BoundCheck, type EscalationLevel, type EscalationTelemetry, type LlmLevel } from '../escalation.js';
import { deriveWithEscalation } from '../structured-escalation.js';
import type { TelemetrySink } from '../telemetry.js';
import { DeterministicExtractor } from './deterministic-extractor.js';
import type { EntityExtractor, ExtractedEdge, ExtractedEntity, Extraction, ExtractionInput } from './extractor.js';

/** Events per model call. */
export const LLM_CHUNK_EVENTS = 20;
/** Characters of event text per model call (each event cut to its share). */
export const LLM_CHUNK_CHARS = 12_000;
/** Characters of one event shown to the model at most. */
const EVENT_CHARS = 2_000;
/** Entities and edges per chunk at the normal level; the aggressive level allows half. */
export const LLM_CHUNK_CAPS = { entities: 40, edges: 30 } as const;
/** Longest quote kept (characters). */
const QUOTE_CHARS = 200;
/** The telemetry event of one chunk's extraction (level, counts, drops). */
export const GRAPH_EXTRACTION_EVENT = 'graph.extraction';

const refSchema = z.object({ kind: z.enum(ENTITY_KINDS), name: z.string().min(1).max(MAX_ENTITY_NAME_CHARS) });
const citeSchema = z.object({ event: z.string().min(1).max(40), quote: z.string().min(1).max(1000) });
const answerSchema = z.object({
  entities: z.array(refSchema.extend({ cites: z.array(citeSchema).min(1).max(8) })).default([]),
  edges: z.array(z.object({ type: z.enum(EDGE_TYPES), src: refSchema, dst: refSchema, cites: z.array(citeSchema).min(1).max(8) })).default([]),
});
type Answer = z.output<typeof answerSchema>;

/** Why a cite was dropped. */
export interface DropCounts {
  /** It named an event that was not in the chunk. */
  unknownEvent: number;
  /** Its quote is not in the cited event's text. */
  misquoted: number;
  /** The entity's name (or an edge end's) is not in the cited event's text. */
  nameNotInEvent: number;
  /** An entity or edge left with no valid cite, so not stored. */
  uncitedItems: number;
}

export interface LlmExtractionStats {
  chunks: number;
  events: number;
  /** Chunks by the level whose answer was used. */
  levels: Record<EscalationLevel, number>;
  /** Entity and edge mentions (one per cited event) the model added after verification. */
  entities: number;
  edges: number;
  dropped: DropCounts;
  usage: { inputTokens: number; outputTokens: number };
}

export interface LlmExtractorOptions {
  /** The model; null: the deterministic level only (the same output as the deterministic extractor). */
  llm: ChatModel | null;
  /** The extractor merged with the model's output. Default the deterministic extractor. */
  base?: EntityExtractor;
  /** Escalation counts (e.g. `logEscalationsTo(mem.bus, 'graph:entities')`). */
  telemetry?: EscalationTelemetry;
  /** Receives one {@link GRAPH_EXTRACTION_EVENT} per chunk: level, events, what was kept and dropped. */
  sink?: TelemetrySink;
  caps?: { entities: number; edges: number };
  chunkEvents?: number;
}

interface Chunk {
  events: readonly ExtractionInput[];
  /** `e1`... -> index in `events`. */
  refs: Map<string, number>;
}

/** A verified item of one event: what the builder stores, with the level's confidence. */
type PerEvent = Extraction;

export class LlmEntityExtractor implements EntityExtractor {
  readonly name: string;
  private readonly base: EntityExtractor;
  private readonly caps: { entities: number; edges: number };
  private readonly chunkEvents: number;
  private readonly counters: LlmExtractionStats = {
    chunks: 0,
    events: 0,
    levels: { normal: 0, aggressive: 0, deterministic: 0 },
    entities: 0,
    edges: 0,
    dropped: { unknownEvent: 0, misquoted: 0, nameNotInEvent: 0, uncitedItems: 0 },
    usage: { inputTokens: 0, outputTokens: 0 },
  };

  constructor(private readonly options: LlmExtractorOptions) {
    this.base = options.base ?? new DeterministicExtractor();
    this.caps = options.caps ?? LLM_CHUNK_CAPS;
    this.chunkEvents = Math.max(1, options.chunkEvents ?? LLM_CHUNK_EVENTS);
    this.name = options.llm ? `llm:${options.llm.name}+${this.base.name}` : this.base.name;
  }

  /** Counts so far: chunks by level, what the model added, what was dropped and why, tokens. */
  stats(): LlmExtractionStats {
    return structuredClone(this.counters);
  }

  async extract(event: ExtractionInput): Promise<Extraction> {
    return (await this.extractBatch([event]))[0]!;
  }

  async extractBatch(events: readonly ExtractionInput[]): Promise<Extraction[]> {
    const out = await Promise.all(events.map((e) => this.base.extract(e)));
    for (const chunk of chunks(events, this.chunkEvents)) {
      const start = events.indexOf(chunk.events[0]!);
      const added = await this.extractChunk(chunk);
      added.forEach((x, i) => (out[start + i] = merge(out[start + i]!, x)));
    }
    return out;
  }

  private async extractChunk(chunk: Chunk): Promise<PerEvent[]> {
    const drops: DropCounts = { unknownEvent: 0, misquoted: 0, nameNotInEvent: 0, uncitedItems: 0 };
    let verified: PerEvent[] = chunk.events.map(() => ({ entities: [], edges: [] }));
    const result = await deriveWithEscalation(
      {
        schema: answerSchema,
        purpose: 'graph:entities',
        messages: (level) => prompt(chunk, level, this.capsAt(level)),
        maxTokens: (level) => (level === 'normal' ? 2048 : 1024),
        check: (value, level) => this.check(value, level, chunk),
        deterministic: () => ({ entities: [], edges: [] }),
      },
      { llm: this.options.llm, ...(this.options.telemetry ? { telemetry: this.options.telemetry } : {}) },
    );
    if (result.level !== 'deterministic') verified = verify(result.value, chunk, LEVEL_CONFIDENCE[result.level], drops);
    const c = this.counters;
    c.chunks++;
    c.events += chunk.events.length;
    c.levels[result.level]++;
    const kept = { entities: verified.reduce((n, x) => n + x.entities.length, 0), edges: verified.reduce((n, x) => n + x.edges.length, 0) };
    c.entities += kept.entities;
    c.edges += kept.edges;
    for (const k of Object.keys(drops) as Array<keyof DropCounts>) c.dropped[k] += drops[k];
    c.usage.inputTokens += result.usage.inputTokens;
    c.usage.outputTokens += result.usage.outputTokens;
    this.options.sink?.log({
      tsMs: Date.now(),
      type: GRAPH_EXTRACTION_EVENT,
      data: { level: result.level, events: chunk.events.length, ...kept, dropped: drops, ...(result.model ? { model: result.model } : {}) },
    });
    return verified;
  }

  private capsAt(level: LlmLevel): { entities: number; edges: number } {
    return level === 'normal' ? this.caps : { entities: Math.max(1, Math.floor(this.caps.entities / 2)), edges: Math.max(1, Math.floor(this.caps.edges / 2)) };
  }

  /** Within the level's caps, and not an answer whose every cite fails verification. */
  private check(value: Answer, level: EscalationLevel, chunk: Chunk): BoundCheck {
    if (level === 'deterministic') return { ok: true };
    const caps = this.capsAt(level);
    if (value.entities.length > caps.entities) return { ok: false, outcome: 'over_budget', reason: `${value.entities.length} entities, at most ${caps.entities} per chunk` };
    if (value.edges.length > caps.edges) return { ok: false, outcome: 'over_budget', reason: `${value.edges.length} edges, at most ${caps.edges} per chunk` };
    const items = value.entities.length + value.edges.length;
    if (items > 0) {
      const probe = verify(value, chunk, LEVEL_CONFIDENCE[level], { unknownEvent: 0, misquoted: 0, nameNotInEvent: 0, uncitedItems: 0 });
      if (probe.every((x) => x.entities.length === 0 && x.edges.length === 0)) {
        return { ok: false, outcome: 'invalid', reason: `none of the ${items} items cites an event of the chunk with words it holds` };
      }
    }
    return { ok: true };
  }
}

function chunks(events: readonly ExtractionInput[], size: number): Chunk[] {
  const out: Chunk[] = [];
  let current: ExtractionInput[] = [];
  let chars = 0;
  const flush = () => {
    if (current.length === 0) return;
    out.push({ events: current, refs: new Map(current.map((_, i) => [`e${i + 1}`, i])) });
    current = [];
    chars = 0;
  };
  for (const e of events) {
    const n = Math.min(e.content.length, EVENT_CHARS);
    if (current.length >= size || (current.length > 0 && chars + n > LLM_CHUNK_CHARS)) flush();
    current.push(e);
    chars += n;
  }
  flush();
  return out;
}

const KIND_HELP =
  'file (a path), symbol (a function, class or method name), service, command (a shell command line, first words), person (a handle or name), ' +
  'project, error (an error code or class), decision (what was decided, in its own words)';
const EDGE_HELP =
  'imports, calls, depends_on (A needs B), mentions (weak: named together), decided (a decision about an entity), supersedes (a decision replaces another), fixed_by (an error fixed by a file, commit or change)';

function prompt(chunk: Chunk, level: LlmLevel, caps: { entities: number; edges: number }): ChatMessage[] {
  const shown = chunk.events
    .map((e, i) => `[e${i + 1}] (${e.kind}${e.toolName ? ` ${e.toolName}` : ''})\n${e.content.length > EVENT_CHARS ? `${e.content.slice(0, EVENT_CHARS)} …` : e.content}`)
    .join('\n\n');
  const strict =
    level === 'aggressive'
      ? `Be strict: only the entities and relations that matter later (services, files, errors, decisions and the relations between them), at most ${caps.entities} entities and ${caps.edges} edges.`
      : `At most ${caps.entities} entities and ${caps.edges} edges.`;
  return [
    {
      role: 'system',
      content:
        'You extract a knowledge graph from an AI agent\'s work log. Reply with one JSON object only: ' +
        '{"entities":[{"kind":"...","name":"...","cites":[{"event":"e1","quote":"..."}]}],"edges":[{"type":"...","src":{"kind":"...","name":"..."},"dst":{"kind":"...","name":"..."},"cites":[{"event":"e1","quote":"..."}]}]}. ' +
        `Entity kinds: ${KIND_HELP}. Edge types: ${EDGE_HELP}. ` +
        'Rules: cite only the events shown, by their label (e1, e2, ...); each quote is copied exactly from the cited event (a few words, at most 25) and holds the name; ' +
        'use names exactly as the text writes them; an edge is a relation the cited event states between its two ends, each end named in that event; ' +
        `do not guess, do not invent, leave out what you are unsure of. ${strict}`,
    },
    { role: 'user', content: `Events:\n\n${shown}\n\nThe JSON object:` },
  ];
}

/** Whitespace collapsed, lower case: a quote is looked up in its event this way. */
function norm(text: string): string {
  return text.replace(/\s+/g, ' ').trim().toLowerCase();
}

/** An entity name as the deterministic extractor writes it, so that both give one key. */
function canonicalName(kind: EntityKind, name: string): string {
  let n = name.trim();
  if (kind === 'service') n = n.replace(/^service:/i, '').replace(/[- ]service$/i, '').toLowerCase();
  if (kind === 'person') n = n.replace(/^@/, '').toLowerCase();
  if (kind === 'project') n = n.replace(/^project:/i, '');
  if (kind === 'file') n = n.replace(/^\.\//, '');
  return n;
}

/** Whether an event's text names the entity (its name as written, or as canonicalized). */
function names(text: string, name: string, raw: string): boolean {
  const t = norm(text);
  return t.includes(norm(raw)) || t.includes(norm(name));
}

/** The model's answer reduced to what its cites prove, per event of the chunk. */
function verify(answer: Answer, chunk: Chunk, confidence: number, drops: DropCounts): PerEvent[] {
  const out: PerEvent[] = chunk.events.map(() => ({ entities: [], edges: [] }));
  const texts = chunk.events.map((e) => norm(e.content));
  const valid = (cite: { event: string; quote: string }, ends: Array<{ name: string; raw: string }>): number | null => {
    const i = chunk.refs.get(cite.event.trim().replace(/^\[|\]$/g, ''));
    if (i === undefined) {
      drops.unknownEvent++;
      return null;
    }
    if (!texts[i]!.includes(norm(cite.quote))) {
      drops.misquoted++;
      return null;
    }
    if (!ends.every((x) => names(chunk.events[i]!.content, x.name, x.raw))) {
      drops.nameNotInEvent++;
      return null;
    }
    return i;
  };
  const quoteOf = (q: string) => q.replace(/\s+/g, ' ').trim().slice(0, QUOTE_CHARS);
  for (const e of answer.entities) {
    const name = canonicalName(e.kind, e.name);
    if (name === '') continue;
    let cited = 0;
    for (const c of e.cites) {
      const i = valid(c, [{ name, raw: e.name }]);
      if (i === null) continue;
      cited++;
      const x: ExtractedEntity = { kind: e.kind, name, at: Math.max(0, chunk.events[i]!.content.indexOf(c.quote)), quote: quoteOf(c.quote), confidence };
      out[i]!.entities.push(x);
    }
    if (cited === 0) drops.uncitedItems++;
  }
  for (const e of answer.edges) {
    const src = { kind: e.src.kind, name: canonicalName(e.src.kind, e.src.name), raw: e.src.name };
    const dst = { kind: e.dst.kind, name: canonicalName(e.dst.kind, e.dst.name), raw: e.dst.name };
    if (src.name === '' || dst.name === '' || (src.kind === dst.kind && src.name === dst.name)) continue;
    let cited = 0;
    for (const c of e.cites) {
      const i = valid(c, [src, dst]);
      if (i === null) continue;
      cited++;
      const quote = quoteOf(c.quote);
      // The ends are cited at the level's confidence too (listed first: the builder keeps an event's first citation of a row).
      for (const end of [src, dst]) out[i]!.entities.push({ kind: end.kind, name: end.name, at: 0, quote, confidence });
      const edge: ExtractedEdge = { type: e.type as EdgeType, src: { kind: src.kind, name: src.name }, dst: { kind: dst.kind, name: dst.name }, confidence, quote };
      out[i]!.edges.push(edge);
    }
    if (cited === 0) drops.uncitedItems++;
  }
  return out;
}

/** The base extraction plus the model's, one entity per key and one edge per (type, ends): the base's rows first. */
function merge(base: Extraction, added: Extraction): Extraction {
  const key = (k: EntityKind, n: string) => `${k}\0${n}`;
  const seen = new Set(base.entities.map((e) => key(e.kind, e.name)));
  const entities = [...base.entities];
  for (const e of added.entities) {
    if (seen.has(key(e.kind, e.name))) continue;
    seen.add(key(e.kind, e.name));
    entities.push(e);
  }
  const edgeKey = (e: ExtractedEdge) => `${e.type}\0${key(e.src.kind, e.src.name)}\0${key(e.dst.kind, e.dst.name)}`;
  const edges = new Map(base.edges.map((e) => [edgeKey(e), e]));
  for (const e of added.edges) {
    const prior = edges.get(edgeKey(e));
    if (!prior || prior.confidence < e.confidence) edges.set(edgeKey(e), e);
  }
  return { entities, edges: [...edges.values()] };
}
