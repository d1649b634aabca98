// Bundles the built CLI (dist/interfaces/cli/main.js and what it imports) into one CommonJS file,
// dist/cli-bundle/main.cjs, which bin/engram.js loads with V8's code cache (src/interfaces/cli/code-cache.ts) when it
// is present and not older than dist/. Why: a CLI recall loaded ~300 ES modules (Engram's own ~190, zod's ~95), and
// resolving, reading, compiling and linking them one by one took about half of its start on a 1M-event store
// (issue #14, bench/results/scale.md "CLI start to first recall result"); one file with its compiled code cached
// skips all of that but the cache read. Run by `npm run build` after tsc (and by test/global-setup.ts), from dist/'s
// JavaScript, so the bundle runs the same code as dist/.
//
// - CommonJS, one file: Node 20 caches compiled code only through `vm.Script` (`cachedData`), which runs a script,
//   not ES modules. Each command's own modules (serve's HTTP stack, hooks, bench) still run only when that command
//   imports them (esbuild wraps every module in an init function); with the code cache their parse costs nothing.
// - `import()` becomes `require()` (`supported: { 'dynamic-import': false }`): a `vm.Script` cannot run `import()`
//   without an experimental flag, and every package the CLI imports has a CommonJS entry point (so the CLI loads one
//   copy of each, the CommonJS one, where the bundle's static imports already `require` it).
// - Packages with native code, optional drivers or large lazily loaded code stay external (loaded from
//   node_modules as before); the small pure-JavaScript ones the CLI loads on most commands are bundled.
// - zod's `locales` namespace (its ~50 languages' error messages, ~370 KB, 40 % of zod's bundled code) is bundled as
//   English only: `import { z } from 'zod'` is a namespace esbuild cannot tree-shake, so every locale was compiled on
//   every start, while Engram only uses zod's default English messages (schemas.js imports en.js itself and
//   configures it; the stub keeps `z.locales.en`). Packages loaded from node_modules keep their own full zod.
// - `import.meta.url` in a bundled module is rewritten to the URL that module has in dist/, so paths it resolves
//   relative to itself (package.json, bin/engram.js, the dashboard's files, createRequire) are the same (the
//   bundle's own URL, which CommonJS lacks, comes from `__filename`).
import { build } from 'esbuild';
import { existsSync, renameSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const outdir = join(dist, 'cli-bundle');
// Built beside it (same depth, so every relative path is the same) and renamed into place: a CLI starting meanwhile
// sees the old bundle or none (and then runs dist/'s modules), never a half-written one.
const buildDir = join(dist, `.cli-bundle-${process.pid}`);
const entry = join(dist, 'interfaces', 'cli', 'main.js');

/** Pure-JavaScript packages bundled into the CLI; every other package is loaded from node_modules at run time. */
const BUNDLED_PACKAGES = new Set(['zod', 'commander', 'jsonrepair', 'ulid', 'stemmer']);

const packageName = (spec) => (spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);

/** Bare imports of packages not in BUNDLED_PACKAGES stay imports. */
const externalPackages = {
  name: 'external-packages',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith('node:')) return { path: args.path, external: true };
      return BUNDLED_PACKAGES.has(packageName(args.path)) ? undefined : { path: args.path, external: true };
    });
  },
};

/** zod/v4/locales/index.js as English only (see the header); any other `z.locales.xx` would be undefined. */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(b) {
    b.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, (args) => ({
      contents: 'export { default as en } from "./en.js";\n',
      resolveDir: dirname(args.path),
      loader: 'js',
    }));
  },
};

/** `import.meta.url` of a dist/ module, as seen from a chunk in outdir. */
const distImportMetaUrl = {
  name: 'dist-import-meta-url',
  setup(b) {
    b.onLoad({ filter: /\.js$/ }, async (args) => {
      if (!args.path.startsWith(dist + sep)) return undefined;
      const source = await readFile(args.path, 'utf8');
      if (!source.includes('import.meta.url')) return undefined;
      const rel = relative(buildDir, args.path).split(sep).join('/');
      return { contents: source.replaceAll('import.meta.url', `new URL(${JSON.stringify(rel)}, import.meta.url).href`), loader: 'js' };
    });
  },
};

if (!existsSync(entry)) {
  console.error(`build-cli-bundle: ${relative(root, entry)} is missing; run tsc -p tsconfig.build.json first`);
  process.exit(1);
}
rmSync(buildDir, { recursive: true, force: true });
try {
  await build({
    entryPoints: { main: entry },
    outdir: buildDir,
    outExtension: { '.js': '.cjs' },
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    supported: { 'dynamic-import': false },
    sourcemap: 'linked',
    legalComments: 'none',
    define: { 'import.meta.url': '__engramBundleUrl' },
    // "use strict" first: dist/'s modules are ES modules, always strict, and esbuild's own directive comes after the
    // banner, where it is a plain expression (without this the bundle would run in sloppy mode).
    banner: { js: "'use strict';\nconst __engramBundleUrl = require('node:url').pathToFileURL(__filename).href;" },
    logLevel: 'warning',
    plugins: [externalPackages, zodEnglishOnly, distImportMetaUrl],
  });
  rmSync(outdir, { recursive: true, force: true });
  renameSync(buildDir, outdir);
} finally {
  rmSync(buildDir, { recursive: true, force: true });
}
