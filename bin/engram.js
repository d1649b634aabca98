#!/usr/bin/env node
// Thin launcher: the CLI is compiled to dist/ (by `npm ci` here, the `prepare` script; shipped built in the npm
// package), and bundled into one CommonJS file, dist/cli-bundle/main.cjs (scripts/build-cli-bundle.mjs), which starts
// much faster than dist/'s ~300 ES modules, the more so with a code cache (dist/interfaces/cli/code-cache.js: a
// hand-written V8 cache, which also beat Node 24's own compile cache; issues #14, #30). The bundle is used when
// present and not stale (see isFresh); else dist/'s modules.
import { statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// A hook (`hooks run <event>`, what Claude Code and Codex run at every turn) first tries the store's resident hook
// process (dist/interfaces/hook-daemon/): Node's start and one round trip instead of loading Engram and opening the
// store. Without one the hook runs here, then starts one, detached, for the next hook (issue #29).
let daemon = { served: false };
if (process.argv.includes('hooks') && process.argv.includes('run')) {
  try {
    const client = await import(new URL('../dist/interfaces/hook-daemon/client.js', import.meta.url).href);
    daemon = await client.tryHookDaemon(process.argv.slice(2), fileURLToPath(import.meta.url));
  } catch {
    // No client in this dist/ (an older build): the hook runs here.
  }
}
if (daemon.served) process.exitCode = daemon.code;
else await runHere();

/** The CLI in this process: its bundle when fresh (see isFresh), else dist/'s modules. */
async function runHere() {
  const bundle = new URL('../dist/cli-bundle/main.cjs', import.meta.url);
  const modules = new URL('../dist/interfaces/cli/main.js', import.meta.url);
  const sources = new URL('../src', import.meta.url);
  let cli;
  if (isFresh(bundle, modules, sources)) {
    const { codeCacheFile, codeCacheKind, loadBundle, loadBundleWithNodeCache, nodeCompileCacheDir } = await import(
      new URL('../dist/interfaces/cli/code-cache.js', import.meta.url).href
    );
    // The hand-written code cache; Node's own (22.1+) with ENGRAM_CODE_CACHE=node, none with ENGRAM_CODE_CACHE=0.
    cli =
      codeCacheKind() === 'node'
        ? loadBundleWithNodeCache(fileURLToPath(bundle), nodeCompileCacheDir(), codeCacheFile())
        : loadBundle(fileURLToPath(bundle), codeCacheFile());
  } else {
    cli = { exports: await import(modules.href), save() {} };
  }

  const options = daemon.hookCall ? { hookCall: daemon.hookCall } : {};
  await cli.exports.main(process.argv, undefined, options).then(
    (code) => {
      process.exitCode = code;
      cli.save();
      if (code === 0) daemon.startDaemon?.();
    },
    (err) => {
      // main maps every error itself; reaching here is a bug (exit 1, as the documented table says).
      console.error(err);
      process.exitCode = 1;
    },
  );
}

/**
 * Whether the bundle `file` exists and is not stale. Only a checkout with its sources (`sourceDir`) can rebuild dist/
 * without the bundle (a `tsc` run): there the bundle must be at least as new as `than`. The npm package ships no
 * sources and its dist/ only as built, and npm gives each file it unpacks the time it wrote it, in the archive's order,
 * so there the bundle is used whenever it is there.
 */
function isFresh(file, than, sourceDir) {
  const built = statSync(file, { throwIfNoEntry: false });
  if (built === undefined) return false;
  if (statSync(sourceDir, { throwIfNoEntry: false }) === undefined) return true;
  const source = statSync(than, { throwIfNoEntry: false });
  return source === undefined || source.mtimeMs <= built.mtimeMs;
}
