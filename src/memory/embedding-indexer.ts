import { isEngramError } from '../errors.js';
import type { EventRecord } from '../model/event.js';
import type { EventId } from '../model/ids.js';
import type { Embedder } from '../providers/embedder.js';
import type { StorageBackend, VectorModel } from '../store/backend.js';
import { summaryVectorModelKey } from '../store/summary-storage.js';
import { maskPrivate } from './private-spans.js';

export interface EmbeddingIndexerOptions {
  /** Events embedded per batch (one claim, one embed call, one write). Default 64. */
  batchSize?: number;
  /** How long a claimed batch stays reserved for this worker. Default 120,000 ms. */
  leaseMs?: number;
  /** Background loop: pause when the queue is empty. Default 500 ms. */
  idleDelayMs?: number;
  /** Characters of an event embedded; longer texts are cut. Default 2,000 (about the models' 512-token window). */
  maxTextChars?: number;
}

/** Whether recall can use the store's vectors with this engine's embedder. */
export type VectorStatus =
  | { state: 'ready'; model: VectorModel }
  /** The store's vectors come from another model: recall is full-text only until `engram reindex`. */
  | { state: 'model-mismatch'; model: VectorModel; embedder: VectorModel };

export interface IndexProgress {
  embedded: number;
  skipped: number;
  /** Jobs whose embedding failed in this run (they stay queued and are retried later). */
  failed: number;
  /** Jobs still queued when the progress was reported. */
  remaining: number;
}

const DEFAULTS = { batchSize: 64, leaseMs: 120_000, idleDelayMs: 500, maxTextChars: 2000 };

/**
 * The asynchronous embedding worker (ENGRAM §4.4): events are durable and full-text searchable when the
 * append returns; this worker takes queued events in batches, embeds them off the hot path and stores their
 * vectors. The queue is a table of the store, so it survives restarts, and jobs are leased, so several
 * workers (processes, servers) can share it. A failing provider leaves the jobs queued for a later try.
 */
export class EmbeddingIndexer {
  private readonly o: typeof DEFAULTS;
  private loop: Promise<void> | undefined;
  private isStopping = false;
  private wake: (() => void) | undefined;
  private lastError: string | undefined;

  constructor(
    private readonly store: StorageBackend,
    readonly embedder: Embedder,
    options: EmbeddingIndexerOptions = {},
  ) {
    this.o = { ...DEFAULTS, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) };
  }

  /**
   * Binds the embedder to the store: a store without a model takes this one (queueing every stored event,
   * so an existing store is backfilled); a store with another model is left alone (see {@link reindex}).
   */
  async attach(): Promise<VectorStatus> {
    const wanted = { name: this.embedder.name, dimensions: this.embedder.dimensions };
    const current = await this.store.getVectorModel();
    if (current === null) {
      await this.store.setVectorModel(wanted);
      return { state: 'ready', model: wanted };
    }
    if (current.name === wanted.name && current.dimensions === wanted.dimensions) return { state: 'ready', model: current };
    return { state: 'model-mismatch', model: current, embedder: wanted };
  }

  /** Switches the store to this embedder's model: old vectors are dropped and every event is queued. */
  async reindex(): Promise<{ isChanged: boolean; queued: number }> {
    return this.store.setVectorModel({ name: this.embedder.name, dimensions: this.embedder.dimensions });
  }

  /** Embeds one batch; returns what it did (all zeros when the queue is empty). */
  async runOnce(): Promise<{ embedded: number; skipped: number; failed: number }> {
    const ids = await this.store.claimEmbeddingJobs(this.o.batchSize, this.o.leaseMs);
    // Events first; with their queue empty, summaries that have no vector of this model yet.
    if (ids.length === 0) return this.embedSummaries();
    const events = await this.store.getEvents(ids);
    const texts = events.map((e) => embeddingText(e, this.o.maxTextChars));
    const toEmbed = events.flatMap((e, i) => (texts[i]!.length > 0 ? [{ id: e.id as EventId, text: texts[i]! }] : []));
    const skipped = events.filter((_, i) => texts[i]!.length === 0).map((e) => e.id as EventId);
    let vectors: Float32Array[];
    try {
      vectors = toEmbed.length > 0 ? await this.embedder.embed(toEmbed.map((t) => t.text)) : [];
    } catch (err) {
      this.lastError = err instanceof Error ? err.message : String(err);
      await this.store.failEmbeddingJobs(ids, this.lastError);
      return { embedded: 0, skipped: 0, failed: ids.length };
    }
    try {
      await this.store.putVectors(
        this.embedder.name,
        toEmbed.map((t, i) => ({ eventId: t.id, vector: vectors[i]! })),
        skipped,
      );
    } catch (err) {
      // A reindex to another model started meanwhile: these vectors are obsolete, the new jobs are queued.
      if (isEngramError(err, 'CONFLICT')) return { embedded: 0, skipped: 0, failed: 0 };
      throw err;
    }
    return { embedded: toEmbed.length, skipped: skipped.length, failed: 0 };
  }

  /**
   * Embeds a batch of warm summaries without a vector of this embedder's model (summary search fuses them with
   * full-text, consolidate/summary-reader.ts). Summaries are found by a query, not queued: they are few, and a
   * summary made while no embedder was configured is picked up later. A failing provider is reported as failed.
   */
  private async embedSummaries(): Promise<{ embedded: number; skipped: number; failed: number }> {
    const model = summaryVectorModelKey(this.embedder);
    const todo = await this.store.summaries.unembedded(model, this.o.batchSize);
    if (todo.length === 0) return { embedded: 0, skipped: 0, failed: 0 };
    let vectors: Float32Array[];
    try {
      vectors = await this.embedder.embed(todo.map((t) => maskPrivate(t.text).slice(0, this.o.maxTextChars)));
    } catch (err) {
      this.lastError = err instanceof Error ? err.message : String(err);
      return { embedded: 0, skipped: 0, failed: todo.length };
    }
    await this.store.summaries.putVectors(
      model,
      todo.map((t, i) => ({ id: t.id, vector: vectors[i]! })),
    );
    return { embedded: todo.length, skipped: 0, failed: 0 };
  }

  /**
   * Works until the queue is empty (jobs leased by other workers are left to them). Stops early when every
   * job of a batch fails (the provider is down): they stay queued. `onProgress` is called after each batch.
   */
  async drain(onProgress?: (p: IndexProgress) => void): Promise<IndexProgress> {
    const total: IndexProgress = { embedded: 0, skipped: 0, failed: 0, remaining: 0 };
    for (;;) {
      const r = await this.runOnce();
      total.embedded += r.embedded;
      total.skipped += r.skipped;
      total.failed += r.failed;
      const done = r.embedded + r.skipped + r.failed === 0 || r.failed > 0;
      if (onProgress || done) total.remaining = (await this.store.embeddingQueueStats()).pending;
      onProgress?.({ ...total });
      if (done) return total;
    }
  }

  /** The last provider error seen, for status reports. */
  get error(): string | undefined {
    return this.lastError;
  }

  /** Starts the background loop (idempotent). The loop never keeps the process alive by itself. */
  start(): void {
    if (this.loop) return;
    this.isStopping = false;
    this.loop = this.run();
  }

  /** Asks the loop to embed soon (after an append), instead of waiting for its idle delay. */
  poke(): void {
    this.wake?.();
  }

  /** Stops the background loop after its current batch. */
  async stop(): Promise<void> {
    this.isStopping = true;
    this.wake?.();
    await this.loop;
    this.loop = undefined;
  }

  private async run(): Promise<void> {
    while (!this.isStopping) {
      let r = { embedded: 0, skipped: 0, failed: 0 };
      try {
        r = await this.runOnce();
      } catch (err) {
        this.lastError = err instanceof Error ? err.message : String(err);
        r.failed = 1;
      }
      if (r.embedded + r.skipped > 0 && r.failed === 0) continue;
      // Idle or failing: wait (longer after a failure), unless an append wakes us.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, r.failed > 0 ? this.o.idleDelayMs * 10 : this.o.idleDelayMs);
        timer.unref();
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
  }
}

/**
 * What is embedded of an event: its text (a tool result's preview, not the whole artifact) without its private
 * spans, cut to `maxChars`.
 */
export function embeddingText(event: EventRecord, maxChars: number): string {
  const content = maskPrivate(event.content);
  const text = event.toolName ? `${event.toolName}\n${content}` : content;
  return text.trim().slice(0, maxChars);
}
