import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * The directory of Engram's rebuildable caches (the word-vector tables, the token counter's rank table, hub
 * models): `$ENGRAM_CACHE_DIR`, else `$XDG_CACHE_HOME/engram`, else `~/.cache/engram`.
 */
export function defaultCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.ENGRAM_CACHE_DIR) return env.ENGRAM_CACHE_DIR;
  if (env.XDG_CACHE_HOME) return join(env.XDG_CACHE_HOME, 'engram');
  return join(homedir(), '.cache', 'engram');
}
