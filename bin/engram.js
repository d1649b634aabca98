#!/usr/bin/env node
// Thin launcher: the CLI is compiled to dist/ by `npm ci` (the `prepare` script), and bundled into one CommonJS file,
// dist/cli-bundle/main.cjs (scripts/build-cli-bundle.mjs), which starts much faster than dist/'s ~300 ES modules,
// the more so with V8's code cache (dist/interfaces/cli/code-cache.js; issue #14). The bundle is used when present
// and not older than dist/ (a `tsc` build after it leaves it stale); else dist/'s modules.
import { statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const bundle = new URL('../dist/cli-bundle/main.cjs', import.meta.url);
const modules = new URL('../dist/interfaces/cli/main.js', import.meta.url);
let cli;
if (isFresh(bundle, modules)) {
  const { codeCacheFile, loadBundle } = await import(new URL('../dist/interfaces/cli/code-cache.js', import.meta.url).href);
  cli = loadBundle(fileURLToPath(bundle), codeCacheFile());
} else {
  cli = { exports: await import(modules.href), save() {} };
}

cli.exports.main(process.argv).then(
  (code) => {
    process.exitCode = code;
    cli.save();
  },
  (err) => {
    // main maps every error itself; reaching here is a bug (exit 1, as the documented table says).
    console.error(err);
    process.exitCode = 1;
  },
);

/** Whether `file` exists and is at least as new as `than` (npm packs every file with one mtime: equal is fresh). */
function isFresh(file, than) {
  const built = statSync(file, { throwIfNoEntry: false });
  const source = statSync(than, { throwIfNoEntry: false });
  return built !== undefined && (source === undefined || source.mtimeMs <= built.mtimeMs);
}
