// Fails when the modules under the given folders import each other in a circle (issue #32). `npm run lint` runs it
// over src/. A circle means neither module can be read, tested or loaded without the other; in ES modules it also
// means one of them runs against the other's half-initialised bindings. Break one by moving what both share into a
// leaf module (a type, a helper), not by making one of the imports lazy: every import counts, type-only imports
// (`import type`), re-exports and `import()` included, since each one ties the modules together for a reader.
//
// Why not madge or dependency-cruiser: TypeScript is already here and resolves each import exactly as the build does
// (NodeNext, `.js` specifiers naming `.ts` files); the whole check is one walk and Tarjan's strongly connected
// components, where either package would add a resolver of its own and a few dozen dependencies.
//
// Usage: node scripts/import-cycles.mjs [folder ...] (default src). Test files (`*.test.ts`, `test-support.ts`) are
// left out: nothing imports them, so they cannot close a circle, and tests may import what they like.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const TEST_FILE = /(?:\.test\.ts|(?:^|\/)test-support\.ts)$/;

/** The `.ts` files (not `.d.ts`, not tests) below a folder. */
function sourceFiles(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(path));
    else if (path.endsWith('.ts') && !path.endsWith('.d.ts') && !TEST_FILE.test(path)) out.push(path);
  }
  return out;
}

/**
 * Every module specifier a file names: imports (type-only ones too), re-exports, `import()` and `import('...')`
 * types. TypeScript's own pre-processing scanner finds them without building the syntax tree.
 */
function specifiers(file) {
  return ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles.map((f) => f.fileName);
}

/**
 * The import graph of the files below `roots` (edges only between those files) and its circles: each strongly
 * connected component of more than one file, or a file importing itself, as its files (relative to `base`, sorted)
 * and the edges inside it (`a -> b`).
 */
export function findImportCycles(roots, base = process.cwd()) {
  const options = { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, allowJs: false };
  const host = ts.createCompilerHost(options);
  const cache = ts.createModuleResolutionCache(base, (name) => name, options);
  const files = roots.flatMap((root) => sourceFiles(resolve(base, root)));
  const known = new Set(files);
  const graph = new Map();
  for (const file of files) {
    const targets = new Set();
    for (const spec of specifiers(file)) {
      if (!spec.startsWith('.')) continue;
      const resolved = ts.resolveModuleName(spec, file, options, host, cache).resolvedModule?.resolvedFileName;
      if (resolved !== undefined && known.has(resolve(resolved))) targets.add(resolve(resolved));
    }
    graph.set(file, [...targets]);
  }

  // Tarjan's algorithm, iterative so a deep chain of imports cannot overflow the stack.
  let counter = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const cycles = [];
  for (const start of files) {
    if (index.has(start)) continue;
    const work = [{ node: start, next: 0 }];
    index.set(start, counter);
    low.set(start, counter++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const targets = graph.get(frame.node);
      if (frame.next < targets.length) {
        const target = targets[frame.next++];
        if (!index.has(target)) {
          index.set(target, counter);
          low.set(target, counter++);
          stack.push(target);
          onStack.add(target);
          work.push({ node: target, next: 0 });
        } else if (onStack.has(target)) {
          low.set(frame.node, Math.min(low.get(frame.node), index.get(target)));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1].node;
        low.set(parent, Math.min(low.get(parent), low.get(frame.node)));
      }
      if (low.get(frame.node) !== index.get(frame.node)) continue;
      const component = [];
      let member;
      do {
        member = stack.pop();
        onStack.delete(member);
        component.push(member);
      } while (member !== frame.node);
      const inside = new Set(component);
      const edges = component.flatMap((from) => graph.get(from).filter((to) => inside.has(to)).map((to) => `${relative(base, from)} -> ${relative(base, to)}`));
      if (component.length > 1 || edges.length > 0) cycles.push({ files: component.map((f) => relative(base, f)).sort(), edges: edges.sort() });
    }
  }
  return cycles;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const roots = process.argv.length > 2 ? process.argv.slice(2) : ['src'];
  const cycles = findImportCycles(roots);
  if (cycles.length === 0) {
    console.log(`import-cycles: no circular imports under ${roots.join(', ')}`);
  } else {
    console.error(`import-cycles: ${cycles.length} circle(s) of imports under ${roots.join(', ')}; move what the modules share into a leaf module:`);
    for (const cycle of cycles) {
      console.error(`\n  ${cycle.files.join(', ')}`);
      for (const edge of cycle.edges) console.error(`    ${edge}`);
    }
    process.exitCode = 1;
  }
}
