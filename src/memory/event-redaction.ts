import type { ValidEventInput } from '../model/event.js';
import { isUtf8Text } from '../util/is-utf8-text.js';
import type { SecretKind } from './redaction.js';
import { isSecretKeyValue, REDACT_STEP_CHARS, redactionPlaceholder, redactQuery, redactText, redactTextInSteps, secretKindOfKey } from './redaction.js';

/**
 * How an engine redacts credentials before they are stored (see redaction.ts for what is found). On by default
 * for the library, `engram serve`, `engram mcp` and every CLI verb; `false` (or `--no-redact`, or
 * `ENGRAM_REDACT=off`) stores content verbatim.
 */
export interface RedactionOptions {
  /** Default true. */
  enabled?: boolean;
  /**
   * HMAC key of the placeholders' hashes. Default: a random per-store secret kept in the store (the same
   * mechanism as grant signatures), so every server sharing a store writes the same placeholder for the same
   * secret, and a placeholder cannot be tested against guesses without that secret. Give a key kept outside
   * the store when whoever may copy the store must not be able to test guesses either.
   */
  key?: string;
}

/** Store secret name of the placeholder hash key (see BusStorage.getOrCreateSecret). */
export const REDACTION_SECRET_NAME = 'redaction-hmac';

/** What redaction replaced in one append or text: counts only, never the secrets. */
export interface RedactionReport {
  count: number;
  byKind: Partial<Record<SecretKind, number>>;
}

/** Media types whose binary payloads are text and are redacted like content. */
const TEXT_MEDIA = /^text\/|json|xml|yaml|csv|javascript|x-sh|toml|x-env/i;

/**
 * Redaction as the write path applies it: to event content, tags, string values of `meta` (a string under a
 * secret key, such as `{ "password": "..." }`, is replaced whole), binary captions and text payloads, and to
 * recall queries before they are logged. Tool outputs large enough to become artifacts are redacted before
 * they are hashed, so an artifact's id is the sha256 of the redacted bytes, which are the bytes stored.
 */
export class RedactionPolicy {
  private key: string | undefined;

  constructor(
    private readonly loadKey: () => Promise<string>,
    private readonly options: RedactionOptions = {},
  ) {}

  get isEnabled(): boolean {
    return this.options.enabled !== false;
  }

  /** The events with their secrets replaced, and what was replaced in each. Unchanged when disabled. */
  async redactEvents(inputs: readonly ValidEventInput[]): Promise<Array<{ input: ValidEventInput; report: RedactionReport }>> {
    if (!this.isEnabled) return inputs.map((input) => ({ input, report: { count: 0, byKind: {} } }));
    const key = await this.hashKey();
    const out: Array<{ input: ValidEventInput; report: RedactionReport }> = [];
    for (const input of inputs) {
      if (input.content.length <= REDACT_STEP_CHARS) {
        out.push(redactEventInput(input, key));
        continue;
      }
      // A large content (a tool output of megabytes) is scanned in steps that let other requests run: whole,
      // an 8 MiB output held the server ~110 ms (bench/results/adversarial.md). The rest of the event as usual.
      const content = await redactTextInSteps(input.content, key);
      const rest = redactEventInput({ ...input, content: '' }, key);
      const report = { count: rest.report.count, byKind: { ...rest.report.byKind } };
      merge(report, content.byKind);
      out.push({ input: report.count > 0 ? { ...rest.input, content: content.text } : input, report });
    }
    return out;
  }

  /** `text` with its secrets replaced. Unchanged when disabled. */
  async redactText(text: string): Promise<string> {
    if (!this.isEnabled) return text;
    return redactText(text, await this.hashKey()).text;
  }

  /** A recall query as the log keeps it: secrets and bare high-entropy words replaced (redaction.ts). Unchanged when disabled. */
  async redactQuery(text: string): Promise<string> {
    if (!this.isEnabled) return text;
    return redactQuery(text, await this.hashKey()).text;
  }

  /** A JSON-like value with every string redacted (for logged recall options). Unchanged when disabled. */
  async redactValue<T>(value: T): Promise<T> {
    if (!this.isEnabled) return value;
    const counter = newReport();
    return redactJson(value, await this.hashKey(), counter) as T;
  }

  private async hashKey(): Promise<string> {
    // Cached once read; a failed read (a read-only store) is not cached, and fails the caller.
    this.key ??= this.options.key ?? (await this.loadKey());
    return this.key;
  }
}

/** One event input with its secrets replaced (pure; see {@link RedactionPolicy}). */
export function redactEventInput(input: ValidEventInput, key: string): { input: ValidEventInput; report: RedactionReport } {
  const report = newReport();
  const text = (s: string): string => {
    const r = redactText(s, key);
    if (r.count > 0) merge(report, r.byKind);
    return r.text;
  };
  const out: ValidEventInput = { ...input, content: text(input.content) };
  if (input.tags) out.tags = input.tags.map(text);
  if (input.meta !== undefined) out.meta = redactJson(input.meta, key, report) as Record<string, unknown>;
  if (input.binary) {
    const binary = { ...input.binary };
    if (binary.caption !== undefined) binary.caption = text(binary.caption);
    if (TEXT_MEDIA.test(binary.mediaType)) {
      const bytes = Buffer.from(binary.base64.replace(/\s+/g, ''), 'base64');
      if (isUtf8Text(bytes)) {
        const original = bytes.toString('utf8');
        const redacted = text(original);
        if (redacted !== original) binary.base64 = Buffer.from(redacted, 'utf8').toString('base64');
      }
    }
    out.binary = binary;
  }
  return { input: report.count > 0 ? out : input, report };
}

function redactJson(value: unknown, key: string, report: RedactionReport, parentKey?: string): unknown {
  if (typeof value === 'string') {
    const kind = parentKey === undefined ? null : secretKindOfKey(parentKey);
    if (kind && isSecretKeyValue(value)) {
      merge(report, { [kind]: 1 });
      return redactionPlaceholder(kind, value, key);
    }
    const r = redactText(value, key);
    if (r.count > 0) merge(report, r.byKind);
    return r.text;
  }
  if (Array.isArray(value)) return value.map((v) => redactJson(v, key, report));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, redactJson(v, key, report, k)]));
  }
  return value;
}

function newReport(): RedactionReport {
  return { count: 0, byKind: {} };
}

function merge(into: RedactionReport, byKind: Partial<Record<SecretKind, number>>): void {
  for (const [kind, n] of Object.entries(byKind) as Array<[SecretKind, number]>) {
    into.byKind[kind] = (into.byKind[kind] ?? 0) + n;
    into.count += n;
  }
}
