import type { IdentifierCatchUpProgress } from './identifier-catch-up.js';

/** How often the worker looks for events the identifier index has not caught up on. */
export const CATCH_UP_POLL_MS = 1_000;
/** Most events one round indexes; the next round follows at once while more wait. */
const ROUND_EVENTS = 5_000;
/** Events per transaction in a server: each page is one synchronous SQLite transaction, which requests wait behind. */
const WORKER_PAGE_EVENTS = 200;

export interface IdentifierCatchUpWorkerOptions {
  pollMs?: number;
  onError?: (err: unknown) => void;
}

/**
 * Keeps the identifier index of full-text search caught up while a server runs (`engram serve`): appends do not
 * write it, so every `pollMs` this indexes what was stored since, in small pages, a round at a time (rounds never
 * overlap). Searches meanwhile cover the events still waiting through the plain full-text phrase.
 * `catchUp` is `mem.maintainTextIndex` (the engine's catch-up), passed in so this holds no store of its own.
 */
export class IdentifierCatchUpWorker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private isStopped = false;
  /** Events indexed since start (tests and the server's log). */
  indexed = 0;

  constructor(
    private readonly catchUp: (onProgress: undefined, options: { maxEvents: number; pageEvents: number }) => Promise<IdentifierCatchUpProgress>,
    private readonly options: IdentifierCatchUpWorkerOptions = {},
  ) {}

  start(): void {
    const loop = (): void => {
      if (this.isStopped) return;
      let isBehind = false;
      this.running = this.catchUp(undefined, { maxEvents: ROUND_EVENTS, pageEvents: WORKER_PAGE_EVENTS })
        .then((p) => {
          this.indexed += p.events;
          isBehind = p.state === 'pending' && p.events > 0;
        })
        .catch((err: unknown) => this.options.onError?.(err))
        .finally(() => {
          if (!this.isStopped) this.timer = setTimeout(loop, isBehind ? 0 : (this.options.pollMs ?? CATCH_UP_POLL_MS));
        });
    };
    loop();
  }

  /** Stops polling; the round in flight finishes (at most {@link ROUND_EVENTS} events). */
  async stop(): Promise<void> {
    this.isStopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }
}
