/**
 * The dates a summary header carries. Its own file so the consolidator and the decision records, which both write
 * headers, share it without importing each other.
 */

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

/** "3 March 2026" or "3 March 2026 to 9 April 2026" (UTC): month names are words a question may use. */
export function dateRange(startMs: number, endMs: number): string {
  const day = (ms: number): string => {
    const d = new Date(ms);
    return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
  };
  const a = day(startMs);
  const b = day(endMs);
  return a === b ? a : `${a} to ${b}`;
}
