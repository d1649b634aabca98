import { connect, type Socket } from 'node:net';

/**
 * The resident hook process's protocol: over its Unix socket, one JSON message each way, each one line. Only Node's own
 * modules: the hook client loads this before any of Engram.
 */

/** A hook call: what its process would have had (arguments, working directory, stdin, the host's process ids). */
export interface RunRequest {
  op: 'run';
  /** The CLI arguments after `engram`: `hooks run <event> ...`. */
  argv: string[];
  cwd: string;
  stdin: string;
  hostPids: number[];
}

export type DaemonRequest = RunRequest | { op: 'status' } | { op: 'stop' };

/** `done`: the hook ran (its output and exit code). `retry`: run it in your own process (the store was replaced; the resident process is ending). */
export type RunResponse = { op: 'done'; code: number; stdout: string; stderr: string } | { op: 'retry'; reason: string };

export interface DaemonStatus {
  op: 'status';
  pid: number;
  socket: string;
  /** When it started listening, ISO 8601. */
  startedAt: string;
  /** Hook calls answered. */
  served: number;
  /** Calls running now. */
  active: number;
  idleMinutes: number;
  /** Engram's version, as `engram --version` prints it. */
  version: string;
}

/** Largest message either way: a hook's input may hold a pasted log (the CLI reads up to 32 MiB of stdin). */
export const MAX_MESSAGE_BYTES = 40 * 1024 * 1024;

/** Writes one message. */
export function send(socket: Socket, message: unknown): void {
  socket.write(`${JSON.stringify(message)}\n`);
}

/**
 * The first line the socket sends, parsed. Rejects on a closed socket, an error, a message over
 * {@link MAX_MESSAGE_BYTES}, JSON that does not parse, or no whole line within `timeoutMs`.
 */
export function receive<T>(socket: Socket, timeoutMs: number): Promise<T> {
  return new Promise((done, fail) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const timer = setTimeout(() => finish(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    const finish = (err: Error | undefined, value?: T): void => {
      clearTimeout(timer);
      socket.off('data', onData).off('end', onEnd).off('error', finish);
      if (err) fail(err);
      else done(value as T);
    };
    const onEnd = (): void => finish(new Error('the connection closed before a whole message'));
    const onData = (chunk: Buffer): void => {
      const newline = chunk.indexOf(10);
      chunks.push(newline < 0 ? chunk : chunk.subarray(0, newline));
      bytes += chunk.length;
      if (newline < 0 && bytes > MAX_MESSAGE_BYTES) return finish(new Error(`a message over ${MAX_MESSAGE_BYTES} bytes`));
      if (newline < 0) return;
      try {
        finish(undefined, JSON.parse(Buffer.concat(chunks).toString('utf8')) as T);
      } catch (err) {
        finish(err as Error);
      }
    };
    socket.on('data', onData).on('end', onEnd).on('error', finish);
  });
}

/** A connection to the socket at `path`; rejects when nobody answers (no file, a stale socket) or within `timeoutMs`. */
export function connectTo(path: string, timeoutMs: number): Promise<Socket> {
  return new Promise((done, fail) => {
    const socket = connect(path);
    const timer = setTimeout(() => {
      socket.destroy();
      fail(new Error('connect timed out'));
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      done(socket);
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      fail(err);
    });
  });
}
