import type { Command } from 'commander';
import { statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { EngramError } from '../../../errors.js';
import { codeStamp, DEFAULT_IDLE_MINUTES, HOOK_DAEMON_ENV, HOOK_DAEMON_IDLE_ENV, hookDaemonAddress, parseHookArgv, realBinPath } from '../../hook-daemon/address.js';
import { connectTo, receive, send, type DaemonStatus } from '../../hook-daemon/protocol.js';
import { HookDaemon } from '../../hook-daemon/server.js';
import type { CliContext, GlobalOptions } from '../cli-context.js';
import { EXIT } from '../exit-codes.js';
import type { Io } from '../output.js';
import { printJson } from '../output.js';
import { parseInteger } from './recall.js';

/**
 * `engram hooks daemon`: the resident process that runs a store's hook calls (interfaces/hook-daemon/). A hook
 * starts it, detached, after running in its own process (bin/engram.js); `--status` and `--stop` ask the one serving
 * the store these options name, as a hook with them would reach it.
 */
export interface HookDaemonArgs extends GlobalOptions {
  /** The socket to listen on (a hook passes its own address); default the address of these options. */
  socket?: string;
  idleMinutes?: string;
  status?: boolean;
  stop?: boolean;
}

/** bin/engram.js of this package, the launcher hook commands run (as install writes them). */
const BIN_PATH = fileURLToPath(new URL('../../../../bin/engram.js', import.meta.url));
/** How long `--status` and `--stop` wait for an answer. */
const ASK_TIMEOUT_MS = 5000;

export async function hookDaemonCommand(args: HookDaemonArgs, io: Io, context: CliContext): Promise<number> {
  if (args.status && args.stop) throw new EngramError('INVALID_INPUT', '--status, --stop: give one', { field: 'stop' });
  const socketPath = args.socket ?? defaultSocket(args);
  if (args.status || args.stop) return ask(socketPath, args.stop ? 'stop' : 'status', args, io);
  const idleMinutes = idleTime(args.idleMinutes);
  const mem = await context.openStore(args, { create: true });
  const db = context.storeLocation(args).db;
  const ino = db !== undefined ? statSync(db).ino : undefined;
  const bin = realBinPath(BIN_PATH);
  const code = codeStamp(bin);
  const daemon = new HookDaemon({
    socketPath,
    idleMinutes,
    version: context.version,
    staleReason: () => {
      if (ino !== undefined && statSync(db!, { throwIfNoEntry: false })?.ino !== ino) return `its store ${db} was removed or replaced`;
      return codeStamp(bin) !== code ? "Engram's code was rebuilt or upgraded" : undefined;
    },
    run: async (request) => {
      // Only the hook calls a hook process would send: this socket runs nothing else.
      if (!parseHookArgv(request.argv)) return { code: EXIT.FAILURE, stdout: '', stderr: `engram hooks daemon: not a hook call: ${request.argv.slice(0, 3).join(' ')}\n` };
      const out: string[] = [];
      const err: string[] = [];
      const capture: Io = { out: (t) => out.push(t.endsWith('\n') ? t : `${t}\n`), err: (t) => err.push(t.endsWith('\n') ? t : `${t}\n`), isErrTty: false };
      const code = await context.run([process.execPath, BIN_PATH, ...request.argv], capture, { store: mem, hookCall: { stdin: request.stdin, cwd: request.cwd, hostPids: request.hostPids } });
      return { code, stdout: out.join(''), stderr: err.join('') };
    },
  });
  if (!(await daemon.listen())) {
    io.err(`engram hooks daemon: another process already serves ${socketPath}`);
    return EXIT.OK;
  }
  const stop = (): void => daemon.close();
  process.once('SIGTERM', stop).once('SIGINT', stop);
  if (args.json) printJson(io, { listening: socketPath, pid: process.pid, idleMinutes });
  else io.err(`engram hooks daemon: serving hooks on ${socketPath} (pid ${process.pid}; ends after ${idleMinutes} idle minutes)`);
  await daemon.closed;
  process.off('SIGTERM', stop).off('SIGINT', stop);
  return EXIT.OK;
}

/** The socket a hook with these store options reaches (address.ts). */
function defaultSocket(args: HookDaemonArgs): string {
  const address = hookDaemonAddress({
    store: { ...(args.db ? { db: args.db } : {}), ...(args.pg ? { pg: args.pg } : {}), ...(args.embedder ? { embedder: args.embedder } : {}), ...(args.repo ? { repo: args.repo } : {}), redact: args.redact !== false },
    env: process.env,
    cwd: process.cwd(),
    binPath: BIN_PATH,
  });
  if (!address) {
    throw new EngramError('INVALID_INPUT', `hooks daemon: no resident process here ($${HOOK_DAEMON_ENV} is off, no Unix sockets, or the socket folder is not this user's alone)`, { field: HOOK_DAEMON_ENV });
  }
  return address.socketPath;
}

function idleTime(flag: string | undefined): number {
  const raw = flag ?? process.env[HOOK_DAEMON_IDLE_ENV];
  if (raw === undefined || raw === '') return DEFAULT_IDLE_MINUTES;
  const n = parseInteger(raw, flag !== undefined ? 'idle-minutes' : HOOK_DAEMON_IDLE_ENV);
  if (n < 1) throw new EngramError('INVALID_INPUT', `${flag !== undefined ? 'idle-minutes' : HOOK_DAEMON_IDLE_ENV}: ${n}; give at least 1 minute`, { field: 'idle-minutes' });
  return n;
}

/** `--status` / `--stop`: asks the process on the socket; none running is said, not an error. */
async function ask(socketPath: string, op: 'status' | 'stop', args: HookDaemonArgs, io: Io): Promise<number> {
  let answer: DaemonStatus | { op: 'stopping' } | undefined;
  try {
    const socket = await connectTo(socketPath, ASK_TIMEOUT_MS);
    try {
      send(socket, { op });
      answer = await receive<DaemonStatus | { op: 'stopping' }>(socket, ASK_TIMEOUT_MS);
    } finally {
      socket.destroy();
    }
  } catch {
    answer = undefined;
  }
  if (args.json) printJson(io, answer ? { running: true, ...answer } : { running: false, socket: socketPath });
  else if (!answer) io.out(`no resident hook process for this store (${socketPath}); the next hook starts one`);
  else if (answer.op === 'stopping') io.out(`stopped the resident hook process on ${socketPath}`);
  else io.out(`resident hook process ${answer.pid} (engram ${answer.version}) on ${answer.socket}: since ${answer.startedAt}, ${answer.served} hook calls served, ${answer.active} running; ends after ${answer.idleMinutes} idle minutes`);
  return EXIT.OK;
}

/** `engram hooks daemon`. */
export function registerHookDaemon(hooks: Command, context: CliContext): void {
  hooks
    .command('daemon')
    .description(
      `the resident process that runs this store's hooks without starting Engram each time (hooks start it; ends when idle; $${HOOK_DAEMON_ENV}=off runs every hook in its own process)`,
    )
    .option('--socket <path>', 'the Unix socket to listen on (default: the one a hook with these store options reaches)')
    .option('--idle-minutes <n>', `exit after this many minutes without a hook (default $${HOOK_DAEMON_IDLE_ENV}, else ${DEFAULT_IDLE_MINUTES})`)
    .option('--status', 'say whether one serves this store, since when and how many hook calls')
    .option('--stop', 'ask the one serving this store to exit')
    .action(context.withoutStore((args: HookDaemonArgs) => hookDaemonCommand(args, context.io, context)));
}
