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
// - The bundle is made ASCII: the few other characters (in comments and a handful of regular expressions) become
//   \\uXXXX escapes, which mean the same there. Why: the loader decodes an ASCII file as Latin-1 (0.2 ms) instead of
//   UTF-8 (5-7 ms for 2.3 MB), and V8 keeps it as a one-byte string. Skipped (the file stays as esbuild wrote it, and
//   the loader decodes UTF-8) when a String.raw template holds such a character (its value would show the escape),
//   or the escaped text does not compile. Source maps are off by a few columns on the ~30 lines with an escape.
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
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Script } from 'node:vm';

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
  asciiOnly(join(buildDir, 'main.cjs'));
  rmSync(outdir, { recursive: true, force: true });
  renameSync(buildDir, outdir);
} finally {
  rmSync(buildDir, { recursive: true, force: true });
}

/** Rewrites `file` with every non-ASCII UTF-16 unit as a \\uXXXX escape, when that is safe (see the header). */
function asciiOnly(file) {
  const text = readFileSync(file, 'utf8');
  if (!/[^\x00-\x7f]/.test(text)) return;
  const ascii = text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  // A String.raw template shows its text as written: an escape there would change its value.
  const rawTemplates = [...text.matchAll(/String\.raw`/g)].map((m) => {
    let i = m.index + m[0].length;
    while (i < text.length && text[i] !== '`') i += text[i] === '\\' ? 2 : 1;
    return text.slice(m.index, i + 1);
  });
  if (rawTemplates.some((t) => /[^\x00-\x7f]/.test(t))) {
    console.warn('build-cli-bundle: a String.raw template holds non-ASCII text; the bundle is left as UTF-8');
    return;
  }
  try {
    new Script(ascii, { filename: file });
  } catch (err) {
    console.warn(`build-cli-bundle: the ASCII-escaped bundle does not compile (${err.message}); left as UTF-8`);
    return;
  }
  writeFileSync(file, ascii);
}
