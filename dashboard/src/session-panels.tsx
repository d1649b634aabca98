import { useRef, useState } from 'preact/hooks';
import { api } from './api';
import { PointerLink } from './pointer';
import { eventText, isDerived, withoutCitations } from './event-line';
import { FilesCard, SummaryCard, type SessionSummary, type SessionWork } from './session-work';
import { ago, Bars, Card, ErrorLine, Spark, useData, VirtualList } from './ui';

interface Session {
  id: string;
  project: string;
  sharedWith: string[];
  eventCount: number;
  lastTurn: number;
  lastTs?: string;
  createdAt: string;
  /** `claude-code`, `codex`, ... or null (appended without a host). */
  host: string | null;
  firstRequest: string | null;
  firstRequestId: string | null;
  summaryLine: string | null;
  summaryId: string | null;
}
interface Marker {
  fromTurn: number;
  toTurn: number;
  topics: string[];
  level: number;
  eventCount: number;
  tokens: number;
  firstTs: string;
  lastTs: string;
}
interface Timeline {
  session: Session;
  summaries: SessionSummary[];
  work: SessionWork;
  kinds: Record<string, number>;
  buckets: Array<{ fromTurn: number; toTurn: number; count: number }>;
  compactions: number;
  evictedEvents: number;
  cacheUpToTurn: number;
  markers: Marker[];
  cacheTokens: { events: number; markers: number };
  taskStates: Array<{ version: number; producedByTurn: number; ts: string; goals: string[]; phase: string; openLoops: number }>;
  karma: Array<{ id: string; text: string; verifiedBy: string; isGlobal: boolean }>;
  recalls: Array<{ id: number; ts: string; query: string; hits: number; durationMs: number }>;
  embeddingQueue?: { pending: number; failed: number; pendingInSession: number };
}
interface EventRecord {
  id: string;
  turn: number;
  kind: string;
  ts: string;
  content: string;
  toolName?: string;
  tags: string[];
}
interface Pack {
  totalTokens: number;
  windowTokens: number;
  headroomTokens: number;
  cacheVersion: number;
  blocks: Array<{ kind: string; tokens: number; budget: number; items: number; droppedItems: number }>;
  compaction: { evicted: number; tokensBefore: number; tokensAfter: number; markers: number } | null;
}

const PAGE = 100;

/** The sessions the caller may read, paged on scroll. */
export function SessionsPanel(props: { onOpen: (id: string) => void }) {
  const [pages, setPages] = useState<Map<number, Session[]>>(new Map());
  const loading = useRef(new Set<number>());
  const first = useData(async () => {
    const page = await api<{ sessions: Session[]; total: number }>(`/v1/dashboard/sessions?offset=0&limit=${PAGE}`);
    loading.current = new Set();
    setPages(new Map([[0, page.sessions]]));
    return page;
  }, []);
  const need = (from: number, to: number) => {
    for (let p = Math.floor(from / PAGE); p <= Math.floor(Math.max(from, to - 1) / PAGE); p++) {
      if (pages.has(p) || loading.current.has(p) || p * PAGE >= (first.data?.total ?? 0)) continue;
      loading.current.add(p);
      void api<{ sessions: Session[] }>(`/v1/dashboard/sessions?offset=${p * PAGE}&limit=${PAGE}`).then((r) => setPages((old) => new Map(old).set(p, r.sessions)));
    }
  };
  return (
    <Card title="Sessions" actions={<span class="badge" data-testid="sessions-total">{first.data?.total ?? 0} sessions</span>}>
      <ErrorLine error={first.error} />
      <VirtualList
        testId="session-list"
        count={first.data?.total ?? 0}
        rowHeight={58}
        height={580}
        row={(i) => pages.get(Math.floor(i / PAGE))?.[i % PAGE]}
        onNeed={need}
        render={(s) => (
          <button class="session-row" data-testid="session-row" title={s.id} onClick={() => props.onOpen(s.id)}>
            <span class="session-what">
              <span class="ellipsis" data-testid="session-request">
                {s.firstRequest ?? <span class="muted">no request recorded</span>}
              </span>
              <span class="ellipsis muted small" data-testid="session-summary">
                {s.summaryLine ? withoutCitations(s.summaryLine) : 'not summarized yet'}
              </span>
            </span>
            <span class="session-where">
              <span class={`tag host${s.host ? '' : ' unknown'}`} data-testid="session-host">
                {s.host ?? 'unknown host'}
              </span>
              <span class="muted small ellipsis" data-testid="session-project">
                {s.project}
                {s.sharedWith.length ? ` · shared with ${s.sharedWith.join(', ')}` : ''}
              </span>
            </span>
            <span class="mono small muted ellipsis session-id">{s.id}</span>
            <span>{s.eventCount.toLocaleString()} events</span>
            <span class="muted">{s.lastTs ? ago(s.lastTs) : ''}</span>
          </button>
        )}
      />
    </Card>
  );
}

/** One session: events by kind and turn, compactions and markers, the context pack, task-state versions, karma, recalls. */
export function TimelinePanel(props: { sessionId: string; onBack: () => void }) {
  const t = useData(() => api<Timeline>(`/v1/dashboard/sessions/${encodeURIComponent(props.sessionId)}/timeline`), [props.sessionId]);
  const [events, setEvents] = useState<EventRecord[]>([]);
  const cursor = useRef<{ next: number | null; busy: boolean }>({ next: 0, busy: false });
  const [kind, setKind] = useState('');
  const [pack, setPack] = useState<Pack | null>(null);
  const [packError, setPackError] = useState<string | null>(null);
  const [windowTokens, setWindowTokens] = useState(8000);
  const load = () => {
    const c = cursor.current;
    if (c.busy || c.next === null) return;
    c.busy = true;
    const kinds = kind ? `&kinds=${kind}` : '';
    void api<{ events: EventRecord[]; nextAfterTurn?: number }>(`/v1/sessions/${encodeURIComponent(props.sessionId)}/events?afterTurn=${c.next}&limit=500${kinds}`)
      .then((r) => {
        setEvents((old) => [...old, ...r.events]);
        c.next = r.nextAfterTurn ?? null;
      })
      .finally(() => {
        c.busy = false;
      });
  };
  const changeKind = (k: string) => {
    cursor.current = { next: 0, busy: false };
    setEvents([]);
    setKind(k);
  };
  const assemble = () => {
    setPackError(null);
    api<Pack>(`/v1/sessions/${encodeURIComponent(props.sessionId)}/context?window=${windowTokens}`).then(setPack, (e: Error) => setPackError(e.message));
  };
  const d = t.data;
  const total = kind ? (d?.kinds[kind] ?? 0) : (d?.session.eventCount ?? 0);
  return (
    <div class="stack">
      <p>
        <button onClick={props.onBack}>← sessions</button>
      </p>
      <ErrorLine error={t.error} />
      {d && (
        <>
          <Card
            testId="timeline"
            title={
              <>
                Session <span class="mono">{d.session.id}</span>
              </>
            }
            actions={
              <span class="badge">
                project {d.session.project} · {d.session.eventCount.toLocaleString()} events · turn {d.session.lastTurn}
              </span>
            }
          >
            <p class="session-head">
              <span class={`tag host${d.session.host ? '' : ' unknown'}`} data-testid="timeline-host">
                {d.session.host ?? 'unknown host'}
              </span>{' '}
              {d.session.firstRequest ? (
                <span data-testid="timeline-request">
                  “{d.session.firstRequest}” {d.session.firstRequestId && <PointerLink refText={`sam:event:${d.session.firstRequestId}`} />}
                </span>
              ) : (
                <span class="muted">no request recorded</span>
              )}
            </p>
            <div class="grid2">
              <div>
                <h3>Events by kind</h3>
                <table class="table" data-testid="kinds">
                  <tbody>
                    {Object.entries(d.kinds).map(([k, n]) => (
                      <tr key={k}>
                        <td>
                          <button class="link" onClick={() => changeKind(kind === k ? '' : k)}>
                            {k}
                          </button>
                        </td>
                        <td>{n.toLocaleString()}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
              <div>
                <h3>Events over turns</h3>
                <Bars values={d.buckets.map((b) => ({ label: `turns ${b.fromTurn}-${b.toTurn}`, value: b.count }))} height={90} />
              </div>
            </div>
          </Card>
          <SummaryCard summaries={d.summaries} />
          <FilesCard work={d.work} />
          <Card
            testId="markers"
            title="Compactions and markers"
            actions={
              <span class="badge" data-testid="compactions">
                {d.compactions} compactions · {d.evictedEvents.toLocaleString()} events evicted
              </span>
            }
          >
            {d.markers.length === 0 ? (
              <p class="muted">No markers: the window has not been compacted.</p>
            ) : (
              <table class="table">
                <thead>
                  <tr>
                    <th>turns</th>
                    <th>level</th>
                    <th>events</th>
                    <th>tokens</th>
                    <th>topics</th>
                  </tr>
                </thead>
                <tbody>
                  {d.markers.map((m, i) => (
                    <tr key={i} data-testid="marker">
                      <td>
                        {m.fromTurn}-{m.toTurn}
                      </td>
                      <td>{m.level}</td>
                      <td>{m.eventCount}</td>
                      <td>{m.tokens}</td>
                      <td>{m.topics.join(' · ')}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            <p class="muted small">
              Cache up to turn {d.cacheUpToTurn}: {d.cacheTokens.events.toLocaleString()} tokens of events, {d.cacheTokens.markers} of markers.
            </p>
          </Card>
          <Card
            title="Context pack"
            actions={
              <span>
                window <input type="number" value={windowTokens} min={256} step={1000} onChange={(e) => setWindowTokens(Number((e.currentTarget as HTMLInputElement).value))} />{' '}
                <button onClick={assemble} data-testid="assemble-pack">
                  assemble
                </button>
              </span>
            }
          >
            <p class="muted small">Assembling the next turn's pack compacts the window first when it is over its high-water mark (owners only).</p>
            <ErrorLine error={packError} />
            {pack && (
              <table class="table" data-testid="pack">
                <thead>
                  <tr>
                    <th>block</th>
                    <th>tokens</th>
                    <th>budget</th>
                    <th>items</th>
                    <th>dropped</th>
                  </tr>
                </thead>
                <tbody>
                  {pack.blocks.map((b) => (
                    <tr key={b.kind}>
                      <td>{b.kind}</td>
                      <td>{b.tokens}</td>
                      <td>{b.budget}</td>
                      <td>{b.items}</td>
                      <td>{b.droppedItems}</td>
                    </tr>
                  ))}
                  <tr>
                    <td>
                      <strong>total</strong>
                    </td>
                    <td>
                      <strong>{pack.totalTokens}</strong>
                    </td>
                    <td>{pack.windowTokens}</td>
                    <td colSpan={2}>
                      headroom {pack.headroomTokens}
                      {pack.compaction ? ` · compacted now: ${pack.compaction.evicted} evicted, ${pack.compaction.markers} markers` : ''}
                    </td>
                  </tr>
                </tbody>
              </table>
            )}
          </Card>
          <div class="grid2">
            <Card title="Task-state versions">
              {d.taskStates.length === 0 ? (
                <p class="muted">none</p>
              ) : (
                <ul class="small" data-testid="task-states">
                  {d.taskStates.map((v) => (
                    <li key={v.version}>
                      v{v.version} · turn {v.producedByTurn} · {v.phase} · {v.goals.join('; ') || '(no goals)'} · {v.openLoops} open loops
                    </li>
                  ))}
                </ul>
              )}
              <h3>Karma</h3>
              {d.karma.length === 0 ? (
                <p class="muted">none</p>
              ) : (
                <ul class="small">
                  {d.karma.map((k) => (
                    <li key={k.id}>
                      {k.text} <span class="muted">({k.isGlobal ? 'every session' : 'this session'}, by {k.verifiedBy})</span>
                    </li>
                  ))}
                </ul>
              )}
            </Card>
            <Card title="Recall log">
              {d.recalls.length === 0 ? (
                <p class="muted">none</p>
              ) : (
                <table class="table small" data-testid="recalls">
                  <tbody>
                    {d.recalls.map((r) => (
                      <tr key={r.id}>
                        <td>{r.query}</td>
                        <td>{r.hits} hits</td>
                        <td>{r.durationMs.toFixed(1)} ms</td>
                        <td class="muted">{ago(r.ts)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
              {d.embeddingQueue && (
                <p class="small">
                  Embedding queue: {d.embeddingQueue.pending} pending ({d.embeddingQueue.pendingInSession} of this session's latest events), {d.embeddingQueue.failed} failed.
                </p>
              )}
            </Card>
          </div>
          <Card title={`Events${kind ? ` (${kind})` : ''}`} actions={<span class="badge">{total.toLocaleString()}</span>}>
            <VirtualList
              testId="event-list"
              count={total}
              rowHeight={28}
              height={420}
              row={(i) => events[i]}
              onNeed={(_from, to) => {
                if (to >= events.length - 50) load();
              }}
              render={(e) => (
                <div class={`event-row${isDerived(e) ? ' derived' : ''}`} data-testid="event-row" title={isDerived(e) ? "Engram's own output (a start record, an injected brief or recall): not conversation, never recalled as evidence" : undefined}>
                  <span class="muted">#{e.turn}</span> <span class={`tag kind-${e.kind}`}>{e.kind}</span>
                  {isDerived(e) && <span class="tag derived">engram</span>}
                  {e.toolName && (e.kind === 'tool_call' || e.kind === 'tool_result') && (
                    <span class="tool-name" data-testid="tool-name">
                      {e.toolName}
                    </span>
                  )}{' '}
                  <span class="ellipsis">{eventText(e)}</span> <PointerLink refText={`sam:event:${e.id}`} />
                </div>
              )}
            />
          </Card>
        </>
      )}
    </div>
  );
}

interface Overview {
  caller: { name: string; isAdmin: boolean; project: string | null };
  sessions: number;
  events: number;
  projects: Array<{ project: string; sessions: number; events: number }>;
  activityDays: number;
  eventsByDay: Array<{ day: string; events: number; artifacts: number }>;
  recall: { count: number; p50Ms: number | null; p95Ms: number | null; recent: Array<{ ts: string; durationMs: number }> };
  store?: { backend: string; events: number; artifacts: number; artifactBytes: number; artifactStoredBytes: number };
  embeddingQueue?: { pending: number; failed: number };
}

/** Memory overview: sessions per project, activity over time, store size, recall latency. */
export function OverviewPanel() {
  const o = useData(() => api<Overview>('/v1/dashboard/overview'), []);
  const d = o.data;
  return (
    <div class="grid">
      <ErrorLine error={o.error} />
      {d && (
        <>
          <Card title="Memory" testId="overview">
            <div class="stats">
              <div>
                <b>{d.sessions.toLocaleString()}</b> sessions
              </div>
              <div>
                <b>{d.events.toLocaleString()}</b> events
              </div>
              {d.store && (
                <>
                  <div>
                    <b>{d.store.artifacts.toLocaleString()}</b> artifacts
                  </div>
                  <div>
                    <b>{(d.store.artifactStoredBytes / 1024).toFixed(0)} KiB</b> stored ({(d.store.artifactBytes / 1024).toFixed(0)} KiB raw) · {d.store.backend.split(" ")[0]}
                  </div>
                </>
              )}
              {d.embeddingQueue && (
                <div>
                  embedding queue <b>{d.embeddingQueue.pending}</b> pending, {d.embeddingQueue.failed} failed
                </div>
              )}
            </div>
          </Card>
          <Card title="Sessions per project">
            <Bars values={d.projects.map((p) => ({ label: `${p.project}: ${p.sessions} sessions`, value: p.sessions }))} height={90} />
            <table class="table small">
              <tbody>
                {d.projects.map((p) => (
                  <tr key={p.project}>
                    <td>{p.project}</td>
                    <td>{p.sessions} sessions</td>
                    <td>{p.events.toLocaleString()} events</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </Card>
          <Card title={`Events per day (last ${d.activityDays} days)`}>
            <Bars values={d.eventsByDay.map((e) => ({ label: e.day, value: e.events }))} height={90} testId="events-by-day" />
          </Card>
          <Card title={`Artifacts per day (last ${d.activityDays} days)`}>
            <Bars values={d.eventsByDay.map((e) => ({ label: e.day, value: e.artifacts }))} height={90} testId="artifacts-by-day" />
          </Card>
          <Card title="Recall latency">
            <p>
              {d.recall.count} recent recalls · p50 {d.recall.p50Ms?.toFixed(1) ?? '—'} ms · p95 {d.recall.p95Ms?.toFixed(1) ?? '—'} ms
            </p>
            <Spark values={d.recall.recent.map((r) => r.durationMs)} />
          </Card>
        </>
      )}
    </div>
  );
}
