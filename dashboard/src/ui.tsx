import { createContext, type ComponentChildren } from 'preact';
import { useContext, useEffect, useRef, useState } from 'preact/hooks';

/** Bumped when the live stream reports a change: panels reload their data. */
export const LiveTick = createContext(0);

/** Loads `fetcher` when `deps` change and on every live tick; keeps the last answer while reloading. */
export function useData<T>(fetcher: () => Promise<T>, deps: unknown[], options: { live?: boolean } = {}): { data: T | null; error: string | null; reload: () => void } {
  const tick = useContext(LiveTick);
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [nonce, setNonce] = useState(0);
  useEffect(() => {
    let isCurrent = true;
    fetcher().then(
      (d) => {
        if (isCurrent) {
          setData(d);
          setError(null);
        }
      },
      (e: Error) => {
        if (isCurrent) setError(e.message);
      },
    );
    return () => {
      isCurrent = false;
    };
  }, [...deps, options.live === false ? 0 : tick, nonce]);
  return { data, error, reload: () => setNonce((n) => n + 1) };
}

export function Card(props: { title: ComponentChildren; children: ComponentChildren; actions?: ComponentChildren; testId?: string; class?: string }) {
  return (
    <section class={`card ${props.class ?? ''}`} data-testid={props.testId}>
      <header>
        <h2>{props.title}</h2>
        {props.actions}
      </header>
      {props.children}
    </section>
  );
}

export function Meter(props: { label: string; used: number; limit: number; unit?: string; testId?: string }) {
  const fraction = props.limit > 0 ? Math.min(1, props.used / props.limit) : 0;
  const level = fraction >= 1 ? 'full' : fraction >= 0.75 ? 'high' : 'ok';
  return (
    <div class="meter" data-testid={props.testId} title={`${props.used} of ${props.limit}${props.unit ? ` ${props.unit}` : ''}`}>
      <span class="meter-label">{props.label}</span>
      <span class="meter-track">
        <span class={`meter-fill ${level}`} style={{ width: `${fraction * 100}%` }} />
      </span>
      <span class="meter-value">
        {props.used}/{props.limit}
      </span>
    </div>
  );
}

/** Vertical bars (hand-drawn SVG): one per value, with an optional limit line. */
export function Bars(props: { values: Array<{ label: string; value: number; bad?: boolean }>; limit?: number; height?: number; testId?: string }) {
  const h = props.height ?? 80;
  const w = 300;
  const max = Math.max(1, props.limit ?? 0, ...props.values.map((v) => v.value));
  // At most 24 units a bar: a few values stay bars, not a filled strip.
  const bw = Math.min(24, w / Math.max(1, props.values.length));
  return (
    <svg class="bars" viewBox={`0 0 ${w} ${h}`} preserveAspectRatio="none" data-testid={props.testId} role="img">
      {props.values.map((v, i) => {
        const bh = (v.value / max) * (h - 4);
        return (
          <rect key={i} x={i * bw + 1} y={h - bh} width={Math.max(1, bw - 2)} height={bh} class={v.bad ? 'bar bad' : 'bar'}>
            <title>{`${v.label}: ${v.value}`}</title>
          </rect>
        );
      })}
      {props.limit !== undefined && <line x1={0} x2={w} y1={h - (props.limit / max) * (h - 4)} y2={h - (props.limit / max) * (h - 4)} class="limit" />}
    </svg>
  );
}

/** A line over time (hand-drawn SVG). */
export function Spark(props: { values: number[]; height?: number; testId?: string }) {
  const h = props.height ?? 60;
  const w = 300;
  const max = Math.max(1, ...props.values);
  const step = props.values.length > 1 ? w / (props.values.length - 1) : w;
  const points = props.values.map((v, i) => `${(i * step).toFixed(1)},${(h - (v / max) * (h - 4) - 2).toFixed(1)}`).join(' ');
  return (
    <svg class="spark" viewBox={`0 0 ${w} ${h}`} preserveAspectRatio="none" data-testid={props.testId} role="img">
      <polyline points={points} />
    </svg>
  );
}

/**
 * A list that renders only the rows in view (fixed row height), so thousands of engrams or a 100K-event
 * session scroll smoothly; `onNeed(index)` asks for rows not loaded yet.
 */
export function VirtualList<T>(props: {
  count: number;
  rowHeight: number;
  height: number;
  row: (index: number) => T | undefined;
  render: (item: T, index: number) => ComponentChildren;
  onNeed?: (from: number, to: number) => void;
  testId?: string;
}) {
  const ref = useRef<HTMLDivElement>(null);
  const [top, setTop] = useState(0);
  const first = Math.max(0, Math.floor(top / props.rowHeight) - 5);
  const last = Math.min(props.count, Math.ceil((top + props.height) / props.rowHeight) + 5);
  useEffect(() => {
    props.onNeed?.(first, last);
  }, [first, last, props.count]);
  const rows: ComponentChildren[] = [];
  for (let i = first; i < last; i++) {
    const item = props.row(i);
    rows.push(
      <div class="vrow" key={i} style={{ top: `${i * props.rowHeight}px`, height: `${props.rowHeight}px` }}>
        {item === undefined ? <span class="muted">loading…</span> : props.render(item, i)}
      </div>,
    );
  }
  return (
    <div class="vlist" ref={ref} style={{ height: `${props.height}px` }} onScroll={(e) => setTop((e.currentTarget as HTMLDivElement).scrollTop)} data-testid={props.testId}>
      <div style={{ height: `${props.count * props.rowHeight}px`, position: 'relative' }}>{rows}</div>
    </div>
  );
}

export function ErrorLine(props: { error: string | null }) {
  return props.error ? <p class="error">{props.error}</p> : null;
}

export function ago(ts: string): string {
  const s = Math.round((Date.now() - Date.parse(ts)) / 1000);
  if (s < 60) return `${Math.max(0, s)}s ago`;
  if (s < 3600) return `${Math.round(s / 60)}m ago`;
  if (s < 86400) return `${Math.round(s / 3600)}h ago`;
  return ts.slice(0, 10);
}
