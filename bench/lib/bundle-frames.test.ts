import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { cliEntry, unbundleFrames } from './bundle-frames.js';
import { cliPhases } from './cli-start-profile.js';
import type { CpuProfile } from './cpu-profile.js';

const root = mkdtempSync(join(tmpdir(), 'engram-bundle-frames-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('unbundleFrames', () => {
  // The CLI's bundle is CommonJS compiled through vm.Script under its path (bin/engram.js); an ES module bundle's frames carry a file: URL.
  it.each([
    ['an ES module bundle (frames name a file: URL)', 'esm', 'main.js'],
    ['a CommonJS bundle run through vm.Script (frames name its path)', 'cjs', 'main.cjs'],
  ] as const)("names a bundled frame after its source module's dist/ file, so the phase rules classify it: %s", async (_name, format, file) => {
    mkdirSync(join(root, 'src', 'memory'), { recursive: true });
    writeFileSync(join(root, 'src', 'memory', 'recall.ts'), 'export function rank(xs: number[]): number[] {\n  return [...xs].sort((a, b) => b - a);\n}\n');
    writeFileSync(join(root, 'src', 'main.ts'), "import { rank } from './memory/recall.js';\nconsole.log(rank([1, 3, 2]));\n");
    const outfile = join(root, 'dist', 'cli-bundle', file);
    await build({ entryPoints: [join(root, 'src', 'main.ts')], bundle: true, outfile, format, platform: 'node', sourcemap: 'linked', logLevel: 'silent' });
    const lines = readFileSync(outfile, 'utf8').split('\n');
    const line = lines.findIndex((l) => l.includes('function rank('));
    expect(line).toBeGreaterThan(0);
    const url = format === 'esm' ? pathToFileURL(outfile).href : outfile;
    const frame = (id: number, functionName: string, lineNumber: number, columnNumber = 0, at = url) => ({ id, callFrame: { functionName, url: at, lineNumber, columnNumber } });
    const profile: CpuProfile = {
      nodes: [
        { ...frame(1, '(root)', 0, 0, ''), children: [2] } as CpuProfile['nodes'][number],
        { ...frame(2, '', 0), children: [3, 4, 5] } as CpuProfile['nodes'][number],
        frame(3, 'rank', line, lines[line]!.indexOf('function rank(')),
        frame(4, 'node_modules/zod/v4/core/core.js', 40),
        frame(5, 'readFileSync', 10, 0, 'node:fs'),
      ],
      samples: [3, 3, 4, 5, 2],
      timeDeltas: [1000, 1000, 500, 250, 250],
      startTime: 0,
      endTime: 3000,
    };
    const mapped = unbundleFrames(profile);
    const byId = new Map(mapped.nodes.map((n) => [n.id, n.callFrame]));
    expect(byId.get(3)).toMatchObject({ functionName: 'rank', url: pathToFileURL(join(root, 'dist', 'memory', 'recall.js')).href });
    expect(byId.get(4)).toMatchObject({ functionName: '', lineNumber: 0, url: pathToFileURL(join(root, 'node_modules', 'zod', 'v4', 'core', 'core.js')).href });
    expect(byId.get(2)).toMatchObject({ functionName: '', lineNumber: 0, url: pathToFileURL(outfile).href });
    expect(byId.get(5)).toEqual(profile.nodes[4]!.callFrame);
    // The phases: the ranking is recall's, the chunk's and the wrapped module's top-level code module loading.
    const phases = Object.fromEntries(cliPhases(mapped).phases.map((p) => [p.phase, p.ms]));
    expect(phases['recall: ranking, excerpts, packing']).toBe(2);
    // node:fs called from a chunk's top level is charged to it as well.
    expect(phases['module loading (resolve, read, compile, link, top-level code)']).toBe(1);
    // Unmapped, the same profile has no recall phase at all.
    expect(cliPhases(profile).phases.map((p) => p.phase)).not.toContain('recall: ranking, excerpts, packing');
  });
});

describe('cliEntry', () => {
  it("says what bin/engram.js runs: the bundle unless it is missing or older than dist/'s modules", () => {
    const pkg = join(root, 'pkg');
    mkdirSync(join(pkg, 'dist', 'interfaces', 'cli'), { recursive: true });
    const modules = join(pkg, 'dist', 'interfaces', 'cli', 'main.js');
    writeFileSync(modules, '');
    expect(cliEntry(pkg)).toBe('modules');
    mkdirSync(join(pkg, 'dist', 'cli-bundle'));
    const bundle = join(pkg, 'dist', 'cli-bundle', 'main.cjs');
    writeFileSync(bundle, '');
    utimesSync(modules, 1000, 1000);
    utimesSync(bundle, 2000, 2000);
    expect(cliEntry(pkg)).toBe('bundle');
    utimesSync(modules, 3000, 3000);
    expect(cliEntry(pkg)).toBe('modules');
  });
});
