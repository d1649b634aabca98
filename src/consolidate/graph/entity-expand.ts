import { EngramError } from '../../errors.js';
import type { CitationRecord, EdgeRecord, EdgeType, EntityRecord } from '../../model/graph.js';
import type { EventId } from '../../model/ids.js';
import type { StorageBackend } from '../../store/backend.js';
import type { GraphStorage } from '../../store/graph-storage.js';
import type { Tokenizer } from '../../providers/tokenizer.js';
import { maskPrivate } from '../../memory/private-spans.js';

export const DEFAULT_ENTITY_EXPAND_TOKENS = 1500;
/** Neighbours and citations read per expansion before the budget cuts them. */
const EDGES_READ = 400;
const CITATIONS_READ = 200;
const CITES_PER_LINE = 3;

export interface EntityExpandOptions {
  /**
   * One group (`evidence`, an edge type such as `depends_on`, or a group's label such as `imported by`), or a
   * topic word: only lines (and evidence whose event) mention it. `evidence` drills down: each line holds its raw
   * event's text (cut to a third of the budget) instead of the cited words.
   */
  aspect?: string;
  /** Lines sharing the question's words come first in each group. */
  question?: string;
  maxTokens?: number;
}

export interface EntityExpandLine {
  text: string;
  /** Event ids and `repo:` pointers the line cites. */
  cites: string[];
}

export interface EntityExpandGroup {
  aspect: string;
  lines: EntityExpandLine[];
  /** Lines of the group left out by the budget. */
  omitted: number;
}

export interface EntityExpandAnswer {
  entity: EntityRecord;
  /** Header then each group's lines under its aspect, within `maxTokens` by the engine's tokenizer. */
  text: string;
  groups: EntityExpandGroup[];
  tokens: number;
  maxTokens: number;
  isTruncated: boolean;
}

/** The group label of an edge seen from one of its ends. */
const LABELS: Record<EdgeType, [outward: string, inward: string]> = {
  imports: ['imports', 'imported by'],
  calls: ['calls', 'called by'],
  depends_on: ['depends on', 'depended on by'],
  mentions: ['mentions', 'mentioned with'],
  decided: ['decides about', 'decided by'],
  supersedes: ['supersedes', 'superseded by'],
  fixed_by: ['fixed by', 'fixes'],
};

/** A line while the block is assembled: the evidence's whole event text rides along for aspect and question matching. */
type DraftLine = EntityExpandLine & { full?: string };

interface Context {
  graph: GraphStorage;
  store: StorageBackend;
  tokenizer: Tokenizer;
  scope: { visibleToProject?: string };
}

/**
 * Everything the graph knows about one entity, as a bounded block: its neighbours grouped by aspect (one group
 * per edge type and direction, each line naming the neighbour, the confidence and the events or repo spans the
 * edge cites) and the evidence (the entity's own citations, with the cited words). Groups share the budget in
 * turns, so every aspect shows its best lines before any shows its tenth; what the budget leaves out is counted.
 */
export async function expandEntity(ctx: Context, entity: EntityRecord, options: EntityExpandOptions): Promise<EntityExpandAnswer> {
  const maxTokens = options.maxTokens ?? DEFAULT_ENTITY_EXPAND_TOKENS;
  if (!Number.isInteger(maxTokens) || maxTokens < 50) throw new EngramError('INVALID_INPUT', 'maxTokens: must be a whole number of at least 50', { field: 'maxTokens' });
  const edges = await ctx.graph.edges({ ...ctx.scope, entityIds: [entity.id], direction: 'both', limit: EDGES_READ });
  const otherIds = [...new Set(edges.map((e) => (e.src === entity.id ? e.dst : e.src)))];
  const others = new Map((await ctx.graph.entities({ ...ctx.scope, ids: otherIds, limit: Math.max(1, otherIds.length) })).map((e) => [e.id, e]));
  const cites = await ctx.graph.citations({ ...ctx.scope, targetIds: [entity.id, ...edges.map((e) => e.id)], limit: CITATIONS_READ + edges.length * CITES_PER_LINE });
  const citesOf = new Map<string, CitationRecord[]>();
  for (const c of cites) citesOf.set(c.targetId, [...(citesOf.get(c.targetId) ?? []), c]);

  const groups = new Map<string, DraftLine[]>();
  const push = (aspect: string, line: DraftLine) => groups.set(aspect, [...(groups.get(aspect) ?? []), line]);
  for (const edge of edges) {
    const other = others.get(edge.src === entity.id ? edge.dst : edge.src);
    if (!other) continue;
    const aspect = LABELS[edge.type][edge.src === entity.id ? 0 : 1];
    const edgeCites = (citesOf.get(edge.id) ?? []).slice(0, CITES_PER_LINE).map(citeRef);
    push(aspect, { text: `${other.kind}:${other.name} (${edge.confidence.toFixed(2)})`, cites: edgeCites });
  }
  // Evidence: the entity's own citations, newest first, with the cited words (the raw event is one expand away).
  const own = (citesOf.get(entity.id) ?? []).slice(0, CITATIONS_READ);
  const events = new Map((await ctx.store.getEvents(own.flatMap((c) => (c.eventId ? [c.eventId as EventId] : [])))).map((e) => [e.id as string, e]));
  for (const c of own) {
    const ev = c.eventId ? events.get(c.eventId) : undefined;
    const where = ev ? `${ev.kind}, session ${ev.sessionId} turn ${ev.turn}` : c.commit ? `commit ${c.commit.slice(0, 12)}` : '';
    push('evidence', { text: `${where}: ${c.quote}`, cites: [citeRef(c)], ...(ev ? { full: maskPrivate(ev.content) } : {}) });
  }

  let selected = [...groups.entries()];
  const aspect = options.aspect?.trim().toLowerCase();
  if (aspect) {
    const named = selected.filter(([name]) => name === aspect || name.replace(/ /g, '_') === aspect || (aspect in LABELS && LABELS[aspect as EdgeType].includes(name)));
    selected = named.length > 0 ? named : selected.map(([name, lines]) => [name, lines.filter((l) => mentions(l, aspect))] as [string, DraftLine[]]).filter(([, l]) => l.length > 0);
    // Evidence asked for: drill down from the cited words to the raw events, each cut to a third of the budget.
    if (aspect === 'evidence') {
      const cut = Math.max(20, Math.floor(maxTokens / 3));
      selected = selected.map(([name, lines]) => [
        name,
        lines.map((l) => (l.full === undefined ? l : { ...l, text: `${l.text.slice(0, l.text.indexOf(': ') + 1)} ${ctx.tokenizer.truncate(l.full.replace(/\s+/g, ' ').trim(), cut)}` })),
      ]);
    }
  }
  const words = questionWords(options.question);
  if (words.length > 0) {
    selected = selected.map(([name, lines]) => [name, lines.map((l, i) => ({ l, i, s: score(l, words) })).sort((a, b) => b.s - a.s || a.i - b.i).map((x) => x.l)]);
  }

  const header = `${entity.id}  ${entity.kind}:${entity.name}  (${entity.citations} citations)`;
  let tokens = ctx.tokenizer.count(header);
  const kept = new Map<string, EntityExpandLine[]>(selected.map(([name]) => [name, []]));
  const rendered = (l: EntityExpandLine) => `- ${l.text}${l.cites.length ? ` [${l.cites.join(', ')}]` : ''}`;
  let isTruncated = false;
  const order: [string, EntityExpandLine][] = [];
  // Round-robin: each group's next line in turn, while the budget holds (a group header costs its first line).
  for (let i = 0, added = true; added; i++) {
    added = false;
    for (const [name, lines] of selected) {
      const l = lines[i];
      if (!l) continue;
      const cost = ctx.tokenizer.count(rendered(l)) + (i === 0 ? ctx.tokenizer.count(`\n## ${name}\n`) : 0) + 1;
      if (tokens + cost > maxTokens) {
        isTruncated = true;
        continue;
      }
      tokens += cost;
      kept.get(name)!.push(l);
      order.push([name, l]);
      added = true;
    }
  }
  const render = () => {
    const outGroups: EntityExpandGroup[] = selected.map(([name, lines]) => ({
      aspect: name,
      lines: kept.get(name)!.map(({ text, cites: c }) => ({ text, cites: c })),
      omitted: lines.length - kept.get(name)!.length,
    }));
    const body = outGroups
      .filter((g) => g.lines.length > 0)
      .map((g) => [`## ${g.aspect}`, ...g.lines.map(rendered), ...(g.omitted > 0 ? [`(${g.omitted} more)`] : [])].join('\n'));
    const unshown = outGroups.filter((g) => g.lines.length === 0 && g.omitted > 0).map((g) => `${g.aspect} ${g.omitted}`);
    if (unshown.length > 0) body.push(`(not shown: ${unshown.join(', ')}; ask with a larger maxTokens or an aspect)`);
    const text = [header, ...(body.length ? body : ['(nothing known about it beyond its name)'])].join('\n\n');
    return { groups: outGroups, text, tokens: ctx.tokenizer.count(text) };
  };
  // The per-line estimate leaves out headers and notices: drop the last lines taken until the whole block fits.
  let out = render();
  while (out.tokens > maxTokens && order.length > 0) {
    const [name, l] = order.pop()!;
    kept.set(name, kept.get(name)!.filter((x) => x !== l));
    isTruncated = true;
    out = render();
  }
  if (out.tokens > maxTokens) {
    // Not even the header and the notice fit: the header, cut (the groups then list nothing shown).
    const text = ctx.tokenizer.truncate(header, maxTokens);
    out = { groups: out.groups, text, tokens: ctx.tokenizer.count(text) };
  }
  return { entity, text: out.text, groups: out.groups, tokens: out.tokens, maxTokens, isTruncated };
}

function citeRef(c: CitationRecord): string {
  return c.eventId ?? `${c.pointer} sha256:${(c.digest ?? '').slice(0, 12)}`;
}

function mentions(l: DraftLine, word: string): boolean {
  return l.text.toLowerCase().includes(word) || (l.full?.toLowerCase().includes(word) ?? false);
}

function questionWords(q: string | undefined): string[] {
  if (!q) return [];
  const stop = new Set(['the', 'and', 'which', 'what', 'did', 'does', 'how', 'why', 'who', 'when', 'where', 'with', 'that', 'this', 'for', 'from', 'about', 'touch']);
  return [...new Set(q.toLowerCase().split(/[^a-z0-9_.-]+/).filter((w) => w.length >= 3 && !stop.has(w)))].map((w) => w.replace(/s$/, ''));
}

function score(l: DraftLine, words: string[]): number {
  const text = `${l.text} ${l.full ?? ''}`.toLowerCase();
  return words.reduce((n, w) => n + (text.includes(w) ? 1 : 0), 0);
}
