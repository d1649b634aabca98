// ESLint checks one thing here: that imports point the way DESIGN.md's "Layout" says (model at the bottom,
// drivers only under src/store/ and src/interfaces/, backends only behind src/store/). Style and correctness are
// left to tsc and the tests. `no-restricted-imports` matches the import path as written, not the file it
// resolves to, so every rule is spelled once per folder depth: a file N folders below src/ reaches src/ with
// exactly N "../". Dynamic `import()` is not checked (the rule does not see it); only src/store/ uses it for code.
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

/** The core folders (DESIGN.md "Layout"): no driver package, no interface, no concrete backend. */
const CORE_FOLDERS = ['model', 'memory', 'context', 'bus', 'consolidate'];
/** Deepest nesting the rules cover below a top folder (src/bus/resolvers/x.ts is 2); deeper files go unchecked. */
const MAX_DEPTH = 5;
/** Files only the tests load: they may use test/ fixtures. */
const TEST_FILE_NAMES = ['*.test.ts', 'test-support.ts'];

/** A path from a file `depth` folders below a root (src/ or the repository) back into that root. */
const up = (depth) => `(?:\\.\\./){${depth}}(?!\\.\\./)`;

const rules = {
  /** Packages that talk to a database, a network protocol or a terminal. */
  drivers: {
    regex: '^(?:better-sqlite3|pg|sqlite-vec|hono|commander|cli-progress)(?:/|$)|^@(?:hono|modelcontextprotocol)/',
    message: 'Core code never imports a driver package (better-sqlite3, pg, sqlite-vec, hono, @hono/*, @modelcontextprotocol/*, commander, cli-progress): drivers belong under src/store/ or src/interfaces/.',
  },
  interfaces: (depth) => ({
    regex: `^${up(depth)}interfaces/`,
    message: 'Core code never imports an interface (CLI, MCP, HTTP, dashboard): interfaces call the engine, not the other way round.',
  }),
  backends: (depth) => ({
    regex: `^${depth === 0 ? '\\./' : up(depth)}store/(?:sqlite|postgres)/`,
    message: 'Only src/store/ knows the backends: open a store with openStore() and type it as StorageBackend.',
  }),
  modelOnly: (depth) => ({
    regex: `^${up(depth)}(?!model/|errors\\.js$|util/)`,
    message: 'src/model/ holds types and schemas: it imports nothing from src/ but errors.ts and util/.',
  }),
  noTestOrBench: (depth) => ({
    regex: `^(?:\\.\\./){${depth + 1},}(?:test|bench)/`,
    message: 'Code under src/ (its tests aside) never depends on test/ or bench/.',
  }),
};

/** The patterns for a file `depth` folders below src/, in top folder `folder` ('' for any). */
function srcPatterns(folder, depth, isTest) {
  const patterns = [];
  if (!isTest) patterns.push(rules.noTestOrBench(depth));
  if (folder !== 'store') patterns.push(rules.backends(depth));
  if (CORE_FOLDERS.includes(folder)) patterns.push(rules.drivers, rules.interfaces(depth));
  if (folder === 'model') patterns.push(rules.modelOnly(depth));
  return patterns;
}

/**
 * A later block's options replace an earlier one's, so each (folder, depth) gets one block with all its rules:
 * first every folder under src/ (a new folder is covered from the start), then the stricter store and core ones.
 */
function srcBlocks() {
  const blocks = [];
  const add = (dir, folder, depth) => {
    const restrict = (isTest) => ({ 'no-restricted-imports': ['error', { patterns: srcPatterns(folder, depth, isTest) }] });
    blocks.push(
      { files: [`${dir}*.ts`], ignores: TEST_FILE_NAMES.map((name) => `**/${name}`), rules: restrict(false) },
      { files: TEST_FILE_NAMES.map((name) => `${dir}${name}`), rules: restrict(true) },
    );
  };
  add('src/', '', 0);
  for (const folder of ['', 'store', ...CORE_FOLDERS]) {
    for (let depth = 1; depth <= MAX_DEPTH; depth++) add(`src/${folder || '*'}/${'*/'.repeat(depth - 1)}`, folder, depth);
  }
  return blocks;
}

/**
 * bench/ runs outside the test runner: it never imports test/ nor a test-only file under src/, and it opens
 * stores as users do (openStore), unless it measures a backend's own parts (`isBackendBench`).
 */
function benchPatterns(depth, isBackendBench = false) {
  const patterns = [
    { regex: `^${up(depth)}test/`, message: 'bench/ never imports test/: what both need lives in bench/lib/ or src/.' },
    { regex: '(?:^|/)test-support\\.js$|\\.test\\.js$', message: 'bench/ never imports a test-only file.' },
  ];
  if (!isBackendBench) patterns.push({ ...rules.backends(depth), regex: `^${up(depth)}src/store/(?:sqlite|postgres)/` });
  return patterns;
}

function benchBlocks() {
  const blocks = [];
  for (let depth = 1; depth <= MAX_DEPTH; depth++) {
    blocks.push({ files: [`bench/${'*/'.repeat(depth - 1)}*.ts`], rules: { 'no-restricted-imports': ['error', { patterns: benchPatterns(depth) }] } });
  }
  return blocks;
}

export default defineConfig(
  { ignores: ['dist/**', 'bench/results/**', 'coverage/**'] },
  {
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser, sourceType: 'module' },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
  },
  ...srcBlocks(),
  ...benchBlocks(),
  {
    // The raw SQLite + FTS5 baseline that ingest and recall are measured against builds its MATCH queries with
    // the backend's own compiler, so both sides search for the same terms.
    files: ['bench/ingest-recall.ts', 'bench/scale.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: benchPatterns(1, true) }] },
  },
  {
    // So does http-load's floor (raw SQLite + FTS5 on the same events and queries), and the raw baseline with both
    // indexes makes its identifier rows with the index's own definition (gramText).
    files: ['bench/lib/sqlite-floor.ts', 'bench/lib/raw-fts5.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: benchPatterns(2, true) }] },
  },
);
