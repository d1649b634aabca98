import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { isEngramError, type EngramError } from '../../src/errors.js';
import { MAX_HEAD_BYTES } from '../../src/memory/importers/index.js';
import { IMPORT_FORMAT_NAMES, IMPORT_FORMATS, type ImportFormat } from '../../src/memory/importers/types.js';

/**
 * Format detection through the import runner, on a real SQLite store: every sample is detected as its format, a
 * first record longer than the old 64 KiB sniff is read whole, a wrong `--format` names the format the file looks
 * like, and a blank file is refused as a whole.
 */

const TRANSCRIPTS = resolve('test/fixtures/transcripts');

/** Small files of the formats that have no sample file, made here in their documented shapes. */
const MADE: Record<string, string> = {
  'engram.jsonl': [{ kind: 'user', content: 'hello' }, { kind: 'assistant', content: 'hi' }].map((l) => JSON.stringify(l)).join('\n') + '\n',
  'chat-openai.json': JSON.stringify(
    {
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'list files' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'ls', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: 'a.txt' },
      ],
    },
    null,
    2,
  ),
  'chat-anthropic.json': JSON.stringify(
    {
      system: 'be brief',
      messages: [
        { role: 'user', content: 'list files' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'ls', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'a.txt' }] },
      ],
    },
    null,
    2,
  ),
  'claude-code.jsonl':
    [
      { type: 'user', uuid: 'u1', sessionId: 'cc-1', cwd: '/r', message: { role: 'user', content: 'list files' } },
      { type: 'assistant', uuid: 'u2', sessionId: 'cc-1', message: { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'ls' } }] } },
      { type: 'user', uuid: 'u3', sessionId: 'cc-1', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'a.txt' }] } },
    ]
      .map((l) => JSON.stringify(l))
      .join('\n') + '\n',
};

/** Every sample, by the format it is. */
const SAMPLES: Array<[string, ImportFormat]> = [
  ['engram.jsonl', 'jsonl'],
  ['chat-openai.json', 'openai'],
  ['chat-anthropic.json', 'anthropic'],
  ['claude-code.jsonl', 'claude-code'],
  ['codex-rollout.jsonl', 'codex'],
  ['codex-rollout-legacy.jsonl', 'codex'],
  ['openhands-events.jsonl', 'openhands'],
  ['openhands-trajectory.json', 'openhands'],
  ['openhands-output.jsonl', 'openhands'],
  ['openhands-sdk-output.jsonl', 'openhands'],
  ['swe-agent-textkit__textkit-231.traj', 'swe-agent'],
  ['gemini-session-2025-09-18T08-14-6f3c9a2e.json', 'gemini'],
  ['gemini-session-2026-03-11T21-02-c41d7e9a.jsonl', 'gemini'],
];


let dir: string;
let mem: Engram;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-detect-'));
  for (const [name, text] of Object.entries(MADE)) writeFileSync(join(dir, name), text);
  for (const [name] of SAMPLES) if (!(name in MADE)) copyFileSync(join(TRANSCRIPTS, name), join(dir, name));
  mem = await openEngram({ db: join(dir, 'engram.db') });
});
afterAll(async () => {
  await mem.close();
  rmSync(dir, { recursive: true, force: true });
});

async function failure(p: Promise<unknown>): Promise<EngramError | null> {
  try {
    await p;
    return null;
  } catch (err) {
    if (!isEngramError(err)) throw err;
    return err;
  }
}

describe('import format detection', () => {
  it('detects every sample as its format and imports it without an invalid record', async () => {
    for (const [name, format] of SAMPLES) {
      const report = await mem.importFile({ path: join(dir, name) }, { sessionId: name.includes('openai') ? 'chat-openai' : undefined });
      expect([name, report.format, report.issueCount]).toEqual([name, format, 0]);
      expect(report.stored + report.duplicates, name).toBeGreaterThan(0);
    }
  });

  it('names the format a file looks like when another is asked for: refusing and storing nothing, or (skipInvalid) in the report beside the invalid records', async () => {
    const quiet: string[] = [];
    for (const [name, detected] of SAMPLES) {
      for (const format of IMPORT_FORMATS) {
        if (format === detected) continue;
        for (const skipInvalid of [false, true]) {
          const before = (await mem.stats()).events;
          const attempt = mem.importFile({ path: join(dir, name) }, { format, skipInvalid, sessionId: `wrong-${format}` });
          const err = await failure(attempt);
          if (err === null) {
            // Only an import that stored what it could read and listed the rest, naming the format in its report.
            const report = await attempt;
            if (!skipInvalid || report.issueCount === 0 || report.detectedFormat !== detected) quiet.push(`${name} as ${format}`);
            continue;
          }
          expect(err.code, `${name} as ${format}: ${err.message}`).toBe('INVALID_INPUT');
          expect(err.message, `${name} as ${format}`).toContain(`The file looks like ${IMPORT_FORMAT_NAMES[detected]}, not ${IMPORT_FORMAT_NAMES[format]}: pass --format ${detected}.`);
          expect(err.data.detectedFormat).toBe(detected);
          expect((await mem.stats()).events).toBe(before);
        }
      }
    }
    expect(quiet).toEqual([]);
  });

  it('refuses a Codex rollout read as OpenAI with the message of issue #30 turned round', async () => {
    const err = await failure(mem.importFile({ path: join(dir, 'codex-rollout.jsonl') }, { format: 'openai', sessionId: 'x' }));
    expect(err?.message).toMatch(/^codex-rollout\.jsonl:\d+: malformed JSON.*nothing was imported\. The file looks like a Codex CLI rollout, not an OpenAI chat: pass --format codex\.$/);
  });

  it('detects and imports an OpenHands evaluation output whose first line is far over 64 KiB', async () => {
    const observation = Array.from({ length: 9000 }, (_, i) => `collected item ${i} ... PASSED`).join('\n');
    const response = { choices: [{ message: { role: 'assistant', content: 'Running the tests.' } }] };
    const instance = {
      instance_id: 'ledgerly__ledgerly-99',
      test_result: { git_patch: '' },
      instruction: 'Run the tests.',
      metadata: { agent_class: 'CodeActAgent', llm_config: { model: 'm' } },
      history: [
        { id: 1, source: 'user', action: 'message', args: { content: 'Run the tests.' } },
        { id: 2, source: 'agent', action: 'run', args: { command: 'pytest -v' }, tool_call_metadata: { function_name: 'execute_bash', tool_call_id: 'toolu_9', model_response: response } },
        { id: 3, source: 'agent', cause: 2, observation: 'run', content: observation, extras: { metadata: { exit_code: 0, working_dir: '/workspace/ledgerly' } } },
      ],
    };
    const line = JSON.stringify(instance);
    expect(Buffer.byteLength(line)).toBeGreaterThan(3 * 64 * 1024);
    writeFileSync(join(dir, 'output.jsonl'), `${line}\n${JSON.stringify({ ...instance, instance_id: 'ledgerly__ledgerly-100' })}\n`);
    const report = await mem.importFile({ path: join(dir, 'output.jsonl') });
    expect(report.format).toBe('openhands');
    expect(report.sessions).toEqual([
      { id: 'ledgerly__ledgerly-99', stored: 3, duplicates: 0 },
      { id: 'ledgerly__ledgerly-100', stored: 3, duplicates: 0 },
    ]);
    const again = await mem.importFile({ path: join(dir, 'output.jsonl') });
    expect([again.stored, again.duplicates]).toEqual([0, 6]);
  });

  it('says when it could not tell the format because the first record is longer than it reads', async () => {
    writeFileSync(join(dir, 'huge.jsonl'), `{"note": "${'x'.repeat(MAX_HEAD_BYTES + 1024)}"}\n`);
    const err = await failure(mem.importFile({ path: join(dir, 'huge.jsonl') }));
    expect(err?.message).toBe(`huge.jsonl: cannot tell the transcript format from its first 16 MiB (its first record is longer); pass --format (${IMPORT_FORMATS.join(', ')})`);
    writeFileSync(join(dir, 'unknown.jsonl'), '{"note": "x"}\n');
    expect((await failure(mem.importFile({ path: join(dir, 'unknown.jsonl') })))?.message).toMatch(/^unknown\.jsonl: cannot tell the transcript format; pass --format/);
  });

  it('refuses a blank file as a whole, with or without skipInvalid, in any format', async () => {
    writeFileSync(join(dir, 'blank.jsonl'), ' \n\n\t\n');
    writeFileSync(join(dir, 'empty.jsonl'), '');
    for (const name of ['blank.jsonl', 'empty.jsonl']) {
      for (const options of [{}, { skipInvalid: true }, { format: 'codex' as const }]) {
        const err = await failure(mem.importFile({ path: join(dir, name) }, options));
        expect(err?.data).toMatchObject({ field: 'file', line: 0 });
        expect(err?.message).toMatch(new RegExp(`^${name.replace('.', '\\.')}: the file is empty`));
      }
    }
  });
});
