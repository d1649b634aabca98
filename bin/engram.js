#!/usr/bin/env node
// Thin launcher: the CLI is compiled to dist/ by `npm ci` (the `prepare` script), and bundled into dist/cli-bundle/
// (scripts/build-cli-bundle.mjs): a few files load much faster than dist/'s ~300 modules (issue #14). The bundle is
// used when present and not older than dist/ (a `tsc` build after it leaves it stale); else dist/'s modules.
import { statSync } from 'node:fs';

const bundle = new URL('../dist/cli-bundle/main.js', import.meta.url);
const modules = new URL('../dist/interfaces/cli/main.js', import.meta.url);
const { main } = await import(isFresh(bundle, modules) ? bundle.href : modules.href);

main(process.argv).then(
  (code) => {
    process.exitCode = code;
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
