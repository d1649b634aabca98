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
  'jwt',
  'bearer-token',
  'basic-auth',
  'url-password',
  'password',
  'secret',
  'api-key',
  'token',
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
  const found: Array<SecretMatch & { priority: number }> = [];
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
const FORMAT_PREFIXES = /sk-|gh[pousr]_|github_pat_|glpat-|npm_|xox|hooks\.slack|_live_|_test_|whsec_|AIza|A[SK]IA|ABIA|ACCA|A3T|eyJ|[Bb][Ee][Aa][Rr][Ee][Rr]|[Bb][Aa][Ss][Ii][Cc]/;

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
