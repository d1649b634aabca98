/** Everything else is read as a log: previewed as its last lines, where errors cluster. */
import { formatBytes } from '../../util/format-bytes.js';
import { cleanLine, countLines, fitPlans, lastLines, plural, range } from './text.js';

const TAIL_LINES = 10;

export function renderTail(text: string, sizeBytes: number, maxChars: number): string {
  const total = countLines(text);
  if (total === 0) return '[log: empty]';
  const { lines, isFromStart } = lastLines(text, TAIL_LINES);
  const size = `${plural(total, 'line')}, ${formatBytes(sizeBytes)}`;
  if (lines.length === 0) return `[log: ${size}; all blank]`;
  const shown = lines.map((l) => cleanLine(l, maxChars));
  return fitPlans(
    range(shown.length, 1).map((k) => () => {
      const isAll = isFromStart && k === shown.length;
      const header = isAll ? `[log: ${size}]` : `[log: ${size}; last ${plural(k, 'line')}]`;
      return [header, ...shown.slice(-k)].join('\n');
    }),
    maxChars,
  );
}
