/**
 * The CLI runs from a bundle (dist/cli-bundle/, built by scripts/build-cli-bundle.mjs): a CPU profile of it names
 * the bundle's chunks, not the modules the phase rules of cli-start-profile.ts look for. This maps every frame in a
 * bundled file back through the chunk's source map to the module it came from, named as that module's file under
 * dist/ (`src/memory/recall.ts` -> `.../dist/memory/recall.js`; a package's file keeps its node_modules path), so
 * the same rules classify a bundled and an unbundled run alike.
 *
 * Module initialisation has no single frame in a bundle: a chunk's top-level code is one function at its line 0, and
 * a module esbuild initialises lazily is a function named after the module's path (`dist/engine.js`,
 * `node_modules/commander/index.js`). Both are renamed to the form the module-loading rule knows (an anonymous
 * function at line 0 of a file: URL).
 */
import { readFileSync, statSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { CpuProfile } from './cpu-profile.js';

type Frame = CpuProfile['nodes'][number]['callFrame'] & { columnNumber?: number };

/** Whether a frame's file is the CLI bundle (a file: URL, or a plain path: bin/engram.js compiles it with vm.Script under its path). */
export function isBundleUrl(url: string): boolean {
  return (url.startsWith('file:') || url.startsWith('/')) && url.includes('/dist/cli-bundle/');
}

/** A frame's file as a path (bundled frames carry a file: URL or a plain path). */
const pathOf = (url: string): string => (url.startsWith('file:') ? fileURLToPath(url) : url);

/** An esbuild module wrapper's name: the module's path relative to the package root. */
const MODULE_WRAPPER = /^(?:dist|src|node_modules)\/.+\.[cm]?[jt]s$/;

/** The profile with every bundled frame named after its source module (see the file comment); other frames as they are. */
export function unbundleFrames(profile: CpuProfile): CpuProfile {
  const maps = new Map<string, SourceMap | null>();
  const mapOf = (url: string): SourceMap | null => {
    if (!maps.has(url)) {
      try {
        maps.set(url, new SourceMap(JSON.parse(readFileSync(`${pathOf(url)}.map`, 'utf8')) as ConstructorParameters<typeof SourceMap>[0]));
      } catch {
        maps.set(url, null);
      }
    }
    return maps.get(url)!;
  };
  const nodes = profile.nodes.map((node) => {
    const frame = node.callFrame as Frame;
    if (!isBundleUrl(frame.url)) return node;
    const chunkDir = dirname(pathOf(frame.url));
    // The package root is two folders above dist/cli-bundle/.
    const root = resolve(chunkDir, '..', '..');
    if ((frame.functionName === '' && frame.lineNumber === 0) || MODULE_WRAPPER.test(frame.functionName)) {
      const module = pathToFileURL(MODULE_WRAPPER.test(frame.functionName) ? join(root, frame.functionName) : pathOf(frame.url)).href;
      return { ...node, callFrame: { ...frame, functionName: '', url: module, lineNumber: 0 } };
    }
    const entry = mapOf(frame.url)?.findEntry(frame.lineNumber, frame.columnNumber ?? 0) as { originalSource?: string; originalLine?: number; name?: string } | undefined;
    if (!entry?.originalSource) return node;
    const source = entry.originalSource.startsWith('file:') ? fileURLToPath(entry.originalSource) : resolve(chunkDir, entry.originalSource);
    const srcDir = join(root, 'src') + sep;
    const asDist = source.startsWith(srcDir) ? join(root, 'dist', source.slice(srcDir.length)).replace(/\.ts$/, '.js') : source;
    // esbuild renames a top-level function whose name another module also uses (count -> count2).
    const functionName = entry.name ?? frame.functionName.replace(/(?<=\D)\d$/, '');
    return { ...node, callFrame: { ...frame, functionName, url: pathToFileURL(asDist).href, lineNumber: entry.originalLine ?? frame.lineNumber } };
  });
  return { ...profile, nodes };
}

/** What `node bin/engram.js` runs in the package at `root` (the launcher's rule): the bundle when present and not older than dist/. */
export function cliEntry(root = process.cwd()): 'bundle' | 'modules' {
  const bundle = statSync(join(root, 'dist', 'cli-bundle', 'main.cjs'), { throwIfNoEntry: false });
  const modules = statSync(join(root, 'dist', 'interfaces', 'cli', 'main.js'), { throwIfNoEntry: false });
  return bundle !== undefined && (modules === undefined || modules.mtimeMs <= bundle.mtimeMs) ? 'bundle' : 'modules';
}
