import type { BusEventInput, BusEventQuery, BusEventRecord, BusStorage } from '../store/bus-storage.js';

/** Events buffered before a write is forced. */
const MAX_BUFFERED = 256;
/** Longest an event waits in the buffer. */
const FLUSH_DELAY_MS = 250;

/**
 * Telemetry writes off the hot path: an engram query that wrote its `less.engram.query` event in its own
 * transaction spent about a third of its time doing so (measured in bench/bus.ts at 5K engrams: p50 1.8 ms
 * with the write). Events are buffered and written in order within {@link FLUSH_DELAY_MS}, on
 * {@link MAX_BUFFERED}, before every telemetry read, and on close; a crash loses at most the last quarter
 * second of telemetry, never stored data (engrams, grants and budgets are written synchronously).
 */
export class TelemetryBuffer {
  private pending: BusEventInput[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(private readonly storage: BusStorage) {}

  log(event: BusEventInput): void {
    this.pending.push(event);
    if (this.pending.length >= MAX_BUFFERED) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), FLUSH_DELAY_MS);
      this.timer.unref();
    }
  }

  /** Writes every buffered event (in order); resolves when they are stored. */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return this.flushing;
    this.flushing = this.flushing.then(async () => {
      try {
        await this.storage.logBusEvents(batch);
      } catch {
        // Telemetry must never fail the operation it describes; a store that refuses writes drops it.
      }
    });
    return this.flushing;
  }

  async list(query?: BusEventQuery): Promise<BusEventRecord[]> {
    await this.flush();
    return this.storage.listBusEvents(query);
  }
}
