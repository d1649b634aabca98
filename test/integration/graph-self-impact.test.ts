import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { CODE_FILE_RE } from '../../src/consolidate/graph/code-imports.js';

/**
 * Impact on this repository's own imports, at its HEAD commit, against a ground truth computed here independently:
 * the files of the commit checked out with `git archive`, each file's module specifiers found by the TypeScript
 * compiler's own pre-processor (`ts.preProcessFile`, a scanner, not the parser the graph uses) and resolved by
 * TypeScript's module resolution (`ts.resolveModuleName`, NodeNext as tsconfig.json says) against the disk.
 */
const REPO = resolve(import.meta.dirname, '../..');
let dir: string;
let mem: Engram;
let commit: string;
let truth: Map<string, Set<string>>;
let files: string[];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-self-impact-'));
  commit = execFileSync('git', ['-C', REPO, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
  const tree = join(dir, 'tree');
  execFileSync('mkdir', ['-p', tree]);
  execFileSync('sh', ['-c', `git -C "${REPO}" archive ${commit} | tar -x -C "${tree}"`]);
  files = execFileSync('git', ['-C', REPO, 'ls-tree', '-r', '--name-only', '--full-tree', commit], { encoding: 'utf8', maxBuffer: 64 << 20 })
    .split('\n')
    .filter((p) => CODE_FILE_RE.test(p) && !p.split('/').includes('node_modules'));
  const options: ts.CompilerOptions = { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, allowJs: true, resolveJsonModule: true };
  truth = new Map();
  for (const path of files) {
    const abs = join(tree, path);
    const pre = ts.preProcessFile(readFileSync(abs, 'utf8'), true, true);
    const out = new Set<string>();
    for (const f of pre.importedFiles) {
      const r = ts.resolveModuleName(f.fileName, abs, options, ts.sys).resolvedModule;
      if (!r || r.isExternalLibraryImport) continue;
      const rel = relative(tree, r.resolvedFileName);
      if (!rel.startsWith('..') && rel !== path && files.includes(rel)) out.add(rel);
    }
    truth.set(path, out);
  }
  mem = await openEngram({ db: join(dir, 'store.db') });
  await mem.graphBuilder().buildFromRepository({ repository: REPO, commit, project: 'default' });
}, 300_000);

afterAll(async () => {
  await mem?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Dependents of `start` by depth (1..maxDepth) in the ground-truth import graph, each at its least depth. */
function truthImpact(start: string, maxDepth: number): Map<string, number> {
  const importers = new Map<string, string[]>();
  for (const [from, tos] of truth) for (const to of tos) importers.set(to, [...(importers.get(to) ?? []), from]);
  const depth = new Map<string, number>([[start, 0]]);
  let frontier = [start];
  for (let d = 1; d <= maxDepth; d++) {
    const next: string[] = [];
    for (const f of frontier) for (const i of importers.get(f) ?? []) if (!depth.has(i)) (depth.set(i, d), next.push(i));
    frontier = next;
  }
  depth.delete(start);
  return depth;
}

it('matches the import edges TypeScript resolves, file for file', async () => {
  let tp = 0;
  let fp = 0;
  let fn = 0;
  const misses: string[] = [];
  for (const path of files) {
    const got = new Set(
      (await mem.knowledge.impact(`file:${path}`, { direction: 'dependencies', maxDepth: 1, commit }).catch(() => ({ groups: [] }))).groups.flatMap((g) =>
        g.entities.map((e) => e.name),
      ),
    );
    const want = truth.get(path)!;
    for (const g of got) if (want.has(g)) tp++;
    else (fp++, misses.push(`extra ${path} -> ${g}`));
    for (const w of want) if (!got.has(w)) (fn++, misses.push(`missing ${path} -> ${w}`));
  }
  const precision = tp / (tp + fp);
  const recall = tp / (tp + fn);
  console.log(`import edges at ${commit.slice(0, 12)}: ${files.length} files, ${tp + fn} true edges, precision ${precision.toFixed(4)}, recall ${recall.toFixed(4)}`, misses.slice(0, 20));
  expect(tp).toBeGreaterThan(500);
  expect(precision).toBeGreaterThanOrEqual(0.95);
  expect(recall).toBeGreaterThanOrEqual(0.95);
}, 300_000);

it('matches the ground truth blast radius (dependents by depth, up to 3) of every file', async () => {
  let tp = 0;
  let fp = 0;
  let fn = 0;
  let checked = 0;
  for (const path of files) {
    const want = truthImpact(path, 3);
    const answer = await mem.knowledge.impact(`file:${path}`, { commit }).catch(() => null);
    const got = new Map<string, number>();
    for (const g of answer?.groups ?? []) for (const e of g.entities) if (e.kind === 'file') got.set(e.name, g.depth);
    if (want.size === 0 && got.size === 0) continue;
    checked++;
    for (const [name, d] of got) if (want.get(name) === d) tp++;
    else fp++;
    for (const [name, d] of want) if (got.get(name) !== d) fn++;
  }
  const precision = tp / (tp + fp);
  const recall = tp / (tp + fn);
  console.log(`impact (file, depth) pairs over ${checked} files with dependents: ${tp + fn} true, precision ${precision.toFixed(4)}, recall ${recall.toFixed(4)}`);
  expect(checked).toBeGreaterThan(50);
  expect(precision).toBeGreaterThanOrEqual(0.95);
  expect(recall).toBeGreaterThanOrEqual(0.95);
}, 600_000);
