import type { Command } from 'commander';
import type { CliContext, GlobalOptions } from '../cli-context.js';
import type { Engram } from '../../../engine.js';
import { EngramError, isEngramError } from '../../../errors.js';
import type { AgentWithToken } from '../../../memory/agent-registry.js';
// The server is loaded when `serve` runs, not on every command (defaults.ts).
import { DEFAULT_HTTP_HOST, DEFAULT_HTTP_PORT, DEFAULT_MAX_BODY_BYTES } from '../../http/defaults.js';
import { EXIT } from '../exit-codes.js';
import type { Io } from '../output.js';
import type { HttpServerOptions } from '../../http/server.js';
import { defaultAllowedHosts } from '../../http/host-check.js';
import { parseInteger } from './recall.js';
import { tokenNotice } from './agent.js';
import { startConsolidationWorker } from '../consolidation-worker-option.js';
import { IdentifierCatchUpWorker } from '../../../memory/identifier-catch-up-worker.js';
import { isServeWorker, leavePrimary, parseWorkers, primaryGone, reportToPrimary, startServeWorkers } from '../serve-workers.js';

export interface ServeArgs {
  port?: string;
  host?: string;
  allowRemote?: boolean;
  cors?: string;
  /** `--allowed-hosts a,b` (else $ENGRAM_ALLOWED_HOSTS): names the server answers to besides loopback (host-check.ts). */
  allowedHosts?: string;
  /** `--allowed-origins a,b` (else $ENGRAM_ALLOWED_ORIGINS): browser origins allowed besides the server's own. */
  allowedOrigins?: string;
  maxBodyBytes?: string;
  json?: boolean;
  /** `--consolidate-idle <duration>`; false with --no-consolidate. */
  consolidate?: boolean;
  consolidateIdle?: string;
  /** `--artifacts-cold-after <age>`: the artifact lifecycle's cut-off (the consolidation worker runs it). */
  artifactsColdAfter?: string;
  /** `--workers <n>`: serve from n processes (serve-workers.ts). Default 1: this process serves. */
  workers?: string;
}

/** Name of the admin agent `engram serve` creates in a store that has no agent yet. */
export const BOOTSTRAP_ADMIN_NAME = 'admin';

/**
 * `engram serve`: the HTTP API and MCP over Streamable HTTP until SIGINT or SIGTERM, then a graceful
 * shutdown (requests in flight finish; the caller closes the store) and exit 0. Loopback only unless
 * `--allow-remote`. In a store without agents it creates an admin agent and prints its token once. With an
 * embedder (the CLI opens the engine with `--embedder`, default builtin, worker in the background) queued events
 * are embedded while serving; several servers on one PostgreSQL share the queue (jobs are leased).
 */
export async function serveCommand(mem: Engram, args: ServeArgs, io: Io, version: string): Promise<number> {
  const host = args.host ?? DEFAULT_HTTP_HOST;
  const port = args.port !== undefined ? parseInteger(args.port, 'port') : DEFAULT_HTTP_PORT;
  const maxBodyBytes = args.maxBodyBytes !== undefined ? parseInteger(args.maxBodyBytes, 'max-body-bytes') : DEFAULT_MAX_BODY_BYTES;
  const workers = parseWorkers(args.workers);
  const access = hostOptions(host, args);
  if (isServeWorker()) return serveAsWorker(mem, { host, port, version, maxBodyBytes, ...access, ...(args.cors !== undefined ? { corsOrigin: args.cors } : {}) }, io);
  if (!isLoopback(host)) {
    if (!args.allowRemote) {
      throw new EngramError(
        'INVALID_INPUT',
        `--host: ${host} is reachable from other machines; every agent token then guards the whole store over the network. Add --allow-remote if that is intended`,
        { field: 'host' },
      );
    }
    io.err(
      `engram serve: WARNING: listening on ${host}, reachable from other machines. Requests and tokens travel unencrypted: ` +
        'put a TLS-terminating proxy in front, and give each agent its own token.',
    );
  }

  const admin = await bootstrapAdmin(mem);
  const consolidation = args.consolidate === false ? undefined : await startConsolidationWorker(mem, args, io);
  // Appends leave the identifier index of full-text search to this catch-up (docs/recall.md, "Full-text at scale").
  const identifierCatchUp = new IdentifierCatchUpWorker((p, o) => mem.maintainTextIndex(p, o), {
    onError: (err) => io.err(`engram serve: identifier index catch-up failed: ${err instanceof Error ? err.message : String(err)}`),
  });
  identifierCatchUp.start();
  const { startHttpServer } = await import('../../http/server.js');
  const server = workers > 1 ? await startServeWorkers(workers, (line) => io.err(line)) : await startHttpServer(mem, {
    host,
    port,
    version,
    maxBodyBytes,
    // This process exists to serve: the adaptor's lighter Request/Response classes may replace the globals.
    overrideGlobalObjects: true,
    ...access,
    ...(args.cors !== undefined ? { corsOrigin: args.cors } : {}),
    log: (line) => io.err(line),
  });

  let stop: (signal: string) => void = () => {};
  const stopped = new Promise<string>((resolve) => {
    stop = resolve;
  });
  const onSigterm = () => stop('SIGTERM');
  const onSigint = () => stop('SIGINT');
  process.once('SIGTERM', onSigterm);
  process.once('SIGINT', onSigint);
  try {
    const embedding = `${embeddingNote(mem)}; ${consolidation?.note ?? 'consolidation: off'}`;
    if (args.json) {
      io.out(JSON.stringify({ url: server.url, mcp: `${server.url}/mcp`, admin: admin ?? null, embedder: mem.indexer?.embedder.name ?? null, workers }));
    } else {
      // One write: a reader that waits for the address line gets the agent line with it.
      io.out(
        [
          `Engram listening on ${server.url} (HTTP API under /v1, MCP at ${server.url}/mcp, dashboard at ${server.url}/; store: ${mem.store.name}; ${embedding}${workers > 1 ? `; ${workers} worker processes` : ''})`,
          admin
            ? `Created the admin agent "${admin.agent.name}". ${tokenNotice(admin.token)}`
            : 'Agents: engram agent list; add one with: engram agent add NAME --role ROLE [--parent NAME]',
        ].join('\n'),
      );
    }
    const signal = await stopped;
    io.err(`engram serve: ${signal}: finishing requests in flight...`);
    const isClean = 'stop' in server ? await server.stop() : (await server.close(), true);
    // No request is left that could queue an event: stop the worker (its batch in flight finishes) before the store closes.
    await mem.indexer?.stop();
    await consolidation?.worker.stop();
    await identifierCatchUp.stop();
    io.err('engram serve: stopped');
    return isClean ? EXIT.OK : EXIT.FAILURE;
  } finally {
    process.off('SIGTERM', onSigterm);
    process.off('SIGINT', onSigint);
  }
}

/**
 * One of the processes of `engram serve --workers N`: serves HTTP on the shared socket until SIGTERM or SIGINT (or
 * until the primary is gone), then shuts down gracefully. No admin bootstrap, consolidation or embedding worker
 * here: the primary runs those once for the store.
 */
async function serveAsWorker(mem: Engram, options: HttpServerOptions, io: Io): Promise<number> {
  const { startHttpServer } = await import('../../http/server.js');
  let server: Awaited<ReturnType<typeof startHttpServer>>;
  try {
    server = await startHttpServer(mem, { ...options, overrideGlobalObjects: true, log: (line) => io.err(line) });
  } catch (err) {
    reportToPrimary({ engramServe: 'failed', message: err instanceof Error ? err.message : String(err) });
    throw err;
  }
  let stop: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  void primaryGone().then(stop);
  try {
    reportToPrimary({ engramServe: 'listening', url: server.url, port: server.port });
    await stopped;
    await server.close();
    return EXIT.OK;
  } finally {
    process.off('SIGTERM', stop);
    process.off('SIGINT', stop);
    leavePrimary();
  }
}

/** Creates the admin agent when the store has no agent at all (so a fresh store can be used at once). */
async function bootstrapAdmin(mem: Engram): Promise<AgentWithToken | undefined> {
  if ((await mem.agents.list()).length > 0) return undefined;
  try {
    return await mem.agents.add(BOOTSTRAP_ADMIN_NAME, { role: 'admin', isAdmin: true });
  } catch (err) {
    // Another server on the same store created it first: its token was printed there.
    if (isEngramError(err, 'CONFLICT')) return undefined;
    throw err;
  }
}

/** What the startup line says about the embedding worker. */
function embeddingNote(mem: Engram): string {
  const status = mem.vectorStatus;
  if (!mem.indexer || !status) return 'embeddings: off';
  if (status.state === 'model-mismatch') {
    return `embeddings: paused, the store's vectors come from ${status.model.name}, not ${status.embedder.name} (run engram reindex)`;
  }
  return `embeddings: ${status.model.name}, in the background`;
}

/**
 * The Host and Origin allow-lists (host-check.ts) from the flags, else the environment. Loopback names stay allowed
 * when others are added, so local clients keep working behind a proxy's configuration.
 */
function hostOptions(host: string, args: ServeArgs): Pick<HttpServerOptions, 'allowedHosts' | 'allowedOrigins'> {
  const list = (flag: string | undefined, env: string | undefined): string[] | undefined => {
    const text = flag ?? env;
    if (text === undefined || text.trim() === '') return undefined;
    return text.split(',').map((s) => s.trim()).filter((s) => s !== '');
  };
  const hosts = list(args.allowedHosts, process.env.ENGRAM_ALLOWED_HOSTS);
  const origins = list(args.allowedOrigins, process.env.ENGRAM_ALLOWED_ORIGINS);
  return {
    ...(hosts !== undefined ? { allowedHosts: [...new Set([...defaultAllowedHosts(host), ...hosts])] } : {}),
    ...(origins !== undefined ? { allowedOrigins: origins } : {}),
  };
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}

/** `engram serve`. */
export function register(program: Command, context: CliContext): void {
  const { io } = context;
  program
    .command('serve')
    .description('serve the HTTP API (/v1) and MCP over Streamable HTTP (/mcp) to agents with bearer tokens')
    .option('-p, --port <n>', 'TCP port (default 7077; 0 picks a free one)')
    .option('--host <host>', 'interface to bind (default 127.0.0.1: this machine only)')
    .option('--allow-remote', 'allow a --host reachable from other machines')
    .option('--cors <origin>', 'allow browser requests from this origin (default: no CORS)')
    .option('--allowed-hosts <names>', 'comma-separated Host names to answer besides loopback, e.g. behind a proxy (default $ENGRAM_ALLOWED_HOSTS; * for any)')
    .option('--allowed-origins <origins>', 'comma-separated browser Origins allowed besides the server\'s own (default $ENGRAM_ALLOWED_ORIGINS)')
    .option('--max-body-bytes <n>', 'largest request body accepted (default 8 MiB)')
    .option('--consolidate-idle <duration>', 'summarize a session once idle this long: 90s, 15m (default), 2h; the model of --llm, else deterministic')
    .option('--artifacts-cold-after <age>', 'hourly, move artifacts older than this to the cold tier: 30d (default $ENGRAM_ARTIFACT_COLD_AFTER, else 30d)')
    .option('--no-consolidate', 'no consolidation worker')
    .option('--workers <n>', 'serve from n processes sharing the port (default 1); background work stays in this one')
    // The embedding worker runs in the background while serving (--embedder none turns it off).
    .action(context.withStore((m, args: ServeArgs & GlobalOptions) => serveCommand(m, args, io, context.version), true, () => (isServeWorker() ? 'foreground' : 'background')));
}
