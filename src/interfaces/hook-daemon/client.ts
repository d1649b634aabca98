import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Socket } from 'node:net';
import { parentProcessIds } from '../../util/process-parents.js';
import { hookDaemonAddress, parseHookArgv, type HookDaemonAddress } from './address.js';
import { connectTo, receive, send, type RunResponse } from './protocol.js';
import type { HookCall } from '../cli/cli-context.js';

/**
 * The hook side of the resident process (address.ts): bin/engram.js calls {@link tryHookDaemon} for `hooks run
 * <event>` before it loads the CLI. When the store's resident process answers, the hook prints its answer and exits:
 * Node's start and one round trip instead of loading Engram and opening the store. Otherwise the hook runs in its
 * own process as before and then starts the resident process, detached, for the next hook.
 *
 * Nothing here can lose a hook: the call is sent only once a connection is made, and a process that cannot run it
 * (its store was replaced) says so before doing anything, and the hook runs in its own process.
 */

/** How long a connection may take to open before the hook runs in its own process. */
const CONNECT_TIMEOUT_MS = 1000;
/** How long the hook waits for the answer (Claude Code's own hook timeout is 60 s; a summary by a model may take long). */
const ANSWER_TIMEOUT_MS = 10 * 60_000;

/**
 * `served`: the resident process ran the hook, with this exit code. Else run it in this process (`hookCall` when its
 * stdin was read already: cli-context.ts), then `startDaemon` for the next hook.
 */
export type DaemonAttempt = { served: true; code: number } | { served: false; hookCall?: HookCall; startDaemon?: () => void };

/**
 * Runs the hook `argv` (after `engram`) through the store's resident process when there is one. `binPath`:
 * bin/engram.js, which starts one.
 */
export async function tryHookDaemon(argv: readonly string[], binPath: string): Promise<DaemonAttempt> {
  const parsed = parseHookArgv(argv);
  if (!parsed) return { served: false };
  const cwd = process.cwd();
  const address = hookDaemonAddress({ store: parsed.store, env: process.env, cwd, binPath });
  if (!address) return { served: false };
  const startDaemon = (): void => startHookDaemon(address, binPath, cwd);
  // No socket: nobody listens; do not spend a connection attempt on it.
  if (!existsSync(address.socketPath) || process.stdin.isTTY) return { served: false, startDaemon };
  // The input first: the resident process waits only a while for a request once connected.
  const hookCall: HookCall = { stdin: await readStdin(), cwd, hostPids: parentProcessIds() };
  let socket: Socket;
  try {
    socket = await connectTo(address.socketPath, CONNECT_TIMEOUT_MS);
  } catch {
    // A socket left by a process that ended (killed, machine slept): this hook runs here, and a new process replaces it.
    return { served: false, hookCall, startDaemon };
  }
  try {
    send(socket, { op: 'run', argv: [...argv], ...hookCall });
    const answer = await receive<RunResponse>(socket, ANSWER_TIMEOUT_MS);
    if (answer.op === 'retry') return { served: false, hookCall, startDaemon };
    if (answer.stdout) process.stdout.write(answer.stdout);
    if (answer.stderr) process.stderr.write(answer.stderr);
    return { served: true, code: answer.code };
  } catch (err) {
    // The call was sent: running it again here could store its injection twice. Reported as a failed hook (exit 1), which the host passes over.
    process.stderr.write(`engram hooks run ${parsed.event}: the resident hook process (${address.socketPath}) did not answer: ${(err as Error).message}\n`);
    return { served: true, code: 1 };
  } finally {
    socket.destroy();
  }
}

/** Starts the resident process, detached from the hook (its own session, no inherited output): the hook exits at once. */
export function startHookDaemon(address: HookDaemonAddress, binPath: string, cwd: string): void {
  try {
    const child = spawn(process.execPath, [binPath, ...address.daemonArgs], { cwd, env: process.env, detached: true, stdio: 'ignore' });
    child.on('error', () => {
      // Not started: the next hook runs in its own process again.
    });
    child.unref();
  } catch {
    // As above.
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
