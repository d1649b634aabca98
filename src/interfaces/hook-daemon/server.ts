import { lstatSync, unlinkSync, chmodSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { connectTo, receive, send, type DaemonRequest, type DaemonStatus, type RunRequest, type RunResponse } from './protocol.js';

/**
 * The resident hook process (address.ts): listens on its Unix socket and runs each hook call it is handed, with the
 * store opened once. Calls run one at a time, in the order they arrive: a hook imports its transcript in one
 * transaction on a connection of its own, across file reads, and a second call's write on the store's connection
 * would wait for that lock in SQLite's busy handler, which sleeps on this process's only thread, so the import could
 * not finish and the write failed after the busy timeout ("the store is locked", 1 hook in about 2,300 of the
 * carry-over bench's replay, two sessions at a time). Separate hook processes wait for each other's locks without
 * that; here a call waits for the one before it, typically tens of milliseconds.
 *
 * It ends when idle for its idle time, when asked (`engram hooks daemon --stop`), on SIGTERM/SIGINT, when its SQLite
 * file is removed or replaced (it would otherwise write to a file nobody reads), when its code is rebuilt or
 * upgraded, or when its socket is removed or taken over.
 */

export interface HookDaemonOptions {
  socketPath: string;
  idleMinutes: number;
  version: string;
  /** Runs one hook call: its exit code and output. */
  run(request: RunRequest): Promise<{ code: number; stdout: string; stderr: string }>;
  /**
   * Why this process must end, or undefined: its SQLite file was removed or replaced, or its code was rebuilt or
   * upgraded (hooks then reach another address). Checked before each call and every few seconds.
   */
  staleReason(): string | undefined;
}

/** How often an idle process checks its store and its idle time. */
const CHECK_EVERY_MS = 5000;
/** How long a request may take to arrive once connected. */
const REQUEST_TIMEOUT_MS = 30_000;

export class HookDaemon {
  private server: Server | undefined;
  private socketIno: number | undefined;
  private served = 0;
  private active = 0;
  private lastActivity = Date.now();
  /** The calls accepted so far, run one after another (see above). */
  private queue: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private readonly startedAt = new Date().toISOString();
  private ended!: () => void;
  /** Resolves when the process has stopped listening. */
  readonly closed = new Promise<void>((done) => (this.ended = done));

  constructor(private readonly o: HookDaemonOptions) {}

  /**
   * Starts listening. Resolves false, listening to nothing, when another process already answers on the socket (two
   * hooks that found none both started one); a socket nobody answers on is replaced.
   */
  async listen(): Promise<boolean> {
    try {
      await this.bind();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
      if (await isAnswering(this.o.socketPath)) return false;
      unlinkSync(this.o.socketPath);
      await this.bind();
    }
    chmodSync(this.o.socketPath, 0o600);
    this.socketIno = lstatSync(this.o.socketPath).ino;
    this.timer = setInterval(() => this.check(), Math.min(CHECK_EVERY_MS, this.o.idleMinutes * 60_000)).unref();
    return true;
  }

  /** Stops listening, lets running calls finish, and removes the socket if it is still this process's. */
  close(): void {
    if (!this.server) return;
    const server = this.server;
    this.server = undefined;
    clearInterval(this.timer);
    try {
      if (lstatSync(this.o.socketPath, { throwIfNoEntry: false })?.ino === this.socketIno) unlinkSync(this.o.socketPath);
    } catch {
      // Already gone.
    }
    server.close(() => this.ended());
  }

  private bind(): Promise<void> {
    return new Promise((done, fail) => {
      const server = createServer((socket) => void this.serve(socket));
      server.once('error', fail);
      server.listen(this.o.socketPath, () => {
        server.off('error', fail);
        this.server = server;
        done();
      });
    });
  }

  private check(): void {
    // Removed or replaced socket (a temporary-file cleaner, or another process took the name): no hook can reach this one.
    if (lstatSync(this.o.socketPath, { throwIfNoEntry: false })?.ino !== this.socketIno) this.close();
    else if (this.o.staleReason() !== undefined) this.close();
    else if (this.active === 0 && Date.now() - this.lastActivity > this.o.idleMinutes * 60_000) this.close();
  }

  private async serve(socket: Socket): Promise<void> {
    socket.on('error', () => {
      // The hook went away (killed by its host's timeout): nothing to answer.
    });
    let request: DaemonRequest;
    try {
      request = await receive<DaemonRequest>(socket, REQUEST_TIMEOUT_MS);
    } catch {
      socket.destroy();
      return;
    }
    this.lastActivity = Date.now();
    if (request.op === 'status') {
      const status: DaemonStatus = {
        op: 'status',
        pid: process.pid,
        socket: this.o.socketPath,
        startedAt: this.startedAt,
        served: this.served,
        active: this.active,
        idleMinutes: this.o.idleMinutes,
        version: this.o.version,
      };
      send(socket, status);
      socket.end();
      return;
    }
    if (request.op === 'stop') {
      send(socket, { op: 'stopping' });
      socket.end();
      this.close();
      return;
    }
    if (request.op !== 'run') {
      socket.destroy();
      return;
    }
    const stale = this.server ? this.o.staleReason() : 'it is ending';
    if (stale !== undefined) {
      const answer: RunResponse = { op: 'retry', reason: stale };
      send(socket, answer);
      socket.end();
      this.close();
      return;
    }
    this.active++;
    try {
      const result = await this.inTurn(() => this.o.run(request));
      const answer: RunResponse = { op: 'done', ...result };
      send(socket, answer);
    } catch (err) {
      const answer: RunResponse = { op: 'done', code: 1, stdout: '', stderr: `engram hooks run: ${(err as Error).stack ?? String(err)}\n` };
      send(socket, answer);
    } finally {
      this.active--;
      this.served++;
      this.lastActivity = Date.now();
      socket.end();
    }
  }

  /** Runs `call` once the calls accepted before it have finished (whether they succeeded or not). */
  private inTurn<T>(call: () => Promise<T>): Promise<T> {
    const run = this.queue.then(call, call);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

/** Whether a process answers on the socket. */
async function isAnswering(path: string): Promise<boolean> {
  try {
    (await connectTo(path, 1000)).destroy();
    return true;
  } catch {
    return false;
  }
}
