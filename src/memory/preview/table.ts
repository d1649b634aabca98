/** Delimited tables (TSV, CSV, semicolons, markdown and psql pipes): previewed as the header, the first rows and the totals. */
import { formatBytes } from '../../util/format-bytes.js';
import { cleanLine, countNonEmptyLines, firstNonEmptyLines, fitPlans, lastLines, plural, range } from './text.js';

const TABLE_SAMPLE_LINES = 20;
const TABLE_PREVIEW_ROWS = 2;

export interface TableShape {
  delimiter: string;
  /** The header is followed by a rule line (`|---|---|`, `----+----`). */
  hasRule: boolean;
  columns: number;
}

const DELIMITERS = ['\t', ',', ';', '|'] as const;
/** `|---|:--:|`, `----+-----`, `=====`: the rule under a markdown or psql table header. */
const RULE_LINE = /^[\s|+:=-]*[-=]{3,}[\s|+:=-]*$/;

/** Counts `delimiter` outside double quotes (and, for pipes, not escaped as `\|`). */
function countDelimiters(line: string, delimiter: string): number {
  let n = 0;
  let inQuotes = false;
  const quoteAware = delimiter !== '|';
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (quoteAware && ch === '"') inQuotes = !inQuotes;
    else if (ch === delimiter && !inQuotes && !(delimiter === '|' && line[i - 1] === '\\')) n++;
  }
  return n;
}

/**
 * A table when every sampled line has the header's delimiter count, plus guards against look-alikes:
 * prose with commas, JSON-ish lines, code ending in `;`, tab-indented code and `cat -n` listings.
 */
export function detectTable(headLines: string[], isWholeContent: boolean): TableShape | undefined {
  const lines = headLines.filter((l) => l.trim() !== '').slice(0, TABLE_SAMPLE_LINES).map((l) => l.replace(/\r$/, ''));
  const header = lines[0];
  if (header === undefined) return undefined;
  const hasRule = lines.length > 1 && RULE_LINE.test(lines[1]!);
  const rows = lines.slice(hasRule ? 2 : 1);
  for (const delimiter of DELIMITERS) {
    const count = countDelimiters(header, delimiter);
    if (count === 0) continue;
    const minRows = delimiter === ',' || delimiter === ';' ? 2 : 1;
    let body = rows;
    // psql ends its tables with a `(3 rows)` footer.
    const last = body[body.length - 1];
    if (delimiter === '|' && isWholeContent && body.length > minRows && countDelimiters(last!, delimiter) !== count) body = body.slice(0, -1);
    if (body.length < minRows || !body.every((r) => countDelimiters(r, delimiter) === count)) continue;
    const fields = splitFields(header, delimiter);
    if (delimiter === '|') {
      if (!hasRule && count < 2) continue;
      if (!hasRule && !header.trim().startsWith('|')) continue;
    } else {
      if (fields[0]!.trim() === '' && delimiter === '\t') continue; // tab-indented code
      if (fields[fields.length - 1]!.trim() === '') continue; // `foo();` lines, trailing delimiters
      if (lines.every((l) => /^\s+\d+\s*$/.test(splitFields(l, delimiter)[0]!))) continue; // `cat -n` listing
    }
    if ((delimiter === ',' || delimiter === ';') && (/^\s*[[{]/.test(header) || !looksLikeTabularText(header, rows, delimiter))) continue;
    const columns = delimiter === '|' ? fields.filter((f, i) => f.trim() !== '' || (i > 0 && i < fields.length - 1)).length : fields.length;
    return { delimiter, hasRule, columns };
  }
  return undefined;
}

/** Prose has long fields and sentence endings; CSV headers are short names. */
function looksLikeTabularText(header: string, rows: string[], delimiter: string): boolean {
  if (splitFields(header, delimiter).some((f) => f.trim().length > 64)) return false;
  const sentences = [header, ...rows].filter((l) => /[.!?:]["')]?\s*$/.test(l)).length;
  return sentences * 2 <= rows.length + 1;
}

/** Splits on `delimiter` outside double quotes (quotes are kept in the fields). */
function splitFields(line: string, delimiter: string): string[] {
  if (delimiter === '|' || !line.includes('"')) return line.split(delimiter);
  const fields: string[] = [];
  let inQuotes = false;
  let start = 0;
  for (let i = 0; i < line.length; i++) {
    if (line[i] === '"') inQuotes = !inQuotes;
    else if (line[i] === delimiter && !inQuotes) {
      fields.push(line.slice(start, i));
      start = i + 1;
    }
  }
  fields.push(line.slice(start));
  return fields;
}

export function renderTable(text: string, table: TableShape, sizeBytes: number, maxChars: number): string {
  const lines = firstNonEmptyLines(text, 1 + (table.hasRule ? 1 : 0) + TABLE_PREVIEW_ROWS).map((l) => cleanLine(l, maxChars));
  const headLines = lines.slice(0, table.hasRule ? 2 : 1);
  const rows = lines.slice(headLines.length);
  // psql closes its tables with a `(3 rows)` footer, which is not a row.
  const hasFooter = table.delimiter === '|' && /^\(\d+ rows?\)$/.test(lastLines(text, 1).lines[0]?.trim() ?? '');
  const rowCount = Math.max(0, countNonEmptyLines(text) - headLines.length - (hasFooter ? 1 : 0));
  const format = { '\t': 'tsv', ',': 'csv', ';': 'semicolon-separated', '|': 'pipe table' }[table.delimiter] ?? 'table';
  const footer = `[${plural(rowCount, 'row')} total; ${format}, ${plural(table.columns, 'column')}, ${formatBytes(sizeBytes)}]`;
  return fitPlans(
    range(rows.length, 0).map((k) => () => [...headLines, ...rows.slice(0, k), footer].join('\n')),
    maxChars,
  );
}
