/**
 * Counts tokens for budgets. Core code depends on this interface only; the default implementation uses
 * `gpt-tokenizer` (o200k_base, the GPT-4o family encoding), which runs offline. Counts for other model
 * families differ by a few percent, so budgets leave headroom rather than trusting the last token.
 */
export interface Tokenizer {
  readonly name: string;
  count(text: string): number;
  /** The longest prefix of `text` that fits in `maxTokens` tokens. */
  truncate(text: string, maxTokens: number): string;
}
