import cliProgress from 'cli-progress';
import type { Io } from './output.js';

export interface Progress {
  update(doneBytes: number, totalBytes: number, phase: string, events: number): void;
  stop(): void;
}

/** A byte-based progress bar on stderr when it is a terminal; nothing otherwise (pipes and logs stay clean). */
export function createProgress(io: Io): Progress {
  if (!io.isErrTty) return { update: () => {}, stop: () => {} };
  const bar = new cliProgress.SingleBar(
    {
      format: ' {phase} [{bar}] {percentage}% | {doneMb}/{totalMb} MB | {events} events | eta {eta_formatted}',
      hideCursor: true,
      stream: process.stderr,
      etaBuffer: 50,
    },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  let lastPhase = '';
  return {
    update(done, total, phase, events) {
      const payload = { phase: phase.padEnd(8), doneMb: (done / 1048576).toFixed(1), totalMb: (total / 1048576).toFixed(1), events };
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
