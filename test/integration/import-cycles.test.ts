import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

/** scripts/import-cycles.mjs, the check `npm run lint` runs over src/ (issue #32). */
const SCRIPT = resolve('scripts/import-cycles.mjs');

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-cycles-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function write(files: Record<string, string>): void {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
}

function check(...roots: string[]): { status: number | null; output: string } {
  const run = spawnSync(process.execPath, [SCRIPT, ...roots], { cwd: dir, encoding: 'utf8' });
  return { status: run.status, output: run.stdout + run.stderr };
}

describe('scripts/import-cycles.mjs', () => {
  it('fails on a circle closed by a type-only import, naming its files and edges', () => {
    write({
      'src/a.ts': "import type { B } from './b.js';\nexport interface A { b: B }\n",
      'src/b.ts': "import { helper } from './sub/c.js';\nexport interface B { n: number }\nexport const x = helper();\n",
      'src/sub/c.ts': "import type { A } from '../a.js';\nexport function helper(): A | null { return null; }\n",
    });
    const { status, output } = check('src');
    expect(status).toBe(1);
    expect(output).toContain('1 circle(s)');
    expect(output).toContain('src/a.ts, src/b.ts, src/sub/c.ts');
    expect(output).toContain('src/sub/c.ts -> src/a.ts');
  });

  it('fails on a circle closed by a dynamic import() or an import type, which a lazy import does not hide', () => {
    write({
      'src/a.ts': "import { b } from './b.js';\nexport const a = () => b;\n",
      'src/b.ts': "export const b = async () => (await import('./a.js')).a;\n",
      'src/c.ts': "export type D = typeof import('./d.js');\n",
      'src/d.ts': "import type { D } from './c.js';\nexport const d: D | null = null;\n",
    });
    const { status, output } = check('src');
    expect(status).toBe(1);
    expect(output).toContain('2 circle(s)');
    expect(output).toContain('src/b.ts -> src/a.ts');
    expect(output).toContain('src/c.ts -> src/d.ts');
  });

  it('passes when modules share a leaf instead, and ignores test files, packages and other folders', () => {
    write({
      'src/leaf.ts': 'export interface Shared { n: number }\n',
      'src/a.ts': "import type { Shared } from './leaf.js';\nimport { b } from './b.js';\nimport { z } from 'zod';\nexport const a = (s: Shared) => [b, z, s];\n",
      'src/b.ts': "import type { Shared } from './leaf.js';\nexport const b = (s: Shared) => s;\n",
      'src/b.test.ts': "import { a } from './a.js';\nexport const t = a;\n",
      'bench/x.ts': "import { y } from './y.js';\nexport const x = y;\n",
      'bench/y.ts': "import { x } from './x.js';\nexport const y = x;\n",
    });
    const { status, output } = check('src');
    expect(output).toContain('no circular imports under src');
    expect(status).toBe(0);
  });

  it("finds no circle in Engram's own src/", () => {
    const run = spawnSync(process.execPath, [SCRIPT, 'src'], { encoding: 'utf8' });
    expect(run.stdout + run.stderr).toContain('no circular imports under src');
    expect(run.status).toBe(0);
  });
});
