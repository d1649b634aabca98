/**
 * A line chart as hand-written SVG (no dependency): one series per condition, x = compaction cycles,
 * y = a share from 0 to 100 %. Each series is a `<g class="series" data-series="...">` so tests and readers
 * can find it; a point without a value (checkpoint not reached) breaks the line.
 */

export interface ChartSeries {
  /** The series' id (`data-series`). */
  name: string;
  /** The legend's text. Default `name`. */
  label?: string;
  /** y per x in 0..1, or null where there is no value. */
  values: Array<number | null>;
  isDashed?: boolean;
}

export interface LineChartOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  xValues: number[];
  series: ChartSeries[];
}

const WIDTH = 760;
const HEIGHT = 420;
const MARGIN = { left: 64, right: 250, top: 48, bottom: 56 };
const COLORS = ['#1b6ac9', '#5aa0e6', '#d1495b', '#edae49', '#00798c', '#6c4ab6', '#2e933c', '#8d8d8d'];

/** XML-escapes text for element content and attribute values. */
export function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
}

export function lineChartSvg(options: LineChartOptions): string {
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const xs = options.xValues;
  const xMin = Math.min(...xs);
  const xMax = Math.max(...xs);
  const xOf = (x: number): number => MARGIN.left + (xMax === xMin ? plotW / 2 : ((x - xMin) / (xMax - xMin)) * plotW);
  const yOf = (y: number): number => MARGIN.top + (1 - y) * plotH;
  const f = (n: number): string => n.toFixed(1);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<title>${escapeXml(options.title)}</title>`,
    `<rect x="0" y="0" width="${WIDTH}" height="${HEIGHT}" fill="#ffffff"/>`,
    `<text x="${MARGIN.left}" y="28" font-size="15" font-weight="bold">${escapeXml(options.title)}</text>`,
  ];
  for (const tick of [0, 0.25, 0.5, 0.75, 1]) {
    const y = f(yOf(tick));
    out.push(`<line x1="${MARGIN.left}" y1="${y}" x2="${MARGIN.left + plotW}" y2="${y}" stroke="#e3e3e3"/>`);
    out.push(`<text x="${MARGIN.left - 8}" y="${y}" text-anchor="end" dominant-baseline="middle">${tick * 100} %</text>`);
  }
  for (const x of xs) {
    out.push(`<line x1="${f(xOf(x))}" y1="${MARGIN.top + plotH}" x2="${f(xOf(x))}" y2="${MARGIN.top + plotH + 5}" stroke="#333"/>`);
    out.push(`<text x="${f(xOf(x))}" y="${MARGIN.top + plotH + 20}" text-anchor="middle">${x}</text>`);
  }
  out.push(`<line x1="${MARGIN.left}" y1="${MARGIN.top + plotH}" x2="${MARGIN.left + plotW}" y2="${MARGIN.top + plotH}" stroke="#333"/>`);
  out.push(`<line x1="${MARGIN.left}" y1="${MARGIN.top}" x2="${MARGIN.left}" y2="${MARGIN.top + plotH}" stroke="#333"/>`);
  out.push(`<text x="${MARGIN.left + plotW / 2}" y="${HEIGHT - 12}" text-anchor="middle">${escapeXml(options.xLabel)}</text>`);
  out.push(`<text x="16" y="${MARGIN.top + plotH / 2}" text-anchor="middle" transform="rotate(-90 16 ${MARGIN.top + plotH / 2})">${escapeXml(options.yLabel)}</text>`);
  options.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!;
    const dash = s.isDashed ? ' stroke-dasharray="6 4"' : '';
    out.push(`<g class="series" data-series="${escapeXml(s.name)}">`);
    // Consecutive points with values form one polyline; a missing value starts a new one.
    let run: string[] = [];
    const flush = (): void => {
      if (run.length > 1) out.push(`<polyline fill="none" stroke="${color}" stroke-width="2"${dash} points="${run.join(' ')}"/>`);
      run = [];
    };
    s.values.forEach((v, k) => {
      if (v === null || !Number.isFinite(v)) return flush();
      const point = `${f(xOf(xs[k]!))},${f(yOf(v))}`;
      run.push(point);
      out.push(`<circle cx="${f(xOf(xs[k]!))}" cy="${f(yOf(v))}" r="3.5" fill="${color}"><title>${escapeXml(`${s.label ?? s.name}: ${(v * 100).toFixed(1)} % after ${xs[k]}`)}</title></circle>`);
    });
    flush();
    const ly = MARGIN.top + 8 + i * 22;
    const lx = MARGIN.left + plotW + 18;
    out.push(`<line x1="${lx}" y1="${ly}" x2="${lx + 24}" y2="${ly}" stroke="${color}" stroke-width="2"${dash}/>`);
    out.push(`<text x="${lx + 30}" y="${ly}" dominant-baseline="middle">${escapeXml(s.label ?? s.name)}</text>`);
    out.push('</g>');
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
