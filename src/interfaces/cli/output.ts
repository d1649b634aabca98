export { formatBytes } from '../../util/format-bytes.js';
/** Output helpers shared by the commands: JSON to stdout, humans get aligned text. */
export interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
  /** Whether stderr is a terminal (progress bars only then). */
  isErrTty: boolean;
}

export const processIo: Io = {
  out: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
  err: (text) => process.stderr.write(text.endsWith('\n') ? text : `${text}\n`),
  isErrTty: Boolean(process.stderr.isTTY),
};

export function printJson(io: Io, value: unknown): void {
  io.out(JSON.stringify(value, null, 2));
}


/** Two-column table: labels padded to the widest. */
export function formatPairs(pairs: Array<[string, string | number]>): string {
  const width = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n');
}
