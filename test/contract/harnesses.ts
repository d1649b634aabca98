import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostgresBackend } from '../../src/store/postgres/postgres-backend.js';
import { SqliteBackend } from '../../src/store/sqlite/sqlite-backend.js';
import { dropSchema, testPgUrl, uniqueSchema } from '../fixtures/postgres.js';
import { afterEach, beforeAll, beforeEach, describe } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import type { BackendHarness } from './storage-contract.js';

/** The backends the contract knows, in the order suites run. */
export const BACKEND_NAMES = ['sqlite', 'postgres'] as const;
export type BackendName = (typeof BACKEND_NAMES)[number];

/** Tests a backend leaves out, and why: a skip without a reason is not accepted (as in hono's router suite). */
export interface ContractSkip {
  /** Why the backend cannot pass these tests; shown as the skip note. */
  reason: string;
  /**
   * Each test's title path without the backend: the suite, any inner describes and the test, joined by " > ",
   * e.g. `storage contract > append > assigns gap-free turns per session starting at 1`. A title that names no
   * test of a suite that ran fails that suite, so skips cannot outlive the tests they name.
   */
  tests: readonly string[];
}

/** One backend under the contract: a fresh store per call, and what it does not support. */
export interface ContractBackend {
  name: BackendName;
  createHarness: () => Promise<BackendHarness>;
  skip: readonly ContractSkip[];
}

/**
 * The backends a run covers: every one in `all` when `filter` is empty or undefined, else those it names
 * (comma-separated; callers pass `$ENGRAM_TEST_BACKENDS`, e.g. `ENGRAM_TEST_BACKENDS=sqlite` for a run without
 * PostgreSQL). An unknown name is an error, not an empty run. `filter` has no default: an undefined argument means
 * no filter, whatever the environment says, so the runner's own tests hold under `ENGRAM_TEST_BACKENDS=sqlite`.
 */
export function selectBackends<B extends { name: BackendName }>(all: readonly B[], filter: string | undefined): B[] {
  const wanted = (filter ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (wanted.length === 0) return [...all];
  const unknown = wanted.filter((w) => !all.some((b) => b.name === w));
  if (unknown.length > 0) throw new Error(`ENGRAM_TEST_BACKENDS: unknown backend ${unknown.join(', ')} (known: ${all.map((b) => b.name).join(', ')})`);
  return all.filter((b) => wanted.includes(b.name));
}

/** The skip reasons of `backend` that apply to `suite`, by test title path (see {@link ContractSkip.tests}). */
export function skipsFor(backend: Pick<ContractBackend, 'name' | 'skip'>, suite: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const s of backend.skip) {
    if (s.reason.trim() === '') throw new Error(`${backend.name}: a contract skip must state its reason (${s.tests.join('; ')})`);
    for (const title of s.tests) if (title === suite || title.startsWith(`${suite} > `)) out.set(title, s.reason);
  }
  return out;
}

/** The part of a vitest task the skips read: its title, the describe around it and, for a describe, its tasks. */
interface TaskNode {
  readonly name: string;
  readonly suite?: TaskNode | undefined;
  readonly tasks?: readonly TaskNode[];
}

/** A task's title path up to the backend's describe `root`, which is written as `suite` alone. */
function titlePath(task: TaskNode, root: TaskNode, suite: string): string {
  const names: string[] = [];
  for (let t: TaskNode | undefined = task; t && t !== root; t = t.suite) names.unshift(t.name);
  return [suite, ...names].join(' > ');
}

/** Every title path below `root`: its describes and tests. */
function titlePaths(root: TaskNode, suite: string): Set<string> {
  const out = new Set<string>();
  const walk = (tasks: readonly TaskNode[]): void => {
    for (const t of tasks) {
      out.add(titlePath(t, root, suite));
      if (t.tasks) walk(t.tasks);
    }
  };
  walk(root.tasks ?? []);
  return out;
}

/**
 * Registers one part of the storage contract once per backend of the run, as `describe('<suite>: <backend>')`
 * around `define` (the one loop over backends; kysely's test-setup and hono's router suite work the same way).
 * The backend's skips for this suite skip those tests, noting the reason; every other test runs on every
 * backend. `backends` defaults to the ones `$ENGRAM_TEST_BACKENDS` selects (see {@link selectBackends}).
 */
export function runStorageContract(
  suite: string,
  define: (backend: ContractBackend) => void,
  options: { backends?: readonly ContractBackend[] } = {},
): void {
  for (const backend of options.backends ?? selectBackends(CONTRACT_BACKENDS, process.env.ENGRAM_TEST_BACKENDS)) {
    describe(`${suite}: ${backend.name}`, () => {
      const skips = skipsFor(backend, suite);
      if (skips.size > 0) {
        let root: TaskNode | undefined;
        // vitest reads a hook's first parameter as fixtures, which must be destructured; the describe is the second.
        beforeAll(({}, suiteTask) => {
          root = suiteTask;
          const known = titlePaths(suiteTask, suite);
          const stale = [...skips.keys()].filter((title) => !known.has(title));
          if (stale.length > 0) throw new Error(`${backend.name}: contract skips name no test: ${stale.join('; ')}`);
        });
        beforeEach((context) => {
          // A skip may name a test or a describe around it.
          for (let t: TaskNode | undefined = context.task; root && t && t !== root; t = t.suite) {
            const reason = skips.get(titlePath(t, root, suite));
            if (reason !== undefined) context.skip(`${backend.name}: ${reason}`);
          }
        });
      }
      define(backend);
    });
  }
}

/** Every backend the contract runs on, as a fresh store per call, with what it leaves out (nothing so far). */
export const CONTRACT_BACKENDS: readonly ContractBackend[] = [
  {
    name: 'sqlite',
    createHarness: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'engram-contract-'));
      const backend = SqliteBackend.open(join(dir, 'engram.db'));
      return {
        backend,
        cleanup: async () => {
          await backend.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
    skip: [],
  },
  {
    name: 'postgres',
    createHarness: async () => {
      const schema = uniqueSchema();
      const backend = await PostgresBackend.open(testPgUrl(), { schema, maxConnections: 4 });
      return {
        backend,
        cleanup: async () => {
          await backend.close();
          await dropSchema(schema);
        },
      };
    },
    skip: [],
  },
];

/**
 * The backends of this run as `[name, createHarness]` pairs, for suites outside the contract that loop with
 * `describe.each` (the end-to-end access matrix and HTTP property tests); contract files use {@link runStorageContract}.
 */
export const BACKEND_HARNESSES: ReadonlyArray<[name: BackendName, create: () => Promise<BackendHarness>]> = selectBackends(CONTRACT_BACKENDS, process.env.ENGRAM_TEST_BACKENDS).map(
  (b) => [b.name, b.createHarness],
);

/**
 * Registers beforeEach/afterEach that open an engine on a fresh store of one backend and close it; the
 * returned object reads the current ones inside tests.
 */
export function useEngram(createHarness: () => Promise<BackendHarness>): { readonly mem: Engram; readonly harness: BackendHarness } {
  let harness: BackendHarness | undefined;
  let mem: Engram | undefined;
  beforeEach(async () => {
    harness = await createHarness();
    mem = await openEngram({ backend: harness.backend });
  });
  afterEach(async () => {
    // Guarded: when the harness failed to open, the real error must not be buried under a TypeError.
    await mem?.close();
    await harness?.cleanup();
    mem = undefined;
    harness = undefined;
  });
  return {
    get mem() {
      return mem!;
    },
    get harness() {
      return harness!;
    },
  };
}
