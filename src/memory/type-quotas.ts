import { EngramError } from '../errors.js';
import { STORED_EVENT_KINDS } from '../model/event.js';
import type { EventKind } from '../model/event.js';

/**
 * Per-kind shares of a recall pack (the `per_type_quotas` of Annex A.2b): the most of the token budget that
 * events of one kind may take, as a fraction 0..1. Kinds not listed are not limited.
 */
export type TypeQuotas = Partial<Record<EventKind, number>>;

/**
 * Default: tool results take at most half the budget. They are the largest excerpts and the most repetitive
 * (logs, listings); without a cap a query that hits one log line fills the pack with the same log, and the
 * decision that explains it falls out (§5.1, "debug noise"). Set `{}` to switch quotas off.
 */
export const DEFAULT_TYPE_QUOTAS: Readonly<TypeQuotas> = Object.freeze({ tool_result: 0.5 });

export interface PackOptions<T> {
  /** The pack's whole budget; quotas are fractions of it. */
  budgetTokens: number;
  /** Tokens already taken (the pack header). */
  usedTokens: number;
  /** Most items packed. */
  maxItems: number;
  quotas: Readonly<TypeQuotas>;
  kindOf(item: T): string;
  /** Tokens of `item` rendered at 1-based `position`, without the separator. */
  measure(item: T, position: number): number;
}

export interface PackedItem<T> {
  item: T;
  tokens: number;
}

export interface PackResult<T> {
  packed: Array<PackedItem<T>>;
  /** `usedTokens` plus every packed item's tokens and one separator token each. */
  usedTokens: number;
}

/**
 * Greedy packing in the given order: an item that does not fit is skipped so a smaller one may still fit.
 * Quotas bind only while other kinds compete: a second pass gives room left at the end to items the first
 * pass skipped for their quota, so a pack is never left half empty because only tool results matched.
 */
export function packUnderBudget<T>(items: readonly T[], o: PackOptions<T>): PackResult<T> {
  let used = o.usedTokens;
  const byKind = new Map<string, number>();
  const packed: Array<PackedItem<T>> = [];
  const overQuota: T[] = [];
  // Each item is measured once, as if it were the last one the pack can hold: its provenance label is then
  // the widest it can be, so the count bounds the rendered hit from above wherever it lands. (Measuring per
  // position tokenized over-quota items twice and cost ~10 % of recall at 100K events.)
  const measured = new Map<T, number>();
  const measure = (item: T): number => {
    let tokens = measured.get(item);
    if (tokens === undefined) {
      tokens = o.measure(item, Math.max(1, o.maxItems));
      measured.set(item, tokens);
    }
    return tokens;
  };
  const tryAdd = (item: T, withQuota: boolean): void => {
    const tokens = measure(item);
    // +1: the newline joining it to the pack.
    if (used + tokens + 1 > o.budgetTokens) return;
    const kind = o.kindOf(item);
    const share = o.quotas[kind as EventKind];
    const kindUsed = byKind.get(kind) ?? 0;
    if (withQuota && share !== undefined && kindUsed + tokens + 1 > share * o.budgetTokens) {
      overQuota.push(item);
      return;
    }
    used += tokens + 1;
    byKind.set(kind, kindUsed + tokens + 1);
    packed.push({ item, tokens });
  };
  for (const item of items) {
    if (packed.length >= o.maxItems) break;
    tryAdd(item, true);
  }
  for (const item of overQuota) {
    if (packed.length >= o.maxItems) break;
    tryAdd(item, false);
  }
  return { packed, usedTokens: used };
}

/** Throws INVALID_INPUT naming the field unless every key is an event kind and every share is in 0..1. */
export function validateTypeQuotas(quotas: unknown, field = 'typeQuotas'): asserts quotas is TypeQuotas {
  if (typeof quotas !== 'object' || quotas === null || Array.isArray(quotas)) {
    throw new EngramError('INVALID_INPUT', `${field}: must be an object of event kind to fraction`, { field });
  }
  for (const [kind, share] of Object.entries(quotas)) {
    if (!(STORED_EVENT_KINDS as readonly string[]).includes(kind)) {
      throw new EngramError('INVALID_INPUT', `${field}.${kind}: unknown event kind; expected one of ${STORED_EVENT_KINDS.join(', ')}`, { field: `${field}.${kind}` });
    }
    if (typeof share !== 'number' || !(share >= 0 && share <= 1)) {
      throw new EngramError('INVALID_INPUT', `${field}.${kind}: must be a fraction from 0 to 1`, { field: `${field}.${kind}` });
    }
  }
}
