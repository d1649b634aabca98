import { citationParts } from './event-line';
import { PointerLink } from './pointer';
import { Card } from './ui';

export interface SessionSummary {
  id: string;
  episode: number;
  throughTurn: number;
  text: string;
  level: string;
  createdAt: string;
}
export interface SessionFile {
  path: string;
  action: 'created' | 'edited' | 'deleted';
  writes: number;
  eventId: string;
  isFailed: boolean;
}
export interface SessionWork {
  files: SessionFile[];
  toolCalls: number;
  commands: number;
  failedCommands: number;
  eventsRead: number;
  isPartial: boolean;
}

/** Text with its `[evt_...]` citations as links that open the cited event. */
export function Cited(props: { text: string }) {
  return (
    <>
      {citationParts(props.text).map((p, i) =>
        'id' in p ? p.id.startsWith('evt_') ? <PointerLink key={i} refText={`sam:event:${p.id}`} /> : <span key={i} class="mono small muted">[{p.id}]</span> : <span key={i}>{p.text}</span>,
      )}
    </>
  );
}

/** The session's summaries (episodes in order), each line citing the events it comes from. */
export function SummaryCard(props: { summaries: SessionSummary[] }) {
  return (
    <Card title="Summary" testId="summary" actions={<span class="badge">{props.summaries.length === 1 ? '1 summary' : `${props.summaries.length} summaries`}</span>}>
      {props.summaries.length === 0 ? (
        <p class="muted">Not summarized yet (the Stop hook, <span class="mono">engram consolidate</span> or the serve worker summarizes sessions).</p>
      ) : (
        props.summaries.map((s) => {
          const [header, ...lines] = s.text.split('\n');
          return (
            <div key={s.id} class="summary" data-testid="summary-text">
              <p class="muted small">
                {header} <span class="mono">{s.id}</span> · {s.level}
              </p>
              <ul>
                {lines
                  .map((l) => l.trim().replace(/^-\s+/, ''))
                  .filter((l) => l.length > 0)
                  .map((l, i) => (
                    <li key={i}>
                      <Cited text={l} />
                    </li>
                  ))}
              </ul>
            </div>
          );
        })
      )}
    </Card>
  );
}

/** The files the session's tool calls created, edited or deleted, each linked to its last write. */
export function FilesCard(props: { work: SessionWork }) {
  const w = props.work;
  return (
    <Card
      title="Files touched"
      testId="files"
      actions={
        <span class="badge">
          {w.files.length} files · {w.toolCalls} tool calls · {w.commands} commands{w.failedCommands ? ` (${w.failedCommands} failed)` : ''}
        </span>
      }
    >
      {w.files.length === 0 ? (
        <p class="muted">No file written by a tool call.</p>
      ) : (
        <table class="table small">
          <thead>
            <tr>
              <th>file</th>
              <th>action</th>
              <th>writes</th>
              <th>last write</th>
            </tr>
          </thead>
          <tbody>
            {w.files.map((f) => (
              <tr key={f.path} data-testid="file-row">
                <td class="mono">{f.path}</td>
                <td>
                  <span class={`tag action-${f.action}${f.isFailed ? ' bad' : ''}`}>{f.isFailed ? `${f.action} (failed)` : f.action}</span>
                </td>
                <td>{f.writes}</td>
                <td>
                  <PointerLink refText={`sam:event:${f.eventId}`} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {w.isPartial && <p class="muted small">From the session's first {w.eventsRead.toLocaleString()} tool calls and results.</p>}
    </Card>
  );
}
