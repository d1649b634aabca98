import { describe, expect, it } from 'vitest';
import { readModuleFacts, resolveRelative } from './code-imports.js';

describe('module facts (TypeScript parser)', () => {
  it('reads every import form with its line, and exported names', async () => {
    const text = [
      "import a, { b, c as d } from './one.js';",
      "import type { T } from '../two.js';",
      "export { e } from './three.js';",
      "export * from './four.js';",
      "import x = require('./five');",
      "const lazy = await import('./six.js');",
      "type Q = import('./seven.js').Q;",
      "const r = require('pkg');",
      'export function f() {}',
      'export const g = 1, h = 2;',
      'export default class {}',
      'export interface I {}',
    ].join('\n');
    const facts = await readModuleFacts('src/m.ts', text);
    expect(facts.imports.map((i) => [i.specifier, i.line, i.names])).toEqual([
      ['./one.js', 1, ['b', 'c']],
      ['../two.js', 2, ['T']],
      ['./three.js', 3, ['e']],
      ['./four.js', 4, []],
      ['./five', 5, []],
      ['./six.js', 6, []],
      ['./seven.js', 7, ['Q']],
      ['pkg', 8, []],
    ]);
    expect(facts.exports.map((e) => e.name)).toEqual(['e', 'f', 'g', 'h', 'default', 'I']);
  });

  it('reads JavaScript and JSX too', async () => {
    const facts = await readModuleFacts('web/app.jsx', "import React from 'react';\nimport { Panel } from './panel.jsx';\nexport const App = () => <Panel />;\n");
    expect(facts.imports.map((i) => i.specifier)).toEqual(['react', './panel.jsx']);
    expect(facts.exports.map((e) => e.name)).toEqual(['App']);
  });
});

describe('relative specifiers resolved among the tree files', () => {
  const files = new Set(['src/a.ts', 'src/b.tsx', 'src/lib/index.ts', 'src/c.js', 'src/d.mts', 'src/e.d.ts', 'top.ts']);
  it('finds .ts for .js, index files for folders, and nothing for packages or paths outside the tree', () => {
    expect(resolveRelative('src/x.ts', './a.js', files)).toBe('src/a.ts');
    expect(resolveRelative('src/x.ts', './b.js', files)).toBe('src/b.tsx');
    expect(resolveRelative('src/x.ts', './c.js', files)).toBe('src/c.js');
    expect(resolveRelative('src/x.ts', './d.mjs', files)).toBe('src/d.mts');
    expect(resolveRelative('src/x.ts', './e.js', files)).toBe('src/e.d.ts');
    expect(resolveRelative('src/x.ts', './lib', files)).toBe('src/lib/index.ts');
    expect(resolveRelative('src/x.ts', './a', files)).toBe('src/a.ts');
    expect(resolveRelative('src/x.ts', '../top.js', files)).toBe('top.ts');
    expect(resolveRelative('src/x.ts', '../../out.js', files)).toBeNull();
    expect(resolveRelative('src/x.ts', 'typescript', files)).toBeNull();
    expect(resolveRelative('src/x.ts', './missing.js', files)).toBeNull();
  });
});
