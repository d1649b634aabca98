import { describe, expect, it } from 'vitest';
import type { ValidEventInput } from '../model/event.js';
import { RedactionPolicy, redactEventInput } from './event-redaction.js';

const KEY = 'k';
const GH = 'ghp_' + 'Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78';

describe('event redaction', () => {
  it('redacts content, tags, meta strings and whole values under secret key names, and counts by kind', () => {
    const input: ValidEventInput = {
      kind: 'tool_call',
      content: JSON.stringify({ command: `git push https://${GH}@github.com/acme/shop` }),
      tags: [`leak:${GH}`],
      meta: { password: 'hunter2', nested: { apiKey: 'zx81kq02lm93', note: `see ${GH}` }, list: [{ client_secret: 'abc' }], count: 3, password_hash: 'x' },
    };
    const { input: out, report } = redactEventInput(input, KEY);
    expect(JSON.stringify(out)).not.toMatch(/hunter2|zx81kq02lm93|ghp_Ab12/);
    expect(out.meta).toMatchObject({ count: 3, password_hash: 'x', list: [{ client_secret: expect.stringMatching(/^\[REDACTED:secret:/) }] });
    expect(report).toEqual({ count: 6, byKind: { 'github-token': 3, password: 1, 'api-key': 1, secret: 1 } });
  });

  it('redacts a text attachment and its caption, and leaves binary payloads alone', () => {
    const env = Buffer.from(`DB_PASSWORD=hunter2\n`).toString('base64');
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
    const text = redactEventInput({ kind: 'user', content: '', binary: { base64: env, mediaType: 'text/plain', caption: `with ${GH}` } }, KEY);
    expect(Buffer.from(text.input.binary!.base64, 'base64').toString('utf8')).toMatch(/^DB_PASSWORD=\[REDACTED:password:[0-9a-f]{8}\]\n$/);
    expect(text.input.binary!.caption).not.toContain(GH);
    const image = redactEventInput({ kind: 'user', content: '', binary: { base64: png, mediaType: 'image/png' } }, KEY);
    expect(image.input.binary!.base64).toBe(png);
    expect(image.report.count).toBe(0);
  });

  it('returns the same input object when nothing was found', () => {
    const input: ValidEventInput = { kind: 'user', content: 'nothing secret here', meta: { a: 1 } };
    expect(redactEventInput(input, KEY).input).toBe(input);
  });

  it('reads the store key once, and not at all when switched off', async () => {
    let loads = 0;
    const on = new RedactionPolicy(async () => {
      loads++;
      return 'store-key';
    });
    await on.redactText(`a ${GH}`);
    await on.redactEvents([{ kind: 'user', content: GH }]);
    expect(loads).toBe(1);
    const off = new RedactionPolicy(async () => {
      throw new Error('must not be read');
    }, { enabled: false });
    expect(await off.redactText(GH)).toBe(GH);
  });
});

describe('event redaction of large content', () => {
  it('redacts a multi-megabyte tool output in steps, with its meta, as one whole scan would', async () => {
    const log = Array.from({ length: 80_000 }, (_, i) => `[build] step ${i} ok`).join('\n');
    const input = {
      kind: 'tool_result',
      toolName: 'Bash',
      content: `${log}\nexport GITHUB_TOKEN=ghp_${'a1B2'.repeat(9)}\n${log}`,
      tags: [],
      meta: { password: 'hunter2hunter2' },
    } as unknown as ValidEventInput;
    const policy = new RedactionPolicy(async () => 'k');
    const [stepped] = await policy.redactEvents([input]);
    const whole = redactEventInput(input, 'k');
    expect(stepped).toEqual(whole);
    expect(stepped!.report.count).toBe(2);
    expect(stepped!.input.content).not.toContain('ghp_a1B2');
    const clean = { ...input, content: log + log, meta: {} } as unknown as ValidEventInput;
    const [same] = await policy.redactEvents([clean]);
    expect(same!.input).toBe(clean);
  });
});
