import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { commitFiles } from '../fixtures/git-repo.js';
import { runEngram } from '../fixtures/cli.js';

// engram graph build / entities / impact / expand through the built CLI, with a real git repository.
let dir: string;
let repo: string;
let commit: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-cli-knowledge-'));
  repo = join(dir, 'repo');
  commit = commitFiles(repo, {
    'lib/store.ts': 'export class Store {}\n',
    'lib/api.ts': "import { Store } from './store.js';\nexport const api = new Store();\n",
    'app/main.ts': "import { api } from '../lib/api.js';\nconsole.log(api);\n",
  });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const engram = (args: string[], input?: string) => runEngram(['--embedder', 'none', '--repo', repo, ...args], { cwd: dir, ...(input !== undefined ? { input } : {}) });

it('builds the graph from events and code, lists entities, walks impact and expands an entity or an event', () => {
  const events = [
    { kind: 'user', content: 'Deploys fail with ECONNREFUSED from the billing service.' },
    { kind: 'assistant', content: 'The billing service depends on the auth service. ECONNREFUSED was fixed in lib/api.ts.' },
  ];
  const ingested = engram(['ingest', '-', '--session', 's1'], events.map((e) => JSON.stringify(e)).join('\n') + '\n');
  expect(ingested.code, ingested.stderr).toBe(0);

  const built = engram(['graph', 'build', '--code', '--commit', commit]);
  expect(built.code, built.stderr).toBe(0);
  expect(built.stdout).toContain('Sessions: 2 new events of 1 sessions read');
  expect(built.stdout).toContain(`at ${commit.slice(0, 12)}: 3 files, 2 imports`);
  expect(engram(['graph', 'build']).stdout).toContain('Sessions: 0 new events');

  const listed = engram(['entities', '--kind', 'service', '--json']);
  expect(listed.code, listed.stderr).toBe(0);
  expect(JSON.parse(listed.stdout).map((e: { name: string }) => e.name).sort()).toEqual(['auth', 'billing']);
  expect(engram(['entities', 'store']).stdout).toContain('file:lib/store.ts');
  const badKind = engram(['entities', '--kind', 'gadget']);
  expect(badKind.code).toBe(2);
  expect(badKind.stderr).toContain('kinds');

  const impact = engram(['impact', 'file:lib/store.ts']);
  expect(impact.code, impact.stderr).toBe(0);
  expect(impact.stdout).toContain('## depth 1: will break (1)\n- file:lib/api.ts (1.00, imports) [repo:lib/api.ts#L1-L1@');
  expect(impact.stdout).toContain('## depth 2: likely affected (1)\n- file:app/main.ts');
  const json = JSON.parse(engram(['impact', 'service:auth', '--json']).stdout);
  expect(json.groups[0]).toMatchObject({ depth: 1, label: 'will break', entities: [{ name: 'billing', via: { type: 'depends_on' } }] });
  expect(engram(['impact', 'file:nowhere.ts']).code).toBe(3);

  const expanded = engram(['expand', 'error:ECONNREFUSED', '--max-tokens', '300']);
  expect(expanded.code, expanded.stderr).toBe(0);
  expect(expanded.stdout).toMatch(/## fixed by\n- file:lib\/api\.ts \(0\.80\) \[evt_/);
  expect(expanded.stdout).toMatch(/## evidence\n- (user|assistant), session s1 turn [12]: .*ECONNREFUSED/);
  const eventId = /\[(evt_[0-9a-z]{26})\]/.exec(expanded.stdout)![1]!;
  expect(engram(['expand', eventId]).stdout).toContain('ECONNREFUSED');
});
