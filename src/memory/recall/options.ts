/**
 * Recall's options: their defaults (each one measured: bench/results/locomo.md, docs/recall.md), their validation,
 * and the store filter they make.
 */
import { EngramError, invalidInputFromZod } from '../../errors.js';
import { STORED_EVENT_KINDS } from '../../model/event.js';
import type { SessionId } from '../../model/ids.js';
import { checkQuery } from '../../model/limits.js';
import { taskStateSchema } from '../../model/task-state.js';
import type { EventFilter } from '../../store/backend.js';
import { MMR_DEFAULTS } from '../mmr.js';
import { MODIFIER_FACTORS } from '../task-modifier.js';
import { DEFAULT_TYPE_QUOTAS, validateTypeQuotas, type TypeQuotas } from '../type-quotas.js';
import { RETRIEVERS, SECOND_HOP_TRIGGERS, type RecallOptions, type SecondHopTrigger } from './types.js';

/**
 * Default of {@link RecallOptions.secondHopWeight}: the second query counts half as much as the question's own, so
 * what the question itself found stays on top. Chosen by leave-one-conversation-out on the LoCoMo development
 * split among 0, 0.3, 0.5 and 1 (bench/results/locomo.md).
 */
export const SECOND_HOP_WEIGHT = 0.5;
/**
 * Default of {@link RecallOptions.secondHopTrigger}: questions that look multi-hop. On every query the hop gained as
 * much on the development split (bench/results/locomo.md), but it also brings events that share no word with the
 * query: for an agent's keyword query ("lighthouse museum") that is padding, and a second search on every call.
 */
export const SECOND_HOP_TRIGGER: SecondHopTrigger = 'multi-hop';
/**
 * Default of {@link RecallOptions.dateBoost}: a question naming a date prefers what was said then, as it prefers
 * the speaker it names. On the LoCoMo development split 0.25, 0.5 and 1 each gained on every conversation, 0.5 and
 * 1 equally (bench/results/locomo.md); the smaller keeps it a preference.
 */
export const DATE_BOOST = 0.5;
/**
 * When a query names the speaker of some candidates (`meta.speaker`, e.g. "what did Melanie paint?"), the
 * others' relevance is divided by 1 + this. Soft, because a question may name one person and be answered by
 * another (LoCoMo's adversarial questions swap the speaker on purpose): at 0.25 categories 1-4 gained and the
 * adversarial ones lost less than the others gained; at 0.5 the loss grew (bench/results/locomo.md).
 */
export const SPEAKER_BOOST = 0.25;

/**
 * Hybrid fusion: relevance = (1 - w) x full-text / best full-text + w x min-max normalised cosine, then over
 * the best candidate. w is chosen by leave-one-conversation-out cross-validation on the LoCoMo development
 * split (bench/results/locomo.md: every fold picked 0.2 from 0-0.5, and hybrid at 0.2 is not below full-text at
 * any k there over all five categories). It was 0.5 when full-text indexed turns alone; with context-aware
 * units full-text is much stronger and the built-in word vectors' share smaller. A query naming identifiers
 * (a hash, an error code, a path) asks for those exact strings, so vectors get less say there: prose that is
 * merely about the same thing must not outrank the event that holds the string.
 */
export const HYBRID_VECTOR_WEIGHT = 0.2;
/**
 * Least cosine similarity of a vector-only candidate. The built-in embedder scores unrelated texts near 0 and
 * paraphrases from about 0.2 (src/providers/glove/sentence-encoder.ts); other models run higher, so this only
 * keeps out what is plainly unrelated.
 */
export const MIN_VECTOR_SIMILARITY = 0.1;
export const HYBRID_VECTOR_WEIGHT_WITH_IDENTIFIERS = 0.1;


/** Every option's default (the options a call leaves out). */
export const DEFAULTS = {
  k: 10,
  budgetTokens: 2000,
  // Relevance is normalised to the best candidate (1); at 0.15 a candidate 15 % less relevant but new outranked
  // an old exact answer, which cost 2 points of LoCoMo recall@10 against 0.05 (bench/results/locomo.md).
  recencyWeight: 0.05,
  recencyHalfLifeMs: 7 * 24 * 3600 * 1000,
  maxExcerptChars: 600,
  useMmr: true,
  lambda: MMR_DEFAULTS.lambda as number,
  typeQuotas: DEFAULT_TYPE_QUOTAS as TypeQuotas,
  logRecall: true,
  speakerBoost: SPEAKER_BOOST,
  secondHopWeight: SECOND_HOP_WEIGHT,
  secondHopTrigger: SECOND_HOP_TRIGGER as SecondHopTrigger,
  dateBoost: DATE_BOOST,
};
/** A call's options with the defaults filled in. */
export type ResolvedOptions = typeof DEFAULTS & RecallOptions;
/** Below this a pack cannot hold its header plus one useful hit. */
export const MIN_RECALL_BUDGET_TOKENS = 64;

/** The store filter of a call's options. */
export function toFilter(o: RecallOptions): EventFilter {
  const f: EventFilter = {};
  if (o.sessionIds && o.sessionIds.length > 0) f.sessionIds = o.sessionIds as SessionId[];
  if (o.visibleToProject !== undefined) f.visibleToProject = o.visibleToProject;
  if (o.kinds && o.kinds.length > 0) f.kinds = o.kinds;
  if (o.fromMs !== undefined) f.fromMs = o.fromMs;
  if (o.toMs !== undefined) f.toMs = o.toMs;
  if (o.taskId !== undefined) f.taskId = o.taskId;
  return f;
}

/**
 * Options of techniques retired in issue #32 (none gained on the LoCoMo development split; docs/recall.md, "Retired
 * techniques", keeps their figures). TypeScript callers cannot pass them; a JavaScript caller, or a JSON body, still
 * could, and is told so rather than having them ignored.
 */
export const RETIRED_RECALL_OPTIONS: ReadonlySet<string> = new Set([
  'expansionWeight',
  'categoryWeight',
  'fusion',
  'noveltyOn',
  'secondHopTerms',
  'vectorFeedbackWeight',
  'rm3Weight',
  'vectorShare',
  'relativeDates',
]);

/** Refuses a call's bad options with INVALID_INPUT naming the field. */
export function validateOptions(query: string, o: ResolvedOptions): void {
  const bad = (field: string, message: string): never => {
    throw new EngramError('INVALID_INPUT', `${field}: ${message}`, { field });
  };
  for (const name of Object.keys(o)) {
    if (RETIRED_RECALL_OPTIONS.has(name)) bad(name, 'this recall option was retired (it did not gain on the LoCoMo development split; docs/recall.md, "Retired techniques"); leave it out');
  }
  if (typeof query !== 'string' || query.trim().length === 0) bad('query', 'must be a non-empty string');
  checkQuery(query, 'query');
  if (!Number.isInteger(o.k) || o.k < 1 || o.k > 1000) bad('k', 'must be an integer from 1 to 1000');
  if (!Number.isInteger(o.budgetTokens) || o.budgetTokens < MIN_RECALL_BUDGET_TOKENS) {
    bad('budgetTokens', `must be an integer of at least ${MIN_RECALL_BUDGET_TOKENS}`);
  }
  if (!(o.recencyWeight >= 0 && o.recencyWeight <= 1)) bad('recencyWeight', 'must be between 0 and 1');
  if (!(o.recencyHalfLifeMs > 0)) bad('recencyHalfLifeMs', 'must be positive');
  if (!(o.maxExcerptChars >= 40)) bad('maxExcerptChars', 'must be at least 40');
  for (const kind of o.kinds ?? []) {
    if (!(STORED_EVENT_KINDS as readonly string[]).includes(kind)) {
      bad('kinds', `unknown event kind "${kind}"; expected one of ${STORED_EVENT_KINDS.join(', ')}`);
    }
  }
  if (o.fromMs !== undefined && o.toMs !== undefined && o.fromMs > o.toMs) bad('fromMs', 'must not be after toMs');
  if (o.retriever !== undefined && !(RETRIEVERS as readonly string[]).includes(o.retriever)) {
    bad('retriever', `unknown retriever "${String(o.retriever)}"; expected one of ${RETRIEVERS.join(', ')}`);
  }
  if (o.taskState !== undefined) {
    const parsed = taskStateSchema.safeParse(o.taskState);
    if (!parsed.success) throw invalidInputFromZod(parsed.error.issues, 'taskState');
  }
  for (const f of o.disableFactors ?? []) {
    if (!(MODIFIER_FACTORS as readonly string[]).includes(f)) bad('disableFactors', `unknown factor "${f}"; expected one of ${MODIFIER_FACTORS.join(', ')}`);
  }
  for (const [name, value] of Object.entries(o.modifierOptions ?? {})) {
    if (name === 'phaseSalience') continue;
    if (typeof value !== 'number' || !(value >= 0) || !Number.isFinite(value)) bad(`modifierOptions.${name}`, 'must be a finite number of at least 0');
  }
  if (!(o.lambda >= 0 && o.lambda <= 1)) bad('lambda', 'must be between 0 and 1');
  if (o.vectorWeight !== undefined && !(o.vectorWeight >= 0 && o.vectorWeight <= 1)) bad('vectorWeight', 'must be between 0 and 1');
  if (o.contextWeight !== undefined && !(o.contextWeight >= 0 && o.contextWeight <= 1)) bad('contextWeight', 'must be between 0 and 1');
  if (!(o.speakerBoost >= 0 && Number.isFinite(o.speakerBoost))) bad('speakerBoost', 'must be a finite number of at least 0');
  if (!(o.dateBoost >= 0 && Number.isFinite(o.dateBoost))) bad('dateBoost', 'must be a finite number of at least 0');
  if (!(o.secondHopWeight >= 0 && o.secondHopWeight <= 1)) bad('secondHopWeight', 'must be between 0 and 1');
  if (!(SECOND_HOP_TRIGGERS as readonly string[]).includes(o.secondHopTrigger)) {
    bad('secondHopTrigger', `unknown trigger "${String(o.secondHopTrigger)}"; expected one of ${SECOND_HOP_TRIGGERS.join(', ')}`);
  }
  validateTypeQuotas(o.typeQuotas);
}

/** The object without its undefined fields. */
export function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
