import type { EventRecord } from '../model/event.js';
import { formatBytes } from '../util/format-bytes.js';
import type { SourceItem } from './extractive-summary.js';

/**
 * An event as a source of a derived object: its id, its kind, and its text with the tool's name in front
 * (`Bash: npm test`) and, for an artifact, a note that the text is its preview (the full bytes stay in the store,
 * reachable by the artifact id the note gives).
 */
export function sourceItemFromEvent(event: EventRecord): SourceItem {
  const tool = event.toolName ? `${event.toolName}: ` : '';
  const artifact = event.artifact ? `\n[preview of artifact ${event.artifact.id}, ${formatBytes(event.artifact.sizeBytes)}]` : '';
  return { id: event.id, kind: event.kind, text: `${tool}${event.content}${artifact}` };
}

/**
 * The events a derived object is made from, as source items, in order. Task-state versions are left out unless
 * asked for: the card is pushed into every context pack anyway, and its JSON would crowd out the dialogue.
 */
export function sourceItemsFromEvents(events: readonly EventRecord[], options: { withTaskState?: boolean } = {}): SourceItem[] {
  return events.filter((e) => options.withTaskState || e.kind !== 'task_state').map(sourceItemFromEvent);
}
