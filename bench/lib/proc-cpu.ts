/** CPU time and memory of processes from Linux /proc, for load benchmarks (null or empty elsewhere). */
import { readFileSync } from 'node:fs';
import { round } from './stats.js';

/** User + system CPU time of a process, in ms (Linux /proc; null elsewhere or when it has exited). */
export function readCpuMs(pid: number): number | null {
  try {
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return null;
  }
}

/** Processes whose parent is `pid` (the workers of `engram serve --workers N`), from /proc; none elsewhere. */
export function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** CPU ms of a process and its children (a child that exited in between is not counted). */
export function readTreeCpuMs(pid: number): number | null {
  const own = readCpuMs(pid);
  if (own === null) return null;
  return childPids(pid).reduce((sum, child) => sum + (readCpuMs(child) ?? 0), own);
}

/** Peak resident memory of a process in MB (VmHWM). */
export function readMaxRssMb(pid: number): number | null {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? round(Number(m[1]) / 1024, 0) : null;
  } catch {
    return null;
  }
}
