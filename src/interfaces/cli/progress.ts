import type CliProgress from 'cli-progress';
import { createRequire } from 'node:module';
import type { Io } from './output.js';

export interface Progress {
  /** `unit` says what done/total count: bytes (shown in MB) or events. */
  update(done: number, total: number, phase: string, events: number, unit?: 'bytes' | 'events'): void;
  stop(): void;
}

/** A progress bar on stderr when it is a terminal; nothing otherwise (pipes and logs stay clean). */
export function createProgress(io: Io): Progress {
  if (!io.isErrTty) return { update: () => {}, stop: () => {} };
  // Loaded only when a bar is shown: 16 modules every CLI start (a recall, piped) would load for nothing.
  const cliProgress = createRequire(import.meta.url)('cli-progress') as typeof CliProgress;
  const bar = new cliProgress.SingleBar(
    {
      format: ' {phase} [{bar}] {percentage}% | {doneFmt}/{totalFmt} | {events} events | eta {eta_formatted}',
      hideCursor: true,
      stream: process.stderr,
      etaBuffer: 50,
    },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  let lastPhase = '';
  return {
    update(done, total, phase, events, unit = 'bytes') {
      const fmt = (n: number): string => (unit === 'bytes' ? `${(n / 1048576).toFixed(1)} MB` : String(n));
      const payload = { phase: phase.padEnd(8), doneFmt: fmt(done), totalFmt: fmt(total), events };
      if (!started || phase !== lastPhase) {
        if (started) bar.stop();
        bar.start(total, done, payload);
        started = true;
        lastPhase = phase;
      } else {
        bar.update(done, payload);
      }
    },
    stop() {
      if (started) bar.stop();
    },
  };
}
