import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { EngramError } from '../../errors.js';

/**
 * One long-lived `git cat-file --batch --follow-symlinks` child per repository. Requests are object names
 * written one per line; git answers them strictly in order, so requests are pipelined and matched to
 * answers first-in first-out. Measured here (bench/results/bus-deref.md) a file read this way takes about
 * 0.1 ms at p50, where spawning `git show` per read takes about 5 ms.
 *
 * If the child dies with requests outstanding, a new child is started once and the outstanding requests are
 * sent again, in order; if that child also dies before answering anything, they fail with STORAGE_ERROR.
 * An idle child does not keep Node's event loop alive, so a forgotten `close()` cannot hang a CLI.
 */

export type GitObjectType = 'blob' | 'tree' | 'commit' | 'tag';

export type CatFileAnswer =
  | {
      kind: 'object';
      oid: string;
      type: GitObjectType;
      size: number;
      /** The object's bytes; absent when `size` exceeds `maxContentBytes` (they were skipped, not buffered). */
      content?: Buffer;
    }
  | { kind: 'missing' }
  | { kind: 'ambiguous' }
  /** `--follow-symlinks`: a symlink on the path points outside the tree; `target` as git prints it. */
  | { kind: 'symlink'; target: string }
  /** `--follow-symlinks`: the link's target does not exist / links loop / a file is used as a directory. */
  | { kind: 'dangling' | 'loop' | 'notdir'; name: string };

export interface GitCatFileOptions {
  /** The repository (work tree or bare) the child runs in. */
  repository: string;
  /** Default `git`. */
  gitBinary?: string;
  /** Objects larger than this are answered without content. Default 32 MiB. */
  maxContentBytes?: number;
  /** A child that makes no progress this long with requests outstanding is killed; they fail. Default 10 s. */
  requestTimeoutMs?: number;
  /** Replaces the spawned command, for tests of the failure paths. */
  spawnCommand?: { command: string; args: string[] };
}

interface PendingRequest {
  name: string;
  resolve: (answer: CatFileAnswer) => void;
  reject: (err: unknown) => void;
}

type Body = {
  header: { kind: 'object'; oid: string; type: GitObjectType; size: number } | { kind: 'symlink' | 'dangling' | 'loop' | 'notdir'; size: number };
  /** Bytes of content still to read, then the terminating LF. */
  remaining: number;
  buffer?: Buffer;
  filled: number;
};

export const DEFAULT_MAX_CONTENT_BYTES = 32 * 1024 * 1024;
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

const OBJECT_HEADER = /^([0-9a-f]{40}|[0-9a-f]{64}) (blob|tree|commit|tag) (\d+)$/;
const SYMLINK_HEADER = /^(symlink|dangling|loop|notdir) (\d+)$/;

export class GitCatFile {
  private child: ChildProcessWithoutNullStreams | undefined;
  private readonly queue: PendingRequest[] = [];
  private headerParts: Buffer[] = [];
  private body: Body | undefined;
  private stderrTail = '';
  /** Restarts since the last answer: a second death without progress fails the outstanding requests. */
  private restartsWithoutProgress = 0;
  private watchdog: NodeJS.Timeout | undefined;
  private isClosed = false;
  private closing: Promise<void> | undefined;
  private readonly maxContentBytes: number;
  private readonly requestTimeoutMs: number;

  constructor(private readonly options: GitCatFileOptions) {
    this.maxContentBytes = options.maxContentBytes ?? DEFAULT_MAX_CONTENT_BYTES;
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  }

  /** The running child's process id (diagnostics and tests); undefined before the first request. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Looks up one object name (`<commit>:<path>`, `<sha>^{commit}`, an oid). Names must not contain newlines. */
  request(name: string): Promise<CatFileAnswer> {
    if (this.isClosed) return Promise.reject(new EngramError('STORAGE_ERROR', `git cat-file for ${this.options.repository} is closed`));
    if (/[\n\r\u0000]/.test(name)) return Promise.reject(new EngramError('INTERNAL', 'object name contains a line break or NUL'));
    return new Promise<CatFileAnswer>((resolve, reject) => {
      this.queue.push({ name, resolve, reject });
      const child = this.child ?? this.start();
      if (this.queue.length === 1) this.setActive(true);
      child.stdin.write(`${name}\n`);
    });
  }

  /** Ends the child after it answers what was already asked. Idempotent. */
  close(): Promise<void> {
    this.isClosed = true;
    this.closing ??= new Promise<void>((resolve) => {
      const child = this.child;
      if (!child || child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('close', () => resolve());
      this.setActive(true);
      child.stdin.end();
    });
    return this.closing;
  }

  private start(): ChildProcessWithoutNullStreams {
    const { command, args } = this.options.spawnCommand ?? {
      command: this.options.gitBinary ?? 'git',
      args: ['-C', this.options.repository, 'cat-file', '--batch', '--follow-symlinks'],
    };
    const child = spawn(command, args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: {
        ...process.env,
        // Never ask for credentials or fetch missing objects of a partial clone: a deref is a local read.
        GIT_TERMINAL_PROMPT: '0',
        GIT_NO_LAZY_FETCH: '1',
        LC_ALL: 'C',
      },
    });
    this.child = child;
    this.headerParts = [];
    this.body = undefined;
    child.stdout.on('data', (chunk: Buffer) => this.onData(child, chunk));
    child.stderr.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-2000);
    });
    // EPIPE when the child died between two writes; the 'close' handler deals with the death.
    child.stdin.on('error', () => {});
    let isDead = false;
    const onDeath = (reason: string): void => {
      if (isDead) return;
      isDead = true;
      this.onChildDeath(child, reason);
    };
    child.on('error', (err) => onDeath(err.message));
    child.on('close', (code, signal) => onDeath(signal ? `killed by ${signal}` : `exited with code ${String(code)}`));
    return child;
  }

  private onData(child: ChildProcessWithoutNullStreams, chunk: Buffer): void {
    if (child !== this.child) return;
    this.armWatchdog();
    let offset = 0;
    while (offset < chunk.length) {
      const body = this.body;
      if (body) {
        const take = Math.min(body.remaining, chunk.length - offset);
        const contentLeft = Math.max(0, body.remaining - 1);
        if (body.buffer) chunk.copy(body.buffer, body.filled, offset, offset + Math.min(take, contentLeft));
        body.filled += Math.min(take, contentLeft);
        body.remaining -= take;
        offset += take;
        if (body.remaining === 0) {
          this.body = undefined;
          this.answer(bodyAnswer(body));
        }
        continue;
      }
      const nl = chunk.indexOf(10, offset);
      if (nl < 0) {
        this.headerParts.push(chunk.subarray(offset));
        break;
      }
      this.headerParts.push(chunk.subarray(offset, nl));
      const line = Buffer.concat(this.headerParts).toString('utf8');
      this.headerParts = [];
      offset = nl + 1;
      if (!this.onHeader(line)) {
        // Out of step with git: nothing later on this stream can be trusted. Kill; 'close' restarts.
        child.kill('SIGKILL');
        return;
      }
    }
  }

  /** Handles one header line; false when it does not fit the protocol. */
  private onHeader(line: string): boolean {
    const head = this.queue[0];
    if (!head) return false;
    if (line === `${head.name} missing` || line === `${head.name} ambiguous`) {
      this.answer({ kind: line.endsWith(' missing') ? 'missing' : 'ambiguous' });
      return true;
    }
    const object = OBJECT_HEADER.exec(line);
    if (object) {
      const size = Number(object[3]);
      this.body = {
        header: { kind: 'object', oid: object[1]!, type: object[2] as GitObjectType, size },
        remaining: size + 1,
        filled: 0,
        ...(size <= this.maxContentBytes ? { buffer: Buffer.allocUnsafe(size) } : {}),
      };
      return true;
    }
    const link = SYMLINK_HEADER.exec(line);
    if (link) {
      const size = Number(link[2]);
      if (size > 64 * 1024) return false;
      this.body = { header: { kind: link[1] as 'symlink', size }, remaining: size + 1, filled: 0, buffer: Buffer.allocUnsafe(size) };
      return true;
    }
    return false;
  }

  private answer(answer: CatFileAnswer): void {
    const head = this.queue.shift();
    this.restartsWithoutProgress = 0;
    if (this.queue.length === 0) this.setActive(false);
    head?.resolve(answer);
  }

  private onChildDeath(child: ChildProcessWithoutNullStreams, reason: string): void {
    if (child !== this.child) return;
    this.child = undefined;
    this.clearWatchdog();
    if (this.queue.length === 0) return;
    if (!this.isClosed && this.restartsWithoutProgress < 1) {
      this.restartsWithoutProgress++;
      const next = this.start();
      this.setActive(true);
      for (const pending of this.queue) next.stdin.write(`${pending.name}\n`);
      return;
    }
    this.restartsWithoutProgress = 0;
    this.failAll(
      new EngramError('STORAGE_ERROR', `git cat-file in ${this.options.repository} ${reason}${this.stderrTail ? `: ${this.stderrTail.trim()}` : ''}`, {
        repository: this.options.repository,
      }),
    );
  }

  private failAll(err: EngramError): void {
    const pending = this.queue.splice(0);
    this.setActive(false);
    for (const p of pending) p.reject(err);
  }

  private armWatchdog(): void {
    this.clearWatchdog();
    if (this.queue.length === 0) return;
    this.watchdog = setTimeout(() => {
      const child = this.child;
      this.child = undefined;
      this.failAll(
        new EngramError('STORAGE_ERROR', `git cat-file in ${this.options.repository} answered nothing for ${this.requestTimeoutMs} ms`, {
          repository: this.options.repository,
          reason: 'timeout',
        }),
      );
      child?.kill('SIGKILL');
    }, this.requestTimeoutMs);
  }

  private clearWatchdog(): void {
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = undefined;
  }

  /** Holds the event loop open only while answers are awaited. */
  private setActive(isActive: boolean): void {
    const child = this.child;
    if (isActive) this.armWatchdog();
    else this.clearWatchdog();
    if (!child) return;
    for (const handle of [child, child.stdin, child.stdout, child.stderr] as Array<{ ref(): void; unref(): void }>) {
      if (isActive) handle.ref();
      else handle.unref();
    }
  }
}

function bodyAnswer(body: Body): CatFileAnswer {
  const h = body.header;
  if (h.kind === 'object') return { kind: 'object', oid: h.oid, type: h.type, size: h.size, ...(body.buffer ? { content: body.buffer } : {}) };
  const text = body.buffer!.toString('utf8');
  return h.kind === 'symlink' ? { kind: 'symlink', target: text } : { kind: h.kind, name: text };
}
