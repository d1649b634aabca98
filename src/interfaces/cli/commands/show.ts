import type { Command } from 'commander';
import type { CliContext, GlobalOptions } from '../cli-context.js';
import type { Engram } from '../../../engine.js';
import type { EventRecord } from '../../../model/event.js';
import type { Io } from '../output.js';
import { formatBytes, printJson } from '../output.js';
import { isUtf8Text } from '../../../util/is-utf8-text.js';

export interface ShowArgs {
  id: string;
  json?: boolean;
  /** For artifacts: write the original bytes to stdout unchanged. */
  raw?: boolean;
}

/** `engram show ID`: an event with its metadata, or an artifact's full content. */
export async function showCommand(mem: Engram, args: ShowArgs, io: Io, writeRaw: (bytes: Buffer) => void): Promise<number> {
  const target = await mem.resolve(args.id);
  if (target.kind === 'event') {
    const event = await mem.getEvent(target.id);
    if (args.json) printJson(io, event);
    else io.out(renderEvent(event));
    return 0;
  }
  const { record, bytes } = await mem.readArtifact(target.id);
  if (args.raw) {
    writeRaw(bytes);
    return 0;
  }
  const isText = isUtf8Text(bytes);
  if (args.json) {
    printJson(io, { record, ...(isText ? { text: bytes.toString('utf8') } : { base64: bytes.toString('base64') }) });
  } else if (isText) {
    io.out(bytes.toString('utf8'));
  } else {
    io.out(`${record.id}\n${record.mediaType}, ${formatBytes(record.sizeBytes)} (binary: use --raw > FILE to save it)`);
  }
  return 0;
}

function renderEvent(e: EventRecord): string {
  const head = [`${e.id}  session ${e.sessionId}  turn ${e.turn}  ${e.kind}${e.toolName ? ` (${e.toolName})` : ''}  ${e.ts}`];
  if (e.taskId) head.push(`task: ${e.taskId}`);
  if (e.premiseRef) head.push(`premise: ${e.premiseRef}`);
  if (e.tags.length > 0) head.push(`tags: ${e.tags.join(', ')}`);
  if (e.supersedes) head.push(`supersedes: ${e.supersedes}`);
  if (e.toolCallId) head.push(`tool call: ${e.toolCallId}`);
  if (e.key) head.push(`key: ${e.key}`);
  if (e.artifact) {
    head.push(
      `artifact: ${e.artifact.id} (${e.artifact.mediaType}, ${formatBytes(e.artifact.sizeBytes)}, ${e.artifact.previewKind} preview below; full content: engram show ${e.artifact.id})`,
    );
  }
  if (e.meta) head.push(`meta: ${JSON.stringify(e.meta)}`);
  return `${head.join('\n')}\n---\n${e.content}`;
}

/** `engram show ID`. */
export function register(program: Command, context: CliContext): void {
  const { io } = context;
  program
    .command('show')
    .description('print an event (evt_..., or <session>#<turn>) or the full content of an artifact (art_...); unique prefixes work')
    .argument('<id>', 'event or artifact id, or a unique prefix of at least 4 characters after the underscore; or a turn of a session as <session>#<turn>, the session by its id or a unique prefix (2f6a1c3e#45)')
    .option('--raw', 'artifact: write the original bytes to stdout')
    .action(context.withStore((m, args: ShowArgs & GlobalOptions) => showCommand(m, args, io, (bytes) => process.stdout.write(bytes))));
}
