import { readFileSync } from 'node:fs';

/**
 * A process's parent and grandparent ids: the parent given, the grandparent read from /proc on Linux (elsewhere only
 * the parent). A hook process is started by `sh -c`, which the agent host started: these are the host's ids.
 * No other import: the hook client (interfaces/hook-daemon/client.ts) reads them before any of Engram is loaded.
 */
export function parentProcessIds(parent: number = process.ppid): number[] {
  const pids = [parent];
  try {
    // /proc/<pid>/stat: `pid (comm) state ppid ...`; comm may hold spaces and parentheses, so read after the last ')'.
    const stat = readFileSync(`/proc/${parent}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (Number.isInteger(ppid) && ppid > 1) pids.push(ppid);
  } catch {
    // Not Linux, or the parent is gone: the parent alone.
  }
  return pids;
}
