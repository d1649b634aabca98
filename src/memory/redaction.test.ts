import { describe, expect, it } from 'vitest';
import { findSecrets, isHighEntropyWord, PLACEHOLDER_PATTERN, REDACT_STEP_CHARS, redactionPlaceholder, redactQuery, redactText, redactTextInSteps, type SecretKind } from './redaction.js';

const KEY = 'test-store-secret';

// Synthetic credentials in each vendor's format, assembled here so that no literal token sits in the repository
// (secret scanners would flag it, and a test fixture must never be a live credential).
const alnum = (n: number, seed = 'A1b2C3d4E5f6G7h8') => seed.repeat(Math.ceil(n / seed.length)).slice(0, n);
const FAKE = {
  awsKeyId: 'AKIA' + 'IOSFODNN7EXAMPLE',
  awsSecret: 'wJalrXUtnFEMI/K7MDENG/' + 'bPxRfiCYEXAMPLEKEY',
  github: 'ghp_' + alnum(36),
  githubOauth: 'gho_' + alnum(36, 'Zz9Yy8Xx7'),
  githubPat: 'github_pat_' + alnum(22) + '_' + alnum(59, 'Qq1Ww2Ee3'),
  gitlab: 'glpat-' + alnum(20),
  npm: 'npm_' + alnum(36),
  slack: 'xoxb-' + '1234567890-1234567890123-' + alnum(24),
  slackWebhook: 'https://hooks.slack.com/services/' + 'T0000000/B0000000/' + alnum(24),
  stripe: 'sk_' + 'live_' + alnum(24),
  google: 'AIza' + alnum(35, 'Sy9_d-Q8r'),
  openai: 'sk-proj-' + alnum(48),
  openaiLegacy: 'sk-' + alnum(48),
  anthropic: 'sk-ant-' + 'api03-' + alnum(80, 'Kk7_Ll8-Mm9'),
  jwt:
    'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9' +
    '.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ' +
    '.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c',
  pemBody: 'MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n',
};
const pem = (label: string, body = FAKE.pemBody) => `-----BEGIN ${label}-----\n${body}-----END ${label}-----`;

/** The kinds found in `text`, in order. */
const kinds = (text: string): SecretKind[] => findSecrets(text).map((m) => m.kind);
/** Redacted text; asserts the secret is gone and a placeholder of `kind` took its place. */
function expectRedacted(text: string, secret: string, kind: SecretKind): string {
  const out = redactText(text, KEY);
  expect(out.text, text).not.toContain(secret);
  expect(out.text).toContain(redactionPlaceholder(kind, secret, KEY));
  return out.text;
}

describe('redaction: credential formats are replaced', () => {
  it.each([
    ['export AWS_ACCESS_KEY_ID=' + FAKE.awsKeyId, FAKE.awsKeyId, 'aws-access-key'],
    ['[default]\naws_secret_access_key = ' + FAKE.awsSecret + '\n', FAKE.awsSecret, 'aws-secret-key'],
    ['{"Credentials": {"SecretAccessKey": "' + FAKE.awsSecret + '", "Expiration": "2026-01-01"}}', FAKE.awsSecret, 'aws-secret-key'],
    ['git push https://' + FAKE.github + '@github.com/acme/shop.git', FAKE.github, 'github-token'],
    ['GITHUB_TOKEN=' + FAKE.github, FAKE.github, 'github-token'],
    ['gh auth login --with-token <<< ' + FAKE.githubOauth, FAKE.githubOauth, 'github-token'],
    ['token: ' + FAKE.githubPat, FAKE.githubPat, 'github-token'],
    ['CI_JOB_TOKEN would not do; use ' + FAKE.gitlab, FAKE.gitlab, 'gitlab-token'],
    ['//registry.npmjs.org/:_authToken=' + FAKE.npm, FAKE.npm, 'npm-token'],
    ['SLACK_BOT_TOKEN="' + FAKE.slack + '"', FAKE.slack, 'slack-token'],
    ['curl -X POST ' + FAKE.slackWebhook + " -d '{}'", FAKE.slackWebhook, 'slack-webhook'],
    ['stripe.api_key = "' + FAKE.stripe + '"', FAKE.stripe, 'stripe-key'],
    ['const maps = new Loader({ apiKey: "' + FAKE.google + '" });', FAKE.google, 'google-api-key'],
    ['OPENAI_API_KEY=' + FAKE.openai, FAKE.openai, 'openai-key'],
    ['client = OpenAI(api_key="' + FAKE.openaiLegacy + '")', FAKE.openaiLegacy, 'openai-key'],
    ['export ANTHROPIC_API_KEY=' + FAKE.anthropic, FAKE.anthropic, 'anthropic-key'],
    ['set-cookie: session=' + FAKE.jwt + '; HttpOnly', FAKE.jwt, 'jwt'],
  ] as Array<[string, string, SecretKind]>)('%s', (text, secret, kind) => {
    expectRedacted(text, secret, kind);
  });

  it('redacts a PEM private-key block whole, whatever its label', () => {
    for (const label of ['RSA PRIVATE KEY', 'PRIVATE KEY', 'EC PRIVATE KEY', 'OPENSSH PRIVATE KEY', 'ENCRYPTED PRIVATE KEY']) {
      const text = `key file:\n${pem(label)}\nend of file`;
      const out = redactText(text, KEY).text;
      expect(out).toBe(`key file:\n${redactionPlaceholder('private-key', pem(label), KEY)}\nend of file`);
    }
  });

  it('redacts a private key cut before its END line through its base64 body (fail closed)', () => {
    const text = `$ cat id_rsa | head -3\n-----BEGIN RSA PRIVATE KEY-----\n${FAKE.pemBody}`;
    const out = redactText(text, KEY).text;
    expect(out).not.toContain('MIIEowIBAAKCAQEA');
    expect(out).not.toContain('VTLw7onLRnrq0');
    expect(out.startsWith('$ cat id_rsa | head -3\n[REDACTED:private-key:')).toBe(true);
  });

  it('redacts a private key inside a JSON string (escaped newlines)', () => {
    const json = JSON.stringify({ private_key_id: 'abc', private_key: pem('PRIVATE KEY') });
    const out = redactText(json, KEY).text;
    expect(out).not.toContain('MIIEowIBAAKCAQEA');
    expect(() => JSON.parse(out)).not.toThrow();
  });

  it.each([
    ['DB_PASSWORD=hunter2', 'hunter2'],
    ['PGPASSWORD=s3cret psql -h db -U app', 's3cret'],
    ['database:\n  user: app\n  password: "S3cr3t!pass"\n', 'S3cr3t!pass'],
    ['database:\n  password: letmein\n', 'letmein'],
    ['{"user":"app","password":"hunter2","db":"shop"}', 'hunter2'],
    ['mysql --user=root --password=Tr0ub4dor&3 shop', 'Tr0ub4dor'],
    ['pg_dump --password hunter2 shop', 'hunter2'],
    ["connect(host='db', passwd='x9y8z7w6')", 'x9y8z7w6'],
    ['SECRET_KEY=django-insecure-9f8e7d6c5b4a', 'django-insecure-9f8e7d6c5b4a'],
    ['api_key = "abcd1234efgh5678"', 'abcd1234efgh5678'],
    ['X-Api-Key: 9f8e7d6c5b4a39281706f5e4d3c2b1a0', '9f8e7d6c5b4a39281706f5e4d3c2b1a0'],
    ['client_secret: Qm9vbGVhbiBzZWNyZXQ', 'Qm9vbGVhbiBzZWNyZXQ'],
    ['https://api.example.com/v1?user=me&access_token=Zx81Kq02Lm93&page=2', 'Zx81Kq02Lm93'],
  ])('assignment %s', (text, secret) => {
    const out = redactText(text, KEY);
    expect(out.text).not.toContain(secret);
    expect(out.text).toMatch(PLACEHOLDER_PATTERN);
  });

  it('finds an assignment inside an escaped JSON string (tool arguments)', () => {
    const args = JSON.stringify({ command: JSON.stringify({ password: 'hunter2', user: 'app' }) });
    const out = redactText(args, KEY).text;
    expect(out).not.toContain('hunter2');
    expect(JSON.parse(JSON.parse(out).command)).toMatchObject({ user: 'app', password: expect.stringMatching(PLACEHOLDER_PATTERN) });
  });

  it('keeps user and host of a connection string and drops only its password', () => {
    const out = expectRedacted('DATABASE_URL=postgres://app:Sup3rS3cret@db.internal:5432/prod', 'Sup3rS3cret', 'url-password');
    expect(out).toMatch(/^DATABASE_URL=postgres:\/\/app:\[REDACTED:url-password:[0-9a-f]{8}\]@db\.internal:5432\/prod$/);
    expectRedacted('mongodb+srv://admin:hunter2@cluster0.example.net/test', 'hunter2', 'url-password');
    expect(redactText('postgres://user:pass@host', KEY).text).toBe(`postgres://user:${redactionPlaceholder('url-password', 'pass', KEY)}@host`);
    expectRedacted('redis://:r3d1sPass@cache:6379/0', 'r3d1sPass', 'url-password');
  });

  it('redacts bearer and basic credentials in Authorization headers', () => {
    expectRedacted('curl -H "Authorization: Bearer abcDEF123456ghiJKL789" https://api', 'abcDEF123456ghiJKL789', 'bearer-token');
    expectRedacted('Authorization: Basic dXNlcjpwYXNzd29yZA==', 'dXNlcjpwYXNzd29yZA==', 'basic-auth');
    // The one scan for every format's prefix ignores the case of these two, as their detectors do.
    expectRedacted('authorization: BEARER abcDEF123456ghiJKL789', 'abcDEF123456ghiJKL789', 'bearer-token');
    expectRedacted('AUTHORIZATION: bAsIc dXNlcjpwYXNzd29yZA==', 'dXNlcjpwYXNzd29yZA==', 'basic-auth');
    // A JWT bearer is a JWT (the more specific kind).
    expect(kinds(`Authorization: Bearer ${FAKE.jwt}`)).toEqual(['jwt']);
  });
});

describe('redaction: ordinary code and data are left alone', () => {
  it.each([
    ['a git SHA', 'commit 7c4a8d09ca3762af61e59520943dc26494f8941b\nAuthor: Dev <dev@example.com>'],
    ['a sha256 digest', 'sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'],
    ['a UUID', 'request_id=123e4567-e89b-12d3-a456-426614174000'],
    ['Engram ids', 'evt_01jc7z3v9k2m4n6p8q0r2s4t6v art_' + 'ab12'.repeat(16)],
    [
      'a base64 image',
      'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
    ],
    ['a TypeScript signature', 'async function login(user: string, password: string): Promise<Token> {'],
    ['a call', 'const password = await getPassword(user);'],
    ['a comparison', 'if (password == confirm) return;'],
    ['member access', 'password: user.password,\ntoken = request.headers.token'],
    ['an identifier', 'user.password = hashedPassword;\nconst creds = { password: new_password };'],
    ['a Python type hint', 'def connect(host: str, password: str = None) -> Conn:'],
    ['an environment lookup', 'password = os.environ["DB_PASSWORD"]'],
    ['a secret file path', 'PASSWORD_FILE=/run/secrets/db_password'],
    ['token counters', 'max_tokens: 4096\ntoken_count=12\nusage.total_tokens = 5000\ntokenizer = createTokenizer()'],
    ['a pagination token', 'next_page_token: "CkQKCAjD7ZmQBhABEjoKBGZvby4SMgowCgRuYW1lEigKJmZvbw"'],
    ['GitHub Actions', 'jobs:\n  build:\n    secrets: inherit\n    env:\n      TOKEN: ${{ secrets.GITHUB_TOKEN }}'],
    ['fetch options', "fetch(url, { credentials: 'include' })"],
    ['prose', 'Password: see the team vault. Bearer tokens are short-lived; sk-learn is a typo for scikit-learn.'],
    ['placeholders', 'password: <your-password>\napi_key: "${API_KEY}"\nDB_PASSWORD=$DB_PASSWORD\nsecret: "********"'],
    ['URLs without a password', 'postgres://localhost:5432/engram https://user@example.com/a:b@c postgres://postgres:${PGPASSWORD}@db/x'],
    ['public keys and certificates', pem('PUBLIC KEY') + '\n' + pem('CERTIFICATE')],
    ['an sk- identifier', 'the sk-this-is-a-kebab-case-feature-flag-name flag'],
  ])('%s', (_name, text) => {
    expect(findSecrets(text)).toEqual([]);
    expect(redactText(text, KEY).text).toBe(text);
  });
});

describe('redaction: placeholders', () => {
  it('gives the same secret the same placeholder, and another store key another hash', () => {
    const a = redactText(`one ${FAKE.github} two ${FAKE.github}`, KEY);
    const [first, second] = a.text.match(/\[REDACTED:github-token:[0-9a-f]{8}\]/g)!;
    expect(first).toBe(second);
    expect(redactText(FAKE.github, 'another-store').text).not.toBe(redactText(FAKE.github, KEY).text);
  });

  it('counts redactions by kind without revealing them', () => {
    const out = redactText(`AWS ${FAKE.awsKeyId} and ${FAKE.github} and password=hunter2 and ${FAKE.github}`, KEY);
    expect(out.count).toBe(4);
    expect(out.byKind).toEqual({ 'aws-access-key': 1, 'github-token': 2, password: 1 });
  });

  it('is idempotent: redacting redacted text changes nothing', () => {
    const samples = [
      `DB_PASSWORD=hunter2 ${FAKE.github} postgres://app:pw@db/x`,
      `{"password":"hunter2","token":"${FAKE.slack}"}`,
      pem('RSA PRIVATE KEY'),
      `Authorization: Bearer abcDEF123456ghiJKL789`,
    ];
    for (const s of samples) {
      const once = redactText(s, KEY).text;
      expect(redactText(once, KEY).text).toBe(once);
    }
  });
});

describe('redaction: linear time on adversarial input', () => {
  // Each line is 1 MB built to make a backtracking pattern retry from every position. A quadratic detector
  // would take hours on any of them; these finish within the test's default timeout.
  const MB = 1_000_000;
  const fill = (unit: string) => unit.repeat(Math.ceil(MB / unit.length)).slice(0, MB);
  it.each([
    ['one run of letters', fill('a')],
    ['one run of upper case', fill('A')],
    ['repeated token prefixes', fill('ghp_')],
    ['repeated AWS prefixes', fill('AKIA')],
    ['repeated sk- prefixes', fill('sk-')],
    ['repeated sk-ant- prefixes', fill('sk-ant-')],
    ['repeated JWT heads', fill('eyJ')],
    ['JWT-like segments without a signature', fill('eyJabcdefgh.eyJ ')],
    ['repeated key words', fill('password')],
    ['repeated assignments', fill('password=')],
    ['repeated assignments with spaces', fill('token: ')],
    ['unclosed quotes', fill('password="')],
    ['escaped unclosed quotes', fill('\\"password\\":\\"')],
    ['repeated flags', fill('--password ')],
    ['repeated PEM headers', fill('-----BEGIN RSA PRIVATE KEY-----')],
    ['repeated PEM END words', '-----BEGIN PRIVATE KEY-----' + fill('-----END ')],
    ['repeated scheme and user', fill('a://b:')],
    ['a URL password without its @', 'postgres://u:' + fill('p')],
    ['repeated bearers', fill('Bearer ')],
    ['repeated basic auth', fill('Authorization: Basic ')],
    ['repeated slack webhooks', fill('https://hooks.slack.com/services/')],
    ['backslashes', fill('\\')],
    ['repeated JSON escapes', fill('ghp\\u005f')],
    ['repeated labels before line breaks', fill('password:\n')],
    ['repeated block scalars', fill('token: |\n')],
    ['one long base64 run', fill('Z2hw')],
    ['base64 runs of a token each', fill(Buffer.from('ghp_' + 'A'.repeat(36)).toString('base64') + ' ')],
    ['repeated vendor prefixes', fill('hf_AccountKey=SG.shpat_hvs.tskey-')],
    ['emoji', fill('😀')],
  ])('%s', (_name, line) => {
    expect(Array.isArray(findSecrets(line))).toBe(true);
  });
});

describe('redactTextInSteps', () => {
  const KEY = 'k';
  const pem = ['-----BEGIN RSA PRIVATE KEY-----', ...Array.from({ length: 40 }, (_, i) => `MIIEowIBAAKCAQEA${String(i).padStart(4, '0')}abcdefghijklmnopqrstuvwxyz0123456789+/AB`), '-----END RSA PRIVATE KEY-----'].join('\n');
  const filler = (n: number) => Array.from({ length: n }, (_, i) => `[build] compiling module ${i} ... ok`).join('\n');

  it('gives what redactText gives on a long text, with secrets on both sides of every step and a key block across one', async () => {
    const lines = filler(40_000);
    // Place the key block so that it straddles the first step boundary.
    const head = lines.slice(0, REDACT_STEP_CHARS - 500);
    const text = `${head}\npassword=hunter2hunter2\n${pem}\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n${lines}\n${lines}\nghp_${'a1B2'.repeat(9)}\n`;
    expect(text.length).toBeGreaterThan(2 * REDACT_STEP_CHARS);
    let yields = 0;
    const stepped = await redactTextInSteps(text, KEY, async () => {
      yields++;
    });
    const whole = redactText(text, KEY);
    expect(stepped).toEqual(whole);
    expect(yields).toBeGreaterThan(0);
    expect(stepped.byKind['private-key']).toBe(1);
    expect(stepped.text).not.toContain('MIIEowIBAAKCAQEA0000');
  });

  it('scans a key block with no END line to the end of the text in one step', async () => {
    const text = `${filler(30_000)}\n${pem.split('\n').slice(0, -1).join('\n')}\n${filler(40_000)}`;
    const stepped = await redactTextInSteps(text, KEY, async () => {});
    expect(stepped).toEqual(redactText(text, KEY));
  });
});

describe('redactTextInSteps on texts without line breaks', () => {
  it('cuts inside long runs of letters or backslashes only, finding the secrets around them as a whole scan does', async () => {
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const letters = Array.from({ length: 3 * REDACT_STEP_CHARS }, () => 'abcdefghijklmnopqrstuvwxyz'[Math.floor(rand() * 26)]).join('');
    const text = `token=ghp_${'a1B2'.repeat(9)} ${letters} password=hunter2hunter2 ${'\\'.repeat(2 * REDACT_STEP_CHARS)} sk-ant-${'x9Y8'.repeat(10)}`;
    let yields = 0;
    const stepped = await redactTextInSteps(text, 'k', async () => {
      yields++;
    });
    expect(yields).toBeGreaterThan(1);
    expect(stepped.count).toBe(redactText(text, 'k').count);
    expect(stepped.text).not.toContain('ghp_a1B2');
    expect(stepped.text).not.toContain('hunter2hunter2');
    expect(stepped.text).not.toContain('sk-ant-x9Y8');
  });
});

// Issue 31: forms that were served verbatim. Synthetic values, assembled here (see FAKE above).
const letters = (n: number, seed = 'QwErTyUiOpAsDfGhJkLzXcVbNm') => seed.repeat(Math.ceil(n / seed.length)).slice(0, n);
const hexOf = (n: number) => 'a1b2c3d4e5f60789'.repeat(Math.ceil(n / 16)).slice(0, n);
const MORE = {
  huggingface: 'hf_' + letters(34),
  huggingfaceOrg: 'api_org_' + letters(34, 'ZyXwVuTsRqPoNmLkJiHgFeDcBa'),
  azureKey: Buffer.from(alnum(64, 'K3y!M4t3r1al#')).toString('base64'),
  sendgrid: 'SG.' + alnum(22, 'Ab1Cd2Ef3') + '.' + alnum(43, 'Gh4Ij5Kl6_Mn7'),
  shopify: 'shpat_' + hexOf(32),
  linear: 'lin_api_' + alnum(40),
  groq: 'gsk_' + alnum(52),
  docker: 'dckr_pat_' + alnum(27, 'Pq8Rs9_Tu0'),
  databricks: 'dapi' + hexOf(32),
  vault: 'hvs.' + alnum(90, 'CAESIJ9x_Yz8'),
  tailscale: 'tskey-auth-' + alnum(12, 'kT1s2') + '-' + alnum(33, 'CNTRL9x8Y7'),
  vercel: 'vcp_' + alnum(56),
  notion: 'ntn_' + alnum(46, 'N0t1oNk3Y'),
};

describe('redaction: forms of issue 31', () => {
  it.each([
    ['HF_TOKEN=' + MORE.huggingface, MORE.huggingface, 'huggingface-token'],
    ['from huggingface_hub import login; login("' + MORE.huggingface + '")', MORE.huggingface, 'huggingface-token'],
    ['org token ' + MORE.huggingfaceOrg, MORE.huggingfaceOrg, 'huggingface-token'],
    ['DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=' + MORE.azureKey + ';EndpointSuffix=core.windows.net', MORE.azureKey, 'azure-key'],
    ['Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=' + MORE.azureKey, MORE.azureKey, 'azure-key'],
    ['SENDGRID_API_KEY=' + MORE.sendgrid, MORE.sendgrid, 'sendgrid-key'],
    ['shopify: ' + MORE.shopify, MORE.shopify, 'vendor-token'],
    ['linear ' + MORE.linear, MORE.linear, 'vendor-token'],
    ['groq ' + MORE.groq, MORE.groq, 'vendor-token'],
    ['docker login -p ' + MORE.docker, MORE.docker, 'vendor-token'],
    ['host=x dbtoken ' + MORE.databricks, MORE.databricks, 'vendor-token'],
    ['VAULT ' + MORE.vault, MORE.vault, 'vendor-token'],
    ['ts ' + MORE.tailscale, MORE.tailscale, 'vendor-token'],
    ['vercel ' + MORE.vercel, MORE.vercel, 'vendor-token'],
    ['notion ' + MORE.notion, MORE.notion, 'vendor-token'],
    ['CLOUDFLARE_API_TOKEN=cfat_' + alnum(40) + hexOf(8), 'cfat_' + alnum(40) + hexOf(8), 'vendor-token'],
    ['FIGMA_TOKEN=figd_' + alnum(56), 'figd_' + alnum(56), 'vendor-token'],
    ['DATABRICKS_TOKEN=dapi' + hexOf(32).toUpperCase(), 'dapi' + hexOf(32).toUpperCase(), 'vendor-token'],
    ['vci_' + alnum(40), 'vci_' + alnum(40), 'vendor-token'],
  ] as Array<[string, string, SecretKind]>)('%s', (text, secret, kind) => {
    expectRedacted(text, secret, kind);
  });

  it('redacts a secret whose value is on the line after its label (a YAML value, a block scalar, an env file)', () => {
    expectRedacted('db:\n  password:\n    Tr0ub4dor&3xyz\n  host: db', 'Tr0ub4dor&3xyz', 'password');
    expectRedacted('aws_secret_access_key =\n' + FAKE.awsSecret + '\n', FAKE.awsSecret, 'aws-secret-key');
    expectRedacted('api_key: |\n  ' + alnum(40) + '\n', alnum(40), 'api-key');
    expectRedacted('client_secret: >-\r\n    ' + alnum(32, 'Zq9') + '\r\n', alnum(32, 'Zq9'), 'secret');
  });

  it('redacts the base64 of a known token whole, as the token\'s kind', () => {
    const b64 = Buffer.from(FAKE.github).toString('base64');
    expectRedacted('echo ' + b64 + ' | base64 -d', b64, 'github-token');
    const basic = Buffer.from('x-access-token:' + FAKE.github).toString('base64');
    expectRedacted('data:\n  auth: ' + basic + '\n', basic, 'github-token');
    const url = Buffer.from(MORE.huggingface).toString('base64url');
    expectRedacted('HF=' + url, url, 'huggingface-token');
  });

  it('redacts a token written with JSON escapes (ghp\\u005f...), replacing the escaped span', () => {
    const escaped = FAKE.github.replace('_', '\\u005f');
    const out = expectRedacted('{"note": "push with ' + escaped + ' please"}', escaped, 'github-token');
    expect(out).toBe('{"note": "push with ' + redactionPlaceholder('github-token', escaped, KEY) + ' please"}');
    const slashes = 'postgres:\\/\\/app:S3cretPw9@db\\/prod';
    expect(redactText('{"url": "' + slashes + '"}', KEY).text).not.toContain('S3cretPw9');
    expect(kinds('{"k": "' + MORE.huggingface.replace('_', '\\u005F') + '"}')).toEqual(['huggingface-token']);
  });

  it.each([
    ['a YAML schema', 'properties:\n  password:\n    type: string\n  token:\n    - a\n'],
    ['a label before a list', 'credentials:\n  - name: db\n'],
    ['a word after a label', 'token:\n  none\nsecret:\n  username\n'],
    ['base64 of prose', 'msg: ' + Buffer.from('hello there, this is an ordinary message about basic things').toString('base64')],
    ['a long base64 image', 'data:image/png;base64,' + Buffer.alloc(6000, 7).toString('base64')],
    ['a base64 of binary', Buffer.from(Array.from({ length: 48 }, (_, i) => (i * 37) % 256)).toString('base64')],
    ['JSON escapes of ordinary text', '{"msg": "caf\\u00e9 \\u2014 path C:\\\\temp\\\\x \\/ ok"}'],
    ['identifiers with vendor-like prefixes', 'secret_key_base secret_santa_2024 ntn_config gsk_short hf_hub_download dapi_version vcp_enabled'],
  ])('leaves alone %s', (_name, text) => {
    expect(findSecrets(text)).toEqual([]);
  });
});

describe('redaction: recall queries as logged', () => {
  it.each([
    ['a bare random value', 'Xk9Qm2Lp7Rt4Vw8Zb3Nc'],
    ['a long lower-case key', 'k3j9x2m8q4w7z1p5r6t0y8u2'],
    ['an agent token', 'eng_' + 'Zx8Cv7Bn6Mq5Lw4Ke3Jr2Ht1Gy0Fu9Di8So7Pa6Q'],
  ])('replaces %s', (_name, value) => {
    expect(isHighEntropyWord(value)).toBe(true);
    const out = redactQuery(`why did ${value} fail`, KEY);
    expect(out.text).not.toContain(value);
    expect(out.byKind['high-entropy']).toBe(1);
  });

  it.each([
    ['a git sha', '7c4a8d09ca3762af61e59520943dc26494f8941b'],
    ['a short sha', '7c4a8d0'],
    ['a UUID', '123e4567-e89b-12d3-a456-426614174000'],
    ['an event id', 'evt_01jc7z3v9k2m4n6p8q0r2s4t6v'],
    ['an artifact id', 'art_' + 'ab12'.repeat(16)],
    ['an identifier', 'parseHttpHeaderFrameV2'],
    ['a path', 'src/memory/redaction.test.ts'],
    ['a timestamp', '2026-12-06T16:04:45.123Z'],
    ['a version', 'v12.4.1-beta.20261206'],
    ['an error code', 'ERR_STORAGE_TIMEOUT_42'],
    ['a sentence', 'what did we decide about the ledger retries'],
  ])('keeps %s', (_name, value) => {
    expect(isHighEntropyWord(value)).toBe(false);
    expect(redactQuery(value, KEY).text).toBe(value);
  });

  it('redacts known formats in a query as in content, and a secret given as a whole query', () => {
    expect(redactQuery(FAKE.github, KEY).text).toBe(redactionPlaceholder('github-token', FAKE.github, KEY));
    expect(redactQuery('password=hunter2 rotation', KEY).text).not.toContain('hunter2');
  });
});
