import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runEngram } from '../fixtures/cli.js';

// engram recall --granularity through the built CLI: the choice reported in the text header and the JSON, the
// derived layers above the raw evidence, and no change to recall without the option.
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-cli-granular-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const engram = (args: string[], input?: string) => runEngram(['--embedder', 'none', ...args], { cwd: dir, ...(input !== undefined ? { input } : {}) });

it('recall --granularity routes by the query, reports the choice and lists ids to expand', () => {
  const events = [
    { kind: 'user', content: 'Deploys fail with ECONNREFUSED from the billing service.' },
    { kind: 'assistant', content: 'The billing service depends on the auth service. ECONNREFUSED was fixed in lib/api.ts.' },
  ];
  expect(engram(['ingest', '-', '--session', 's1'], events.map((e) => JSON.stringify(e)).join('\n') + '\n').code).toBe(0);
  const built = engram(['graph', 'build']);
  expect(built.code, built.stderr).toBe(0);

  const entity = engram(['recall', '--granularity', 'auto', 'ECONNREFUSED']);
  expect(entity.code, entity.stderr).toBe(0);
  expect(entity.stdout.split('\n')[0]).toBe('Granularity: entities (auto: the query names an entity of the knowledge graph: its expansion)');
  expect(entity.stdout).toMatch(/- error:ECONNREFUSED ent_[0-9a-f]{24}/);
  expect(entity.stdout.indexOf('Raw evidence:')).toBeGreaterThan(entity.stdout.indexOf('error:ECONNREFUSED'));
  expect(entity.stdout.slice(entity.stdout.indexOf('Raw evidence:'))).toContain('ECONNREFUSED was fixed in lib/api.ts');

  const json = engram(['recall', '--granularity', 'auto', '--json', 'what did we learn about the billing service?']);
  expect(json.code, json.stderr).toBe(0);
  const out = JSON.parse(json.stdout) as { hits: unknown[]; granular: { granularity: string; requested: string; entities: Array<{ id: string; name: string }>; drillDown: string[] } };
  expect(out.granular).toMatchObject({ granularity: 'summaries', requested: 'auto' });
  expect(out.granular.entities.map((e) => e.name)).toContain('billing');
  const expanded = engram(['expand', out.granular.drillDown.find((id) => id.startsWith('ent_'))!]);
  expect(expanded.code, expanded.stderr).toBe(0);
  expect(expanded.stdout).toContain('billing');

  const exact = engram(['recall', '--granularity', 'auto', 'fixed in lib/api.ts']);
  expect(exact.stdout.split('\n')[0]).toBe('Granularity: events (auto: an exact identifier (lib/api.ts): raw events)');
  // Without the option recall prints as before: no header.
  const plain = engram(['recall', 'ECONNREFUSED']);
  expect(plain.code).toBe(0);
  expect(plain.stdout).not.toContain('Granularity:');
  const bad = engram(['recall', '--granularity', 'coarse', 'x']);
  expect(bad.code).not.toBe(0);
  expect(bad.stderr).toContain('granularity');
});
