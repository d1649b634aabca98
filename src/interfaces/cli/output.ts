export { formatBytes } from '../../util/format-bytes.js';
/** Output helpers shared by the commands: JSON to stdout, humans get aligned text. */
export interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
  /** Whether stderr is a terminal (progress bars only then). */
  isErrTty: boolean;
}

let isQuietOnClosedPipes = false;

/** Streams whose reader went away (`engram summaries | head`): what is still written to them is dropped. */
const closedStreams = new WeakSet<NodeJS.WriteStream>();

export const processIo: Io = {
  out: (text) => write(process.stdout, text),
  err: (text) => write(process.stderr, text),
  isErrTty: Boolean(process.stderr.isTTY),
};

function write(stream: NodeJS.WriteStream, text: string): void {
  if (!closedStreams.has(stream)) stream.write(text.endsWith('\n') ? text : `${text}\n`);
}

/**
 * Makes a closed pipe on stdout or stderr quiet (issue #31): when the reader exits early (`| head`), Node reports the
 * next write as an EPIPE 'error' event, and with no listener that is an uncaught exception with a stack trace. The
 * command then finishes as it would have (a writing command commits what it was writing), its output dropped, and
 * exits with its own code. Other stream errors still surface.
 */
export function quietOnClosedPipes(): void {
  if (isQuietOnClosedPipes) return;
  isQuietOnClosedPipes = true;
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED') {
        closedStreams.add(stream);
        return;
      }
      throw err;
    });
  }
}

export function printJson(io: Io, value: unknown): void {
  io.out(JSON.stringify(value, null, 2));
}


/** Two-column table: labels padded to the widest. */
export function formatPairs(pairs: Array<[string, string | number]>): string {
  const width = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n');
}
