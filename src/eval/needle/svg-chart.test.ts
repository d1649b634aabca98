import { describe, expect, it } from 'vitest';
import { CONDITIONS } from './metrics.js';
import { escapeXml, lineChartSvg } from './svg-chart.js';

/** A strict little well-formedness check: every tag closes in order, attributes are quoted, text is escaped. */
function assertWellFormedXml(xml: string): void {
  const stack: string[] = [];
  const tokens = xml.split(/(<[^>]*>)/);
  for (const token of tokens) {
    if (token.startsWith('<')) {
      const m = /^<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>$/.exec(token);
      if (!m) throw new Error(`malformed tag: ${token}`);
      const [, closing, name, , selfClosing] = m;
      if (closing) {
        const open = stack.pop();
        if (open !== name) throw new Error(`</${name}> closes <${open}>`);
      } else if (!selfClosing) stack.push(name!);
    } else if (/<|&(?!(amp|lt|gt|quot|apos);)/.test(token)) {
      throw new Error(`unescaped text: ${token}`);
    }
  }
  if (stack.length > 0) throw new Error(`unclosed: ${stack.join(', ')}`);
}

describe('lineChartSvg', () => {
  const svg = lineChartSvg({
    title: 'Recall <after> "cycles" & more',
    xLabel: 'compaction cycles',
    yLabel: 'recall',
    xValues: [1, 3, 5],
    series: CONDITIONS.map((name, i) => ({ name, values: [1 - i * 0.1, i === 2 ? null : 0.5, 0.2 * i] })),
  });

  it('is well-formed XML with one root svg element', () => {
    expect(() => assertWellFormedXml(svg)).not.toThrow();
    expect(svg.trimStart().startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
  });

  it('has exactly one series per condition, in order, with one point per value', () => {
    const series = [...svg.matchAll(/<g class="series" data-series="([^"]+)">([\s\S]*?)<\/g>/g)];
    expect(series.map((m) => m[1])).toEqual([...CONDITIONS]);
    expect(series[0]![2]!.match(/<circle /g)).toHaveLength(3);
    // A missing value breaks the line: two points left, no line through the gap for a single point run.
    expect(series[2]![2]!.match(/<circle /g)).toHaveLength(2);
    expect(series[2]![2]!.match(/<polyline /g)).toBeNull();
    expect(series[0]![2]!.match(/<polyline /g)).toHaveLength(1);
  });

  it('escapes text', () => {
    expect(svg).toContain('Recall &lt;after&gt; &quot;cycles&quot; &amp; more');
    expect(escapeXml(`a<b>&"c'`)).toBe('a&lt;b&gt;&amp;&quot;c&apos;');
  });

  it('the checker itself rejects broken XML', () => {
    expect(() => assertWellFormedXml('<svg><g></svg>')).toThrow();
    expect(() => assertWellFormedXml('<svg>a < b</svg>')).toThrow();
    expect(() => assertWellFormedXml('<svg x=1></svg>')).toThrow();
  });
});
