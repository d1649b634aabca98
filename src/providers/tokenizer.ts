/**
 * Counts tokens for budgets. Core code depends on this interface only; the default implementation uses
 * `gpt-tokenizer` (o200k_base, the GPT-4o family encoding), which runs offline. Counts for other model
 * families differ by a few percent, so budgets leave headroom rather than trusting the last token.
 */
export interface Tokenizer {
  readonly name: string;
  count(text: string): number;
  /**
   * The same count, done in steps that yield to the event loop every few milliseconds, and remembered so that a
   * later `count` of the same text returns at once. For servers: call it on large texts before code that counts
   * them synchronously. Optional; without it, callers use `count`.
   */
  countAsync?(text: string): Promise<number>;
  /** The longest prefix of `text` that fits in `maxTokens` tokens. */
  truncate(text: string, maxTokens: number): string;
}
