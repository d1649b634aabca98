import { useRef, useState } from 'preact/hooks';
import { api } from './api';
import { PointerBody, PointerLink } from './pointer';
import { ago, Bars, Card, ErrorLine, Meter, useData, VirtualList } from './ui';

interface Agent {
  id: string;
  name: string;
  role: string;
  project: string | null;
  parentName?: string;
  isAdmin: boolean;
  children: string[];
}
interface Grant {
  id: string;
  parent: string;
  child: string;
  pointer: string;
  capTokens: number;
  expiresAt: string;
  isUsed: boolean;
  isExpired: boolean;
}
interface Rejection {
  id: number;
  ts: string;
  type: string;
  turn?: number;
  reasons: string[];
  pointer?: string;
}
interface AgentMeter {
  agent: Agent;
  turn: number;
  usage: { counts: Record<string, number>; tokens: number };
  limits: { repo: number; artifact: number; sam: number; tokens: number };
  remaining: { repo: number; artifact: number; sam: number; tokens: number };
  inlineByTurn: Array<{ turn: number; inlineTokens: number; engrams: number; ok: boolean }>;
  maxInlineTokens: number;
  derefsByTurn: Array<{ turn: number; derefs: number; tokens: number; refused: number }>;
  grants: { issued: Grant[]; received: Grant[] };
  rejections: Rejection[];
}
interface Brief {
  parent: Agent;
  brief: { lines: string[]; tokens: number; included: string[]; omitted: Array<{ id: string; reason: string }>; contradictions: number };
}
interface FeedPage {
  items: FeedItem[];
  total: number | null;
  hasMore: boolean;
  projects: Array<string | null>;
}
interface FeedItem {
  engram: { id: string; kind: string; claim: string; scope: string; confidence: number; pointers: Array<{ type: string; ref: string }>; tags?: string[]; provenance: { created_at: string } };
  project: string | null;
  run: string;
  author: { name: string; role: string };
  isContradiction: boolean;
}

function Derefs(props: { m: AgentMeter }) {
  const { m } = props;
  return (
    <div class="meters">
      <Meter label="repo spans" used={m.usage.counts.repo ?? 0} limit={m.limits.repo} testId={`meter-repo-${m.agent.name}`} />
      <Meter label="artifact sections" used={m.usage.counts.artifact ?? 0} limit={m.limits.artifact} />
      <Meter label="event items" used={m.usage.counts.sam ?? 0} limit={m.limits.sam} />
      <Meter label="deref tokens" used={m.usage.tokens} limit={m.limits.tokens} unit="tokens" />
    </div>
  );
}

/** LESS §11 "Shared Brief" panel: each parent's live SharedBriefMicro, its budget, and its children's remaining derefs and grants. */
export function BriefPanel(props: { run: string }) {
  const briefs = useData(() => api<{ run: string; briefs: Brief[] }>(`/v1/dashboard/briefs?run=${encodeURIComponent(props.run)}`), [props.run]);
  const meters = useData(() => api<{ agents: AgentMeter[] }>('/v1/dashboard/agents'), []);
  const byName = new Map((meters.data?.agents ?? []).map((m) => [m.agent.name, m]));
  return (
    <div class="stack">
      <ErrorLine error={briefs.error ?? meters.error} />
      {briefs.data && briefs.data.briefs.length === 0 && (
        <p class="muted">No parent agent with children is visible to you: the brief is built from a parent's children's engrams.</p>
      )}
      {briefs.data?.briefs.map((b) => (
        <Card
          key={b.parent.id}
          testId={`brief-${b.parent.name}`}
          title={
            <>
              SharedBriefMicro · <strong>{b.parent.name}</strong> <span class="muted">({b.parent.role}, project {b.parent.project ?? '—'})</span>
            </>
          }
          actions={
            <span class="badge">
              {b.brief.lines.length} lines · {b.brief.tokens} tokens · {b.brief.contradictions} contradictions
            </span>
          }
        >
          <pre class="brief" data-testid="brief-lines">
            {b.brief.lines.length === 0 ? <span class="muted">(no live engrams from the children yet)</span> : b.brief.lines.map((l, i) => <div key={i} class={l.startsWith('CONTRADICTION') ? 'contradiction-line' : ''}>{l}</div>)}
          </pre>
          {b.brief.omitted.length > 0 && <p class="muted small">{b.brief.omitted.length} engrams left out (line or token budget).</p>}
          <table class="table">
            <thead>
              <tr>
                <th>child</th>
                <th>turn</th>
                <th>derefs left (repo / artifact / event / tokens)</th>
                <th>grants held</th>
              </tr>
            </thead>
            <tbody>
              {b.parent.children.map((name) => {
                const m = byName.get(name);
                if (!m) return null;
                const live = m.grants.received.filter((g) => !g.isUsed && !g.isExpired);
                return (
                  <tr key={name} data-testid={`child-${name}`}>
                    <td>
                      {name} <span class="muted">{m.agent.role}</span>
                    </td>
                    <td>{m.turn}</td>
                    <td>
                      {m.remaining.repo} / {m.remaining.artifact} / {m.remaining.sam} / {m.remaining.tokens}
                    </td>
                    <td>{live.length === 0 ? <span class="muted">none</span> : live.map((g) => <div key={g.id} class="mono small">{g.pointer} (≤{g.capTokens} tokens)</div>)}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </Card>
      ))}
    </div>
  );
}

/** LESS §11 "Budget meter": per agent, this turn's derefs against the limits, inline tokens per turn, grants, rejections. */
export function BudgetPanel() {
  const meters = useData(() => api<{ agents: AgentMeter[] }>('/v1/dashboard/agents'), []);
  return (
    <div class="grid">
      <ErrorLine error={meters.error} />
      {meters.data?.agents.map((m) => (
        <Card
          key={m.agent.id}
          testId={`budget-${m.agent.name}`}
          title={
            <>
              <strong>{m.agent.name}</strong> <span class="muted">{m.agent.role}{m.agent.parentName ? ` · child of ${m.agent.parentName}` : ''}</span>
            </>
          }
          actions={<span class="badge">turn {m.turn}</span>}
        >
          <Derefs m={m} />
          <h3>Inline tokens per message (limit {m.maxInlineTokens})</h3>
          {m.inlineByTurn.length === 0 ? (
            <p class="muted small">no messages yet</p>
          ) : (
            <Bars values={m.inlineByTurn.map((t) => ({ label: `turn ${t.turn}`, value: t.inlineTokens, bad: !t.ok }))} limit={m.maxInlineTokens} />
          )}
          <h3>Deref tokens per turn (limit {m.limits.tokens}; red: a turn with refusals)</h3>
          {m.derefsByTurn.length === 0 ? (
            <p class="muted small">no derefs yet</p>
          ) : (
            <Bars values={m.derefsByTurn.map((t) => ({ label: `turn ${t.turn}: ${t.derefs} derefs, ${t.tokens} tokens, ${t.refused} refused`, value: t.tokens, bad: t.refused > 0 }))} limit={m.limits.tokens} />
          )}
          <h3>
            Rejections <span class="badge" data-testid={`rejections-${m.agent.name}`}>{m.rejections.length}</span>
          </h3>
          {m.rejections.length === 0 ? (
            <p class="muted small">none</p>
          ) : (
            <ul class="rejections">
              {m.rejections.slice(0, 8).map((r) => (
                <li key={r.id} data-testid="rejection">
                  <span class={`tag ${r.type}`}>{r.type}</span> {r.turn !== undefined ? `turn ${r.turn} · ` : ''}
                  {r.reasons.join('; ')} {r.pointer && <span class="mono small">{r.pointer}</span>} <span class="muted small">{ago(r.ts)}</span>
                </li>
              ))}
            </ul>
          )}
          {(m.grants.issued.length > 0 || m.grants.received.length > 0) && (
            <>
              <h3>Grants</h3>
              <ul class="small">
                {[...m.grants.issued, ...m.grants.received].map((g) => (
                  <li key={g.id}>
                    {g.parent} → {g.child}: <span class="mono">{g.pointer}</span> ≤{g.capTokens} tokens · {g.isUsed ? 'used' : g.isExpired ? 'expired' : 'open'}
                  </li>
                ))}
              </ul>
            </>
          )}
        </Card>
      ))}
    </div>
  );
}

const KINDS = ['', 'fact', 'decision', 'risk', 'todo', 'constraint', 'diff', 'test', 'perf', 'policy'];
const SCOPES = ['', 'run', 'project', 'org', 'global'];
const PAGE = 100;

/** LESS §11 "Engram feed": newest first, filtered, paged on scroll; contradictions show both sources side by side. */
export function FeedPanel(props: { run: string; isAdmin: boolean }) {
  const [filters, setFilters] = useState({ project: '', role: '', scope: '', kind: '', agent: '' });
  const [feed, setFeed] = useState<{ items: FeedItem[]; hasMore: boolean; total: number | null }>({ items: [], hasMore: false, total: 0 });
  const [open, setOpen] = useState<FeedItem | null>(null);
  const query = Object.entries(filters)
    .filter(([, v]) => v !== '')
    .map(([k, v]) => `${k}=${encodeURIComponent(v)}`)
    .concat(`run=${encodeURIComponent(props.run)}`)
    .join('&');
  const loading = useRef(false);
  const first = useData(async () => {
    const page = await api<FeedPage>(`/v1/dashboard/engrams?${query}&offset=0&limit=${PAGE}`);
    loading.current = false;
    setFeed({ items: page.items, hasMore: page.hasMore, total: page.total });
    return page;
  }, [query]);
  // Infinite scroll: the next page is read when the row after the last loaded one comes into view.
  const need = (_from: number, to: number) => {
    if (loading.current || !feed.hasMore || to < feed.items.length) return;
    loading.current = true;
    const offset = feed.items.length;
    void api<FeedPage>(`/v1/dashboard/engrams?${query}&offset=${offset}&limit=${PAGE}`)
      .then((r) => setFeed((old) => (old.items.length === offset ? { items: [...old.items, ...r.items], hasMore: r.hasMore, total: r.total ?? old.total } : old)))
      .finally(() => {
        loading.current = false;
      });
  };
  const count = feed.total ?? feed.items.length + (feed.hasMore ? 1 : 0);
  const set = (key: keyof typeof filters) => (e: Event) => setFilters({ ...filters, [key]: (e.currentTarget as HTMLInputElement).value });
  return (
    <div class={open ? 'feed-layout open' : 'feed-layout'}>
      <Card title="Engram feed" actions={<span class="badge" data-testid="feed-total">{feed.total === null ? `${feed.items.length}+` : feed.total} engrams</span>}>
        <div class="filters">
          {props.isAdmin && (
            <label>
              project
              <select value={filters.project} onChange={set('project')} data-testid="filter-project">
                <option value="">all</option>
                {(first.data?.projects ?? []).map((p) => (
                  <option key={p ?? ''} value={p ?? ''}>
                    {p ?? '(none)'}
                  </option>
                ))}
              </select>
            </label>
          )}
          <label>
            kind
            <select value={filters.kind} onChange={set('kind')} data-testid="filter-kind">
              {KINDS.map((k) => (
                <option key={k} value={k}>
                  {k || 'all'}
                </option>
              ))}
            </select>
          </label>
          <label>
            scope
            <select value={filters.scope} onChange={set('scope')}>
              {SCOPES.map((k) => (
                <option key={k} value={k}>
                  {k || 'all'}
                </option>
              ))}
            </select>
          </label>
          <label>
            role <input value={filters.role} onChange={set('role')} placeholder="any" size={10} data-testid="filter-role" />
          </label>
          <label>
            agent <input value={filters.agent} onChange={set('agent')} placeholder="any" size={10} data-testid="filter-agent" />
          </label>
          <span class="muted small">run {props.run}</span>
        </div>
        <ErrorLine error={first.error} />
        <VirtualList
          testId="feed-list"
          count={count}
          rowHeight={64}
          height={520}
          row={(i) => feed.items[i]}
          onNeed={need}
          render={(item) => (
            <div class={`feed-item ${item.isContradiction ? 'contradiction' : ''}`} data-testid="feed-item" onClick={() => setOpen(item)}>
              <div>
                <span class={`tag kind-${item.engram.kind}`}>{item.engram.kind}</span>
                {item.isContradiction && <span class="tag bad">contradiction</span>} <span class="claim">{item.engram.claim}</span>
              </div>
              <div class="muted small">
                {item.author.name} ({item.author.role}) · {item.engram.scope} · conf {item.engram.confidence} · {item.engram.pointers.length} pointers · {ago(item.engram.provenance.created_at)}
              </div>
            </div>
          )}
        />
      </Card>
      {open && (
        <Card title={`Engram ${open.engram.id}`} testId="engram-detail" actions={<button onClick={() => setOpen(null)}>close</button>}>
          <p class="claim">{open.engram.claim}</p>
          <p class="muted small">
            {open.author.name} · {open.engram.kind} · {open.engram.scope} · project {open.project ?? '—'} · run {open.run}
            {open.engram.tags?.length ? ` · tags ${open.engram.tags.join(', ')}` : ''}
          </p>
          {open.isContradiction && open.engram.pointers.length >= 2 ? (
            <div class="side-by-side" data-testid="contradiction-sources">
              {open.engram.pointers.slice(0, 2).map((p) => (
                <div key={p.ref}>
                  <h3 class="mono small">{p.ref}</h3>
                  <PointerBody refText={p.ref} />
                </div>
              ))}
            </div>
          ) : (
            <ul>
              {open.engram.pointers.map((p) => (
                <li key={p.ref}>
                  <PointerLink refText={p.ref} />
                </li>
              ))}
            </ul>
          )}
        </Card>
      )}
    </div>
  );
}
