import { EngramError } from '../../errors.js';
import { DEFAULT_BUDGET_LIMITS, SHARED_BRIEF_CEILING_LINES, type BudgetLimits } from '../budget-limits.js';
import { parsePointerRef } from '../pointer.js';
import type { EngramKind } from '../../model/engram.js';
import type { Pointer } from '../../model/pointer.js';

/**
 * SharedBriefMicro (LESS §5.3, PAS Bus §2.2 and §10.1): the parent's tiny distillation of its children's top
 * engrams, at most 30 lines, one claim per line with its pointers, broadcast in SHARED_BRIEF_MICRO.
 *
 * Order, fixed so the same engrams always give the same brief (and a byte-stable prefix, turn after turn):
 * 1. the parent's `lead` lines ("Goal: ...", "what matters now"), verbatim;
 * 2. contradictions: risk engrams that cite two or more different sources, or are tagged `contradiction`.
 *    The seed makes them first-class (LESS UC2: "risk engrams that can gate merges or require explicit
 *    override"), so they are surfaced before anything they might invalidate;
 * 3. constraints and policies (LESS §5.3 "constraints"); 4. other risks ("top risks"); 5. decisions;
 * 6. todos; 7. facts, diffs, tests, perf.
 * Within a group: newest first, then higher confidence, then id (the seed's stable tie-breakers, recency then
 * confidence, PAS Bus §9 and LESS §9.2). Engrams with the same claim (ignoring case, spacing and final
 * punctuation) become one line that names every role and keeps every distinct pointer.
 *
 * Lines are added greedily in that order while they fit both budgets; a line that would overflow the token
 * budget is skipped and a later, shorter one may still fit. Pure: no clock, no I/O.
 */

/** An engram offered to the brief, with who sent it. */
export interface BriefEngram {
  id: string;
  /** The sending child's role (`programmer`). */
  role: string;
  kind: EngramKind;
  claim: string;
  /** 0..1. */
  confidence: number;
  /** At least one. */
  pointers: Pointer[];
  tags?: string[];
  /** ISO-8601 timestamp (`provenance.created_at`). */
  createdAt: string;
}

export interface BuildSharedBriefOptions {
  /** The engine's tokenizer (`Tokenizer.count`). */
  countTokens: (text: string) => number;
  /** Budgets of the brief; defaults `DEFAULT_BUDGET_LIMITS` (30 lines, 400 tokens). */
  limits?: Pick<BudgetLimits, 'maxSharedBriefLines' | 'maxSharedBriefTokens'>;
  /** The parent's own first lines (goal, what matters now); one line each, counted against the budgets. */
  lead?: readonly string[];
  /** Pointers printed per line; further ones are counted (`+2 more`). Default 3. */
  maxPointersPerLine?: number;
  /** Lines one role may fill, so one chatty child cannot crowd out the others. Default: no cap. */
  maxLinesPerRole?: number;
}

export type BriefOmission = 'duplicate' | 'lines' | 'tokens' | 'role-cap';

export interface SharedBrief {
  /** The SHARED_BRIEF_MICRO lines: lead lines, then one line per included engram. */
  lines: string[];
  /** `countTokens(lines.join('\n'))`. */
  tokens: number;
  /** Engrams on a line, in line order; a merged duplicate is listed under the line's first engram only. */
  included: string[];
  /** Engrams left out and why, in rank order. */
  omitted: Array<{ id: string; reason: BriefOmission }>;
  /** Lines that are contradictions (LESS §12 "contradiction rate"). */
  contradictions: number;
}

/** Label of each group, printed at the start of its lines. */
const CONTRADICTION_LABEL = 'CONTRADICTION';
const KIND_RANK: Readonly<Record<EngramKind, number>> = {
  constraint: 1,
  policy: 1,
  risk: 2,
  decision: 3,
  todo: 4,
  fact: 5,
  diff: 5,
  test: 5,
  perf: 5,
};

interface Candidate {
  engram: BriefEngram;
  isContradiction: boolean;
  group: number;
  createdMs: number;
  roles: string[];
  pointers: Pointer[];
}

/** Builds the SharedBriefMicro from the children's engrams. Throws INVALID_INPUT naming a bad `engrams[i]` field or `lead`. */
export function buildSharedBrief(engrams: readonly BriefEngram[], options: BuildSharedBriefOptions): SharedBrief {
  const maxLines = Math.min(options.limits?.maxSharedBriefLines ?? DEFAULT_BUDGET_LIMITS.maxSharedBriefLines, SHARED_BRIEF_CEILING_LINES);
  const maxTokens = options.limits?.maxSharedBriefTokens ?? DEFAULT_BUDGET_LIMITS.maxSharedBriefTokens;
  const maxPointers = options.maxPointersPerLine ?? 3;
  const { countTokens } = options;
  const lead = [...(options.lead ?? [])];
  lead.forEach((line, i) => {
    if (line.length === 0 || /[\r\n]/.test(line)) throw new EngramError('INVALID_INPUT', `lead[${i}]: must be one non-empty line`, { field: `lead[${i}]` });
  });
  if (lead.length > maxLines || (lead.length > 0 && countTokens(lead.join('\n')) > maxTokens)) {
    throw new EngramError('INVALID_INPUT', `lead: ${lead.length} lines do not fit the brief's ${maxLines} lines and ${maxTokens} tokens`, { field: 'lead' });
  }

  const candidates = engrams.map((engram, i) => toCandidate(engram, i));
  candidates.sort(compareCandidates);

  const omitted: SharedBrief['omitted'] = [];
  const byClaim = new Map<string, Candidate>();
  const unique: Candidate[] = [];
  for (const c of candidates) {
    const key = normalizeClaim(c.engram.claim);
    const kept = byClaim.get(key);
    if (!kept) {
      byClaim.set(key, c);
      unique.push(c);
      continue;
    }
    // Same claim from several children: one line that says who agrees and keeps every distinct source.
    for (const role of c.roles) if (!kept.roles.includes(role)) kept.roles.push(role);
    for (const p of c.pointers) if (!kept.pointers.some((q) => q.ref === p.ref && q.span === p.span)) kept.pointers.push(p);
    omitted.push({ id: c.engram.id, reason: 'duplicate' });
  }

  const lines = [...lead];
  const included: string[] = [];
  const perRole = new Map<string, number>();
  let contradictions = 0;
  for (const c of unique) {
    const role = c.engram.role;
    if (lines.length >= maxLines) {
      omitted.push({ id: c.engram.id, reason: 'lines' });
      continue;
    }
    if (options.maxLinesPerRole !== undefined && (perRole.get(role) ?? 0) >= options.maxLinesPerRole) {
      omitted.push({ id: c.engram.id, reason: 'role-cap' });
      continue;
    }
    const line = formatLine(c, maxPointers);
    if (countTokens([...lines, line].join('\n')) > maxTokens) {
      omitted.push({ id: c.engram.id, reason: 'tokens' });
      continue;
    }
    lines.push(line);
    included.push(c.engram.id);
    perRole.set(role, (perRole.get(role) ?? 0) + 1);
    if (c.isContradiction) contradictions++;
  }
  // Duplicates were recorded before the lines they merged into; keep `omitted` in rank order of the engrams.
  const rank = new Map(candidates.map((c, i) => [c.engram.id, i]));
  omitted.sort((a, b) => (rank.get(a.id) ?? 0) - (rank.get(b.id) ?? 0));
  return { lines, tokens: lines.length === 0 ? 0 : countTokens(lines.join('\n')), included, omitted, contradictions };
}

/**
 * The distinct sources a pointer set cites: the file, artifact, episodic entry, test or page, regardless of
 * span or version. A `diff:` of a path and a `repo:` span of it are the same file. Refs that do not parse
 * count by their text before `#` and `@`.
 */
export function distinctSources(pointers: readonly Pointer[]): string[] {
  const sources: string[] = [];
  for (const p of pointers) {
    const key = sourceKey(p);
    if (!sources.includes(key)) sources.push(key);
  }
  return sources;
}

/** A risk citing two or more different sources, or tagged `contradiction` (LESS §12, UC2). */
export function isContradiction(engram: Pick<BriefEngram, 'kind' | 'pointers' | 'tags'>): boolean {
  if (engram.kind !== 'risk') return false;
  return (engram.tags ?? []).includes('contradiction') || distinctSources(engram.pointers).length >= 2;
}

function sourceKey(p: Pointer): string {
  try {
    const r = parsePointerRef(p.ref);
    switch (r.type) {
      case 'repo':
      case 'diff':
        return `file:${r.path}`;
      case 'artifact':
        return `artifact:${r.name}`;
      case 'sam':
        return `sam:${r.kind}:${r.id}`;
      case 'test':
        return `test:${r.id}`;
      case 'url': {
        const u = new URL(r.url);
        return `url:${u.origin}${u.pathname}`;
      }
    }
  } catch {
    return p.ref.split(/[#@]/)[0] ?? p.ref;
  }
}

function toCandidate(engram: BriefEngram, i: number): Candidate {
  const field = (name: string) => `engrams[${i}].${name}`;
  const fail = (name: string, message: string): never => {
    throw new EngramError('INVALID_INPUT', `${field(name)}: ${message}`, { field: field(name) });
  };
  if (typeof engram.id !== 'string' || engram.id.length === 0) fail('id', 'must be a non-empty string');
  if (typeof engram.role !== 'string' || engram.role.length === 0) fail('role', 'must be a non-empty string');
  if (typeof engram.claim !== 'string' || engram.claim.trim().length === 0) fail('claim', 'must be a non-empty string');
  if (!(engram.confidence >= 0 && engram.confidence <= 1)) fail('confidence', 'must be a number from 0 to 1');
  if (!Array.isArray(engram.pointers) || engram.pointers.length === 0) fail('pointers', 'an engram needs at least one pointer');
  if (!(engram.kind in KIND_RANK)) fail('kind', `unknown kind "${String(engram.kind)}"`);
  const createdMs = Date.parse(engram.createdAt);
  if (Number.isNaN(createdMs)) fail('createdAt', 'must be an ISO-8601 timestamp');
  const contradiction = isContradiction(engram);
  const sources = new Set<string>();
  // Put the first pointer of each source ahead of repeats, so a contradiction line shows both sides.
  const firsts: Pointer[] = [];
  const repeats: Pointer[] = [];
  for (const p of engram.pointers) {
    const key = sourceKey(p);
    (sources.has(key) ? repeats : firsts).push(p);
    sources.add(key);
  }
  return {
    engram,
    isContradiction: contradiction,
    group: contradiction ? 0 : KIND_RANK[engram.kind],
    createdMs,
    roles: [engram.role],
    pointers: [...firsts, ...repeats],
  };
}

function compareCandidates(a: Candidate, b: Candidate): number {
  return (
    a.group - b.group ||
    b.createdMs - a.createdMs ||
    b.engram.confidence - a.engram.confidence ||
    (a.engram.id < b.engram.id ? -1 : a.engram.id > b.engram.id ? 1 : 0)
  );
}

function normalizeClaim(claim: string): string {
  return claim.toLowerCase().replace(/\s+/g, ' ').trim().replace(/[.!;,\s]+$/, '');
}

/** `RISK (programmer, reviewer 0.72): <claim> -> <ref>; <ref> +1 more`. */
function formatLine(c: Candidate, maxPointers: number): string {
  const label = c.isContradiction ? CONTRADICTION_LABEL : c.engram.kind.toUpperCase();
  const claim = c.engram.claim.replace(/\s+/g, ' ').trim();
  const shown = c.pointers.slice(0, Math.max(1, maxPointers)).map((p) => (p.span === undefined ? p.ref : `${p.ref} ${p.span}`));
  const more = c.pointers.length - shown.length;
  const refs = `${shown.join('; ')}${more > 0 ? ` +${more} more` : ''}`;
  // A brief line is one line: refs that did not pass the pointer grammar could still hold a line break.
  return `${label} (${c.roles.join(', ')} ${c.engram.confidence.toFixed(2)}): ${claim} -> ${refs}`.replace(/[\r\n]+/g, ' ');
}
