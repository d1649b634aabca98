import { createContext } from 'preact';
import { useContext, useEffect, useState } from 'preact/hooks';
import { api } from './api';

export interface PointerAnswer {
  ref: string;
  type: string;
  excerpt: string;
  contentDigest: string;
  spanDigest: string;
  tokens: number;
  isTruncated: boolean;
  lines?: { start: number; end: number };
  context?: { excerpt: string; start: number };
  isBudgeted: boolean;
}

/** Opens the pointer viewer from anywhere. */
export const OpenPointer = createContext<(ref: string) => void>(() => undefined);

export function PointerLink(props: { refText: string }) {
  const open = useContext(OpenPointer);
  return (
    <button class="pointer" data-testid="pointer-link" title="Open this pointer" onClick={() => open(props.refText)}>
      {props.refText}
    </button>
  );
}

/** The content behind a pointer: the span (highlighted among its surrounding lines when known) and its digests. */
export function PointerBody(props: { refText: string }) {
  const [answer, setAnswer] = useState<PointerAnswer | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setAnswer(null);
    setError(null);
    api<PointerAnswer>('/v1/dashboard/pointer', { body: { pointer: props.refText } }).then(setAnswer, (e: Error) => setError(e.message));
  }, [props.refText]);
  if (error) return <p class="error" data-testid="pointer-error">{error}</p>;
  if (!answer) return <p class="muted">reading…</p>;
  const span = answer.lines;
  const shown = answer.context ?? (span ? { excerpt: answer.excerpt, start: span.start } : null);
  return (
    <div class="pointer-body" data-testid="pointer-view">
      <dl class="facts">
        <dt>type</dt>
        <dd>{answer.type}</dd>
        <dt>content digest</dt>
        <dd class="mono" data-testid="pointer-digest">
          sha256:{answer.contentDigest}
        </dd>
        {answer.spanDigest !== answer.contentDigest && (
          <>
            <dt>span digest</dt>
            <dd class="mono">sha256:{answer.spanDigest}</dd>
          </>
        )}
        <dt>tokens</dt>
        <dd>
          {answer.tokens}
          {answer.isTruncated ? ' (cut to the budget)' : ''}
          {answer.isBudgeted ? ' · counted against your deref budget' : ''}
        </dd>
        {span && (
          <>
            <dt>lines</dt>
            <dd data-testid="pointer-lines">
              {span.start}-{span.end}
            </dd>
          </>
        )}
      </dl>
      {shown ? (
        <pre class="code">
          {shown.excerpt.split('\n').map((line, i) => {
            const n = shown.start + i;
            const isIn = span ? n >= span.start && n <= span.end : true;
            return (
              <div class={isIn ? 'line in-span' : 'line'} data-testid={isIn ? 'span-line' : 'context-line'} key={i}>
                <span class="ln">{n}</span>
                {line}
              </div>
            );
          })}
        </pre>
      ) : (
        <pre class="code" data-testid="span-text">
          {answer.excerpt}
        </pre>
      )}
    </div>
  );
}

export function PointerModal(props: { refText: string; onClose: () => void }) {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') props.onClose();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);
  return (
    <div class="modal-backdrop" onClick={props.onClose}>
      <div class="modal" onClick={(e) => e.stopPropagation()} role="dialog" aria-label="Pointer">
        <header>
          <h2 class="mono small">{props.refText}</h2>
          <button onClick={props.onClose} aria-label="Close">
            ×
          </button>
        </header>
        <PointerBody refText={props.refText} />
      </div>
    </div>
  );
}
