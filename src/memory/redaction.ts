/**
 * Redaction of well-known credential formats (issue 12, item 4): what an agent pastes or a tool prints (an AWS
 * key, a GitHub token, a private-key block, a `password=` line, a connection string) is replaced before it is
 * stored by a typed placeholder with a short keyed hash, `[REDACTED:github-token:3f9a1c2b]`, so the same secret
 * stays recognisable (and searchable by its hash) without being kept.
 *
 * Linear time by construction, because content is attacker-controlled and redaction runs on the server's only
 * thread: every pattern can start only at the beginning of a run of token characters (a lookbehind), uses
 * bounded quantifiers over classes that do not contain the literal that follows, and the two scans that
 * are not regular expressions (private-key blocks, `key = value` assignments) look at each character a
 * bounded number of times. The unit tests run every detector over 1 MB adversarial lines.
 *
 * Pure: no I/O. The hash key comes from the caller (see event-redaction.ts: a per-store secret).
 */
import { createHmac } from 'node:crypto';

/** The kinds of secret a placeholder names. */
export const SECRET_KINDS = [
  'private-key',
  'aws-access-key',
  'aws-secret-key',
  'github-token',
  'gitlab-token',
  'npm-token',
  'slack-token',
  'slack-webhook',
  'stripe-key',
  'google-api-key',
  'openai-key',
  'anthropic-key',
  'huggingface-token',
  'azure-key',
  'sendgrid-key',
  'vendor-token',
  'jwt',
  'bearer-token',
  'basic-auth',
  'url-password',
  'password',
  'secret',
  'api-key',
  'token',
  'high-entropy',
] as const;
export type SecretKind = (typeof SECRET_KINDS)[number];

/** One secret found in a text: `text.slice(start, end)` is replaced. */
export interface SecretMatch {
  kind: SecretKind;
  start: number;
  end: number;
}

export interface RedactionResult {
  text: string;
  /** Secrets replaced. */
  count: number;
  /** How many of each kind (never the secrets themselves). */
  byKind: Partial<Record<SecretKind, number>>;
}

/** Hex characters of the keyed hash in a placeholder: 32 bits, enough to tell a store's secrets apart. */
export const PLACEHOLDER_HASH_CHARS = 8;

/** A placeholder as written into stored text; matched so that redacting twice changes nothing. */
export const PLACEHOLDER_PATTERN = /\[REDACTED:[a-z-]{1,20}:[0-9a-f]{8}\]/;

/** The placeholder for `secret`: its kind and the first 8 hex characters of HMAC-SHA256(key, secret). */
export function redactionPlaceholder(kind: SecretKind, secret: string, key: string | Uint8Array): string {
  const hash = createHmac('sha256', key).update(secret, 'utf8').digest('hex').slice(0, PLACEHOLDER_HASH_CHARS);
  return `[REDACTED:${kind}:${hash}]`;
}

/** Replaces every secret {@link findSecrets} finds with its placeholder. */
export function redactText(text: string, key: string | Uint8Array): RedactionResult {
  const matches = findSecrets(text);
  if (matches.length === 0) return { text, count: 0, byKind: {} };
  const parts: string[] = [];
  const byKind: Partial<Record<SecretKind, number>> = {};
  let at = 0;
  for (const m of matches) {
    parts.push(text.slice(at, m.start), redactionPlaceholder(m.kind, text.slice(m.start, m.end), key));
    byKind[m.kind] = (byKind[m.kind] ?? 0) + 1;
    at = m.end;
  }
  parts.push(text.slice(at));
  return { text: parts.join(''), count: matches.length, byKind };
}

/**
 * A recall query as the recall log keeps it: {@link redactText}, then every remaining word that looks like a bare
 * machine-made secret ({@link isHighEntropyWord}) replaced as `high-entropy`. A query is often just a value pasted
 * without its key name; the log is for evaluation and replay, so a false alarm costs a logged word, not a recall.
 */
export function redactQuery(text: string, key: string | Uint8Array): RedactionResult {
  const r = redactText(text, key);
  let count = r.count;
  const byKind = { ...r.byKind };
  const out = r.text.replace(/[^\s"'`,;()[\]{}<>]+/g, (word) => {
    if (!isHighEntropyWord(word)) return word;
    count++;
    byKind['high-entropy'] = (byKind['high-entropy'] ?? 0) + 1;
    return redactionPlaceholder('high-entropy', word, key);
  });
  return { text: out, count, byKind };
}

/** Ids people search for by value, never treated as secrets: Engram's own (evt_, art_, sum_, ent_, agt_). */
const ENGRAM_ID = /^(?:evt|art|sum|ent|agt)_[0-9a-z]+$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Whether a word looks like a bare random credential rather than something people recall by value. Yes: 16 to 512
 * characters of the token alphabet, at least 2 digits and 6 letters, letters both cases (or 24+ characters), few
 * vowels among the letters (under 30 %: random text has about 16 %, words and identifiers 35 % or more), and at
 * least 3.3 bits of entropy per character. No: hex strings (git SHAs, digests), UUIDs, Engram ids, placeholders,
 * words, paths and identifiers (`parseHeaderV2`), version strings.
 */
export function isHighEntropyWord(word: string): boolean {
  if (word.length < 16 || word.length > 512 || !/^[A-Za-z0-9+/=_.~-]+$/.test(word)) return false;
  if (HEX_RUN.test(word) || UUID.test(word) || ENGRAM_ID.test(word)) return false;
  let digits = 0;
  let lower = 0;
  let upper = 0;
  let vowels = 0;
  for (const c of word) {
    if (c >= '0' && c <= '9') digits++;
    else if (c >= 'a' && c <= 'z') lower++;
    else if (c >= 'A' && c <= 'Z') upper++;
    if ('aeiouAEIOU'.includes(c)) vowels++;
  }
  const letters = lower + upper;
  if (digits < 2 || letters < 6) return false;
  if (!(lower > 0 && upper > 0) && word.length < 24) return false;
  if (vowels / letters >= 0.3) return false;
  return shannonBits(word) >= 3.3;
}

/** Shannon entropy of the characters of `s`, in bits per character. */
function shannonBits(s: string): number {
  const counts = new Map<string, number>();
  for (const c of s) counts.set(c, (counts.get(c) ?? 0) + 1);
  let bits = 0;
  for (const n of counts.values()) {
    const p = n / s.length;
    bits -= p * Math.log2(p);
  }
  return bits;
}

/** Characters scanned per step by {@link redactTextInSteps}: ~15 ms of scanning (8 MiB took ~110 ms whole). */
export const REDACT_STEP_CHARS = 1 << 20;

/**
 * {@link redactText} for long texts, in steps of about {@link REDACT_STEP_CHARS} that let other work run between
 * them (`yieldNow`, default `setImmediate`), so a large tool output does not hold a server's thread for the
 * whole scan. Steps end at a line break outside any PEM block: every other format is found within one line, and
 * a private-key block is always scanned whole (one with no END line runs to the end of the text). The result
 * is the one {@link redactText} gives.
 */
export async function redactTextInSteps(
  text: string,
  key: string | Uint8Array,
  yieldNow: () => Promise<void> = () => new Promise((resolve) => setImmediate(resolve)),
): Promise<RedactionResult> {
  if (text.length <= REDACT_STEP_CHARS) return redactText(text, key);
  const parts: string[] = [];
  const byKind: Partial<Record<SecretKind, number>> = {};
  let count = 0;
  for (let start = 0; start < text.length; ) {
    const end = stepEnd(text, start);
    const r = redactText(text.slice(start, end), key);
    parts.push(r.text);
    count += r.count;
    for (const [kind, n] of Object.entries(r.byKind) as Array<[SecretKind, number]>) byKind[kind] = (byKind[kind] ?? 0) + n;
    start = end;
    if (start < text.length) await yieldNow();
  }
  return { text: parts.join(''), count, byKind };
}

/**
 * A stretch of letters, digits and backslashes this long holds no secret boundary: every format's value is at
 * most 8,192 characters of one run, and keys, URLs and PEM headers need other characters.
 */
const SAFE_RUN_CHARS = 32_768;

/** Whether text[from, to) is all letters, digits and backslashes. */
function isSafeRun(text: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    const ok = (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5c;
    if (!ok) return false;
  }
  return true;
}

/**
 * Where a step starting at `start` ends: after a line break past the step size that is outside a PEM block, or,
 * in a text without line breaks there, inside a long run of letters, digits or backslashes (see SAFE_RUN_CHARS);
 * else at the end of the text.
 */
function stepEnd(text: string, start: number): number {
  let cut = text.indexOf('\n', start + REDACT_STEP_CHARS);
  if (cut < 0 || cut > start + 2 * REDACT_STEP_CHARS) {
    for (let c = start + REDACT_STEP_CHARS; c + 1 < text.length && (cut < 0 || c < cut); c += SAFE_RUN_CHARS) {
      if (isSafeRun(text, c - SAFE_RUN_CHARS, c) && text.lastIndexOf(PEM_BEGIN, c) <= text.lastIndexOf(PEM_END, c)) return c;
    }
    if (cut < 0) return text.length;
  }
  for (;;) {
    const begin = text.lastIndexOf(PEM_BEGIN, cut);
    if (begin < start || text.lastIndexOf(PEM_END, cut) > begin) return cut + 1;
    // Inside a block: end the step after the block's END line, or take the rest of the text.
    const endMark = text.indexOf(PEM_END, begin);
    if (endMark < 0) return text.length;
    cut = text.indexOf('\n', endMark);
    if (cut < 0) return text.length;
  }
}

/**
 * Every credential in `text`, in order, without overlaps. Where two detectors claim overlapping text, the one
 * starting first wins, then the more specific one (a `ghp_` token in `GITHUB_TOKEN=ghp_...` is a github-token).
 */
export function findSecrets(text: string): SecretMatch[] {
  if (text.length < 8) return [];
  const found = scan(text);
  // Secrets written in a way the patterns do not read directly: JSON escapes (`ghp\u005f...`), and the base64 of
  // a known token (a Basic credential, a Kubernetes secret, a docker config). Both only when the text has them.
  if (text.includes('\\u') || text.includes('\\/')) found.push(...fromJsonEscapes(text));
  found.push(...fromBase64Runs(text));
  if (found.length === 0) return [];
  found.sort((a, b) => a.start - b.start || b.priority - a.priority || b.end - a.end);
  const out: SecretMatch[] = [];
  let end = 0;
  for (const m of found) {
    if (m.start < end) continue;
    out.push({ kind: m.kind, start: m.start, end: m.end });
    end = m.end;
  }
  return out;
}

type RankedMatch = SecretMatch & { priority: number };

/** Every detector over the text as written, overlaps not yet resolved. */
function scan(text: string): RankedMatch[] {
  const found: RankedMatch[] = [];
  const add = (kind: SecretKind, start: number, end: number, priority: number) => {
    if (end > start && !isPlaceholderAt(text, start)) found.push({ kind, start, end, priority });
  };
  for (const m of privateKeyBlocks(text)) add('private-key', m.start, m.end, 3);
  // One scan for every prefix first: most text holds none, and 13 scans cost 5x one (measured on prose).
  const hasPrefix = FORMAT_PREFIXES.test(text);
  for (const d of hasPrefix ? FORMAT_DETECTORS : []) {
    d.pattern.lastIndex = 0;
    for (let m = d.pattern.exec(text); m !== null; m = d.pattern.exec(text)) {
      const value = d.group === undefined ? m[0] : m[d.group];
      if (value === undefined || (d.accept && !d.accept(value))) continue;
      // Groups are the tail of the match (see each pattern), so the value ends where the match does.
      const end = m.index + m[0].length;
      add(d.kind, end - value.length, end, 2);
    }
  }
  for (const m of urlPasswords(text)) add('url-password', m.start, m.end, 2);
  for (const m of assignments(text)) add(m.kind, m.start, m.end, 1);
  return found;
}

// ---- decoded views: JSON escapes and base64

const JSON_ESCAPE = /\\u([0-9a-fA-F]{4})|\\([\/"\\])/g;

/**
 * Secrets visible only once JSON's escapes are decoded (`"ghp\u005f..."`: `\u005f` is `_`): the text is decoded
 * with a map back to the original offsets, scanned, and each secret mapped back to the written span it came from.
 */
function fromJsonEscapes(text: string): RankedMatch[] {
  const parts: string[] = [];
  const origin: number[] = []; // origin[i]: offset in `text` of decoded character i
  let at = 0;
  JSON_ESCAPE.lastIndex = 0;
  for (let m = JSON_ESCAPE.exec(text); m !== null; m = JSON_ESCAPE.exec(text)) {
    for (let i = at; i < m.index; i++) origin.push(i);
    parts.push(text.slice(at, m.index), m[1] !== undefined ? String.fromCharCode(parseInt(m[1], 16)) : m[2]!);
    origin.push(m.index);
    at = m.index + m[0].length;
  }
  if (at === 0) return [];
  for (let i = at; i < text.length; i++) origin.push(i);
  parts.push(text.slice(at));
  origin.push(text.length);
  const decoded = parts.join('');
  return scan(decoded).map((m) => ({ ...m, start: origin[m.start]!, end: endOffset(text, origin, m.end) }));
}

/** Where in the original text decoded character `end - 1` ends (an escape spans several characters). */
function endOffset(text: string, origin: readonly number[], end: number): number {
  const last = origin[end - 1]!;
  if (text[last] !== '\\') return last + 1;
  return last + (text[last + 1] === 'u' ? 6 : 2);
}

/** Base64 runs shorter than this hold no token; longer than the max (images, archives) are not decoded. */
const BASE64_MIN_CHARS = 24;
const BASE64_MAX_CHARS = 4096;
/** Hex digits only: git SHAs and digests, never taken for secrets. */
const HEX_RUN = /^[0-9a-fA-F]+$/;

/**
 * A cheap test before decoding: the base64 of text mixes both cases and digits, and has few `/` (paths such as
 * `/usr/lib/node_modules/x` are base64-alphabet runs too, and the most common ones in agent traces). Hex runs (git
 * SHAs, digests) fail it: no upper and lower case at once.
 */
function looksLikeBase64OfText(run: string): boolean {
  let upper = false;
  let lower = false;
  let digit = false;
  let slashes = 0;
  for (let i = 0; i < run.length; i++) {
    const c = run.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) upper = true;
    else if (c >= 0x61 && c <= 0x7a) lower = true;
    else if (c >= 0x30 && c <= 0x39) digit = true;
    else if (c === 0x2f) slashes++;
  }
  return upper && lower && digit && slashes * 12 <= run.length;
}

/** Whether a UTF-16 code unit is in the base64 alphabet, standard or URL-safe (`=` padding aside). */
function isBase64Char(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x2b || c === 0x2f || c === 0x5f || c === 0x2d;
}

/**
 * The base64 of a known token (`echo -n ghp_... | base64`, a Basic credential, a Kubernetes secret's data): maximal
 * runs of 24 to 4,096 base64 characters that decode to printable text holding a token of a prefixed format are
 * redacted whole, as that token's kind. Hex runs (git SHAs, digests) are skipped: they decode to binary. The runs
 * are found by one loop over the characters (a regular expression with a lookbehind cost 4x as much on ingest).
 */
function fromBase64Runs(text: string): RankedMatch[] {
  const out: RankedMatch[] = [];
  const n = text.length;
  for (let i = 0; i < n; ) {
    while (i < n && !isBase64Char(text.charCodeAt(i))) i++;
    const start = i;
    while (i < n && isBase64Char(text.charCodeAt(i))) i++;
    let end = i;
    if (end - start < BASE64_MIN_CHARS || end - start > BASE64_MAX_CHARS) continue;
    if (text.charCodeAt(end) === 0x3d) end += text.charCodeAt(end + 1) === 0x3d ? 2 : 1;
    const run = text.slice(start, end);
    if (!looksLikeBase64OfText(run)) continue;
    const bytes = Buffer.from(run.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (bytes.length < 16 || !isPrintable(bytes)) continue;
    const decoded = bytes.toString('utf8');
    if (!FORMAT_PREFIXES.test(decoded)) continue;
    const inner = scan(decoded).find((m) => m.priority === 2);
    if (inner) out.push({ kind: inner.kind, start, end, priority: 2 });
  }
  return out;
}

/** Whether bytes are printable ASCII or UTF-8 text (tabs and line breaks allowed). */
function isPrintable(bytes: Uint8Array): boolean {
  for (const b of bytes) if ((b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) || b === 0x7f) return false;
  return !Buffer.from(bytes).toString('utf8').includes('\ufffd');
}

interface FormatDetector {
  kind: SecretKind;
  /** Global; starts only at a run boundary, bounded quantifiers only. */
  pattern: RegExp;
  /** The capture group holding the secret (it must end the match). */
  group?: number;
  accept?: (value: string) => boolean;
}

// "Not inside a run of token characters": a match may start only where a run starts, so a long run is tried
// once, not at each of its characters.
const RUN_START = '(?<![A-Za-z0-9_-])';

/** Token formats with a distinctive prefix (sources: each vendor's documented format). */
const FORMAT_DETECTORS: readonly FormatDetector[] = [
  // Anthropic before OpenAI: both start with sk-.
  { kind: 'anthropic-key', pattern: new RegExp(`${RUN_START}sk-ant-[A-Za-z0-9_-]{20,400}`, 'g') },
  {
    kind: 'openai-key',
    pattern: new RegExp(`${RUN_START}sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,400}`, 'g'),
    // Random-looking, not a kebab-case identifier that happens to start with sk- (sk-learn-...).
    accept: (v) => mixedClasses(v) >= 2 && /[0-9]/.test(v),
  },
  { kind: 'github-token', pattern: new RegExp(`${RUN_START}(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})`, 'g') },
  { kind: 'gitlab-token', pattern: new RegExp(`${RUN_START}glpat-[A-Za-z0-9_-]{20,100}`, 'g') },
  { kind: 'npm-token', pattern: new RegExp(`${RUN_START}npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])`, 'g') },
  { kind: 'slack-token', pattern: new RegExp(`${RUN_START}xox[abposr]-[A-Za-z0-9-]{10,250}`, 'g') },
  { kind: 'slack-webhook', pattern: /(?<![A-Za-z0-9_-])https:\/\/hooks\.slack\.com\/services\/[A-Za-z0-9_/-]{20,200}/g },
  { kind: 'stripe-key', pattern: new RegExp(`${RUN_START}(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,250}|whsec_[A-Za-z0-9+/=]{20,250})`, 'g') },
  { kind: 'google-api-key', pattern: new RegExp(`${RUN_START}AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])`, 'g') },
  { kind: 'aws-access-key', pattern: /(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])/g },
  // Hugging Face user access tokens (hf_ and 34 letters) and organisation API tokens (api_org_).
  { kind: 'huggingface-token', pattern: new RegExp(`${RUN_START}(?:hf_[A-Za-z]{34,40}|api_org_[A-Za-z]{34,40})(?![A-Za-z0-9])`, 'g') },
  // Azure storage and service-bus connection strings: AccountKey=<base64>, SharedAccessKey=<base64>.
  { kind: 'azure-key', pattern: /(?<![A-Za-z0-9])(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{20,200}={0,2})/g, group: 1 },
  { kind: 'sendgrid-key', pattern: new RegExp(`${RUN_START}SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])`, 'g') },
  // Other vendors' prefixed tokens (the formats of secretlint's recommended rules, docs/security.md): Shopify,
  // Linear, Notion, Groq, 1Password service accounts, Grafana, HashiCorp Vault, Vercel, Databricks, Docker Hub,
  // Figma, Cloudflare, Tailscale, PyPI, DigitalOcean.
  {
    kind: 'vendor-token',
    pattern: new RegExp(
      `${RUN_START}(?:shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}|lin_(?:api|oauth)_[A-Za-z0-9]{40,48}|(?:secret|ntn)_[A-Za-z0-9]{43,46}|gsk_[A-Za-z0-9]{48,52}` +
        `|ops_eyJ[A-Za-z0-9+/=_-]{100,4000}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/_-]{32,400}={0,2}|hv[sbr]\\.[A-Za-z0-9_-]{24,400}` +
        `|vc[pkiar]_[A-Za-z0-9]{40,60}|dapi[a-fA-F0-9]{32}(?:-\\d)?|dckr_pat_[A-Za-z0-9_-]{27}|fig[dou]_[A-Za-z0-9_-]{40,64}|cf(?:at|ut|k)_[A-Za-z0-9]{40,64}|tskey-[a-z]+-[A-Za-z0-9]{6,40}-[A-Za-z0-9]{20,60}` +
        `|pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,1000}|do[por]_v1_[a-f0-9]{64})(?![A-Za-z0-9_-])`,
      'g',
    ),
    // `secret_` and `ntn_` also begin identifiers: Notion's are long, mixed and carry digits.
    accept: (v) => !/^(?:secret|ntn)_/.test(v) || (mixedClasses(v) === 3 && !v.includes('_', 7)),
  },
  // Header and payload are base64url JSON objects, so both start with eyJ ('{"'); the signature may be empty.
  { kind: 'jwt', pattern: new RegExp(`${RUN_START}eyJ[A-Za-z0-9_-]{8,8192}\\.eyJ[A-Za-z0-9_-]{8,8192}\\.[A-Za-z0-9_-]{0,8192}`, 'g') },
  {
    kind: 'bearer-token',
    pattern: new RegExp(`${RUN_START}bearer[ \\t]{1,4}([A-Za-z0-9._~+/-]{16,4096}=*)`, 'gi'),
    group: 1,
    accept: (v) => mixedClasses(v) >= 2,
  },
  {
    kind: 'basic-auth',
    pattern: new RegExp(`${RUN_START}authorization["']?[ \\t]{0,4}[:=][ \\t]{0,4}["']?basic[ \\t]{1,4}([A-Za-z0-9+/]{8,4096}={0,2})`, 'gi'),
    group: 1,
  },
];

/**
 * Every prefix a {@link FORMAT_DETECTORS} pattern needs (loosely: a hit only means the detectors run). In the case
 * each detector matches: only `bearer` and `basic` in any case (a case-insensitive scan of every prefix cost 1.4x).
 */
const FORMAT_PREFIXES =
  /sk-|gh[pousr]_|github_pat_|glpat-|npm_|xox|hooks\.slack|_live_|_test_|whsec_|AIza|A[SK]IA|ABIA|ACCA|A3T|eyJ|[Bb][Ee][Aa][Rr][Ee][Rr]|[Bb][Aa][Ss][Ii][Cc]|hf_|api_org_|AccountKey=|SharedAccessKey=|SG\.|shp|lin_|secret_|ntn_|gsk_|glsa_|glc_|hv[sbr]\.|vc[pkiar]_|dapi|dckr_pat_|fig[dou]_|cf(?:at|ut|k)_|tskey-|pypi-|do[por]_v1_/;

/** How many of lower-case letters, upper-case letters and digits occur. */
function mixedClasses(s: string): number {
  return Number(/[a-z]/.test(s)) + Number(/[A-Z]/.test(s)) + Number(/[0-9]/.test(s));
}

function isPlaceholderAt(text: string, start: number): boolean {
  return text.startsWith('[REDACTED:', start) || text.startsWith('[private]', start);
}

// ---- passwords in URLs

const URL_SCHEME_CHAR = /[A-Za-z0-9+.-]/;
const URL_USER_PASSWORD = /[^\s:/?#@"'`<>]{0,256}:([^\s/?#@"'`<>]{1,256})@/y;

/**
 * `scheme://user:PASSWORD@host` (connection strings, git remotes): only the password goes, user and host stay
 * readable. Anchored on each `://` (a regular expression starting at every word was 10x slower on prose).
 */
function urlPasswords(text: string): Array<{ start: number; end: number }> {
  const out: Array<{ start: number; end: number }> = [];
  for (let at = text.indexOf('://'); at >= 0; at = text.indexOf('://', at + 3)) {
    let schemeStart = at;
    while (schemeStart > 0 && at - schemeStart < 32 && URL_SCHEME_CHAR.test(text[schemeStart - 1]!)) schemeStart--;
    if (schemeStart === at || !/[A-Za-z]/.test(text[schemeStart]!)) continue;
    URL_USER_PASSWORD.lastIndex = at + 3;
    const m = URL_USER_PASSWORD.exec(text);
    if (!m || isPlaceholderValue(m[1]!)) continue;
    const end = URL_USER_PASSWORD.lastIndex - 1;
    out.push({ start: end - m[1]!.length, end });
  }
  return out;
}

// ---- private-key blocks

const PEM_BEGIN = '-----BEGIN ';
const PEM_HEADER = /-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----/y;
const PEM_END = '-----END ';
const PEM_END_LINE = /-----END [A-Z0-9 ]{0,40}-----/y;
/** A base64 body line, or a line break (also the escaped \n of a JSON string). */
const PEM_BODY = /(?:[A-Za-z0-9+/=]{1,1024}|\r?\n|\\r|\\n)/y;

/**
 * PEM private-key blocks (RSA, EC, DSA, OpenSSH, PKCS#8, encrypted, PGP), from the BEGIN line through the END
 * line. A block without an END line (a cut log) is redacted through its base64 body: fail closed.
 */
function privateKeyBlocks(text: string): Array<{ start: number; end: number }> {
  const out: Array<{ start: number; end: number }> = [];
  let from = 0;
  let nextEnd = -2; // -2: not looked up yet; -1: there is no END line after `from`
  for (;;) {
    const begin = text.indexOf(PEM_BEGIN, from);
    if (begin < 0) return out;
    PEM_HEADER.lastIndex = begin;
    const header = PEM_HEADER.exec(text);
    if (!header) {
      from = begin + PEM_BEGIN.length;
      continue;
    }
    const bodyStart = begin + header[0].length;
    if (nextEnd !== -1 && nextEnd < bodyStart) nextEnd = text.indexOf(PEM_END, bodyStart);
    let end = bodyStart;
    if (nextEnd >= 0) {
      PEM_END_LINE.lastIndex = nextEnd;
      end = PEM_END_LINE.exec(text) ? PEM_END_LINE.lastIndex : nextEnd + PEM_END.length;
    } else {
      for (PEM_BODY.lastIndex = end; PEM_BODY.exec(text) !== null; ) end = PEM_BODY.lastIndex;
    }
    out.push({ start: begin, end });
    from = end;
  }
}

// ---- key = value assignments

/** Names that mark the value assigned to them as a secret, matched at the end of a key. */
const KEY_WORD = /pass(?:word|wd|phrase)|secret[_-]?key|secret|(?:signing|encryption|master)[_-]?key|api[_-]?key|apikey|access[_-]?key|private[_-]?key|token|credentials?/gi;
/** Keys ending in a key word that hold no secret (pagination cursors, counters). */
const HARMLESS_KEY = /(?:page|next|continuation|sync|cursor|max|min|num|total|count|csrf[_-]?header)[_-]?token$/i;
/** Values that are a type, a keyword, an empty marker or a template, not a secret. */
const NON_SECRET_VALUE =
  /^(?:\**|x+|X+|•+|\.{3}|…|-+|_+|null|none|nil|true|false|undefined|string|str|bytes|number|int|integer|bool|boolean|required|optional|any|object|text|varchar|secretstr|yes|no|on|off|redacted|hidden|masked|omitted|env|inherit|include|same-origin|await|new|this|self|function|lambda|async|yield|typeof|void|not)$/i;
const KEY_CHAR = /[A-Za-z0-9_.-]/;
const MAX_KEY_CHARS = 64;

/**
 * `password=...`, `"api_key": "..."`, `DB_PASSWORD: ...`, `--token ...`, `x-api-key: ...`: the value assigned to
 * a key ending in a key word (so `password_hash`, `tokens`, `max_tokens` and `tokenizer` are not keys). Code
 * that merely names a variable (`password: string`, `password = getPassword()`, `password: user.password`,
 * `password: hashedPassword`) is left alone; quoted literals in code are redacted.
 */
function assignments(text: string): SecretMatch[] {
  const out: SecretMatch[] = [];
  KEY_WORD.lastIndex = 0;
  for (let m = KEY_WORD.exec(text); m !== null; m = KEY_WORD.exec(text)) {
    const wordEnd = m.index + m[0].length;
    if (wordEnd < text.length && /[A-Za-z0-9_]/.test(text[wordEnd]!)) continue; // not the end of the key
    let keyStart = m.index;
    while (keyStart > 0 && m.index - keyStart < MAX_KEY_CHARS && KEY_CHAR.test(text[keyStart - 1]!)) keyStart--;
    const key = text.slice(keyStart, wordEnd);
    // The kind named in a placeholder ([REDACTED:github-token:...]) is not a key.
    if (HARMLESS_KEY.test(key) || text.startsWith('[REDACTED:', keyStart - 10)) continue;
    const value = assignedValue(text, wordEnd, key.startsWith('-'));
    if (!value) continue;
    // Resume after the value, taken or not: a key word inside it (password=my-token-1) is not another key,
    // and no character is scanned as a value twice (linear time).
    KEY_WORD.lastIndex = Math.max(KEY_WORD.lastIndex, value.end);
    const kind = kindOfKey(key, m[0]);
    if (isSecretValue(value, kind, m[0], text)) out.push({ kind, start: value.start, end: value.end });
  }
  return out;
}

interface AssignedValue {
  start: number;
  end: number;
  isQuoted: boolean;
  separator: string;
}

const SPACES = /[ \t]{0,4}/y;
const SEPARATOR = /:=|=>|[=:]/y;
const BARE_VALUE = /[^\s"'`,;&<>)\]}]{1,1024}/y;
const INDENT = /[ \t]{0,16}/y;
const NEXT_LINE_VALUE = /[^\s"'`]{1,1024}/y;
const DOUBLE_QUOTED = /(?:[^"\\\n]|\\.){0,1024}/y;
const SINGLE_QUOTED = /(?:[^'\\\n]|\\.){0,1024}/y;
const BACKTICK_QUOTED = /(?:[^`\\\n]|\\.){0,1024}/y;
const ESCAPED_DOUBLE_QUOTED = /(?:[^"\\\n]|\\[^"]){0,1024}/y;
const ESCAPED_SINGLE_QUOTED = /(?:[^'\\\n]|\\[^']){0,1024}/y;

/** Where a sticky pattern's match at `at` ends (`at` when it does not match). */
function stickyEnd(pattern: RegExp, text: string, at: number): number {
  pattern.lastIndex = at;
  return pattern.exec(text) ? pattern.lastIndex : at;
}

/** The value after a key ending at `at`: quote, spaces, a separator, spaces, then a quoted or bare value. */
function assignedValue(text: string, at: number, isFlag: boolean): AssignedValue | null {
  let i = at;
  if (text[i] === '\\' && (text[i + 1] === '"' || text[i + 1] === "'")) i += 2;
  else if (text[i] === '"' || text[i] === "'") i++;
  const afterKey = i;
  i = stickyEnd(SPACES, text, i);
  const sepEnd = stickyEnd(SEPARATOR, text, i);
  const separator = text.slice(i, sepEnd);
  if (separator === '') {
    // `--password hunter2`: a flag and its value, separated by spaces only.
    if (!isFlag || afterKey !== at || i === afterKey) return null;
  } else if (separator === '=' && text[sepEnd] === '=') {
    return null; // a comparison: password == other
  }
  i = stickyEnd(SPACES, text, sepEnd);
  if (i >= text.length) return null;
  if (separator !== '') {
    // The value on the next line, alone on it (`password:\n  hunter2`, a YAML block `key: |`): a secret split
    // from its label by a line break. Only a line holding one bare word counts, so `token:\n  type: string` does not.
    let j = i;
    if (text[j] === '|' || text[j] === '>') {
      j++;
      if (text[j] === '-' || text[j] === '+') j++;
      j = stickyEnd(SPACES, text, j);
    }
    const isBreak = text[j] === '\n' || (text[j] === '\r' && text[j + 1] === '\n');
    if (isBreak) {
      const start = stickyEnd(INDENT, text, j + (text[j] === '\r' ? 2 : 1));
      const end = stickyEnd(NEXT_LINE_VALUE, text, start);
      const isWholeLine = end === text.length || text[end] === '\n' || text[end] === '\r';
      return end > start && isWholeLine ? { start, end, isQuoted: false, separator } : null;
    }
  }
  const isEscaped = text[i] === '\\' && (text[i + 1] === '"' || text[i + 1] === "'");
  const quote = isEscaped ? text[i + 1]! : text[i]!;
  if (quote === '"' || quote === "'" || quote === '`') {
    const start = i + (isEscaped ? 2 : 1);
    const body = isEscaped
      ? quote === '"' ? ESCAPED_DOUBLE_QUOTED : ESCAPED_SINGLE_QUOTED
      : quote === '"' ? DOUBLE_QUOTED : quote === "'" ? SINGLE_QUOTED : BACKTICK_QUOTED;
    // Without its closing quote the value runs to the end of the line, or 1,024 characters (fail closed).
    const end = stickyEnd(body, text, start);
    return { start, end, isQuoted: true, separator };
  }
  const end = stickyEnd(BARE_VALUE, text, i);
  return end > i ? { start: i, end, isQuoted: false, separator } : null;
}

const SECRET_KEY_NAME = new RegExp(`(?:${KEY_WORD.source})$`, 'i');

/**
 * The kind of secret a key names (`password`, `DB_PASSWORD`, `apiKey`, `client_secret`, `x-api-key`), or null
 * for other keys (`password_hash`, `max_tokens`). For structured values such as an event's `meta`.
 */
export function secretKindOfKey(key: string): SecretKind | null {
  const m = SECRET_KEY_NAME.exec(key);
  if (!m || HARMLESS_KEY.test(key)) return null;
  return kindOfKey(key, m[0]);
}

/** Whether a string under a secret key is worth replacing (not empty, not a type, a template or a marker). */
export function isSecretKeyValue(value: string): boolean {
  return value.length > 0 && !NON_SECRET_VALUE.test(value) && !isPlaceholderValue(value) && !PLACEHOLDER_PATTERN.test(value);
}

function kindOfKey(key: string, word: string): SecretKind {
  const w = word.toLowerCase();
  if ((/aws/i.test(key) && /secret/i.test(key)) || /secret[_-]?access[_-]?key$/i.test(key)) return 'aws-secret-key';
  if (w.startsWith('pass')) return 'password';
  if (w === 'token') return 'token';
  if (w.startsWith('private')) return 'private-key';
  if (w.startsWith('secret') || w.startsWith('credential')) return 'secret';
  return 'api-key';
}

function isSecretValue(v: AssignedValue, kind: SecretKind, word: string, text: string): boolean {
  const value = text.slice(v.start, v.end);
  if (value.length === 0 || NON_SECRET_VALUE.test(value)) return false;
  if (isPlaceholderValue(value) || value.startsWith('[REDACTED:') || value.startsWith('[private]')) return false;
  if (!v.isQuoted) {
    if (/^[>|!&*[{(]/.test(value)) return false; // YAML block, tag or anchor; code
    if (value.includes('(') || value.includes('[')) return false; // a call or an index: getPassword(), env["X"]
    if (/^[A-Za-z_$][\w$]*(?:\??\.[A-Za-z_$][\w$]*)+$/.test(value)) return false; // member access: req.body.password
    // An identifier in code (hashedPassword, new_password) rather than a literal: letters only, camel or snake case.
    if (/^[A-Za-z_]+$/.test(value) && (/[a-z][A-Z]/.test(value) || value.includes('_'))) return false;
    if (value.toLowerCase().includes(word.toLowerCase())) return false; // password=password, a variable
    // Prose: "Password: see the vault" (a lower-case word followed by more words on the line).
    if (v.separator === ':' && /^[a-z]+$/.test(value) && /^ [A-Za-z]/.test(text.slice(v.end, v.end + 2))) return false;
  }
  if (kind === 'password' || kind === 'aws-secret-key') return true;
  // Other keys (secret, token, api key) hold machine-made values: long and mixed, not words.
  return value.length >= 8 && (mixedClasses(value) >= 2 || value.length >= 20 || /[^A-Za-z0-9]/.test(value));
}

/** Templates and markers that stand for a secret without being one: ${DB_PASS}, $TOKEN, <password>, {{ x }}, ****. */
function isPlaceholderValue(value: string): boolean {
  return /^(?:\$\{|\$[A-Za-z_]|\{\{|<[A-Za-z_-]*>?$|%\(|#\{|\*{3,}|x{3,}$|X{3,}$)/.test(value);
}
