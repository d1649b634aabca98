import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, followStream, storedToken, storeToken, type BusEvent } from './api';
import { BriefPanel, BudgetPanel, FeedPanel } from './bus-panels';
import { OpenPointer, PointerModal } from './pointer';
import { OverviewPanel, SessionsPanel, TimelinePanel } from './session-panels';
import { LiveTick } from './ui';
import './styles.css';

interface Me {
  id: string;
  name: string;
  role: string;
  project?: string;
  isAdmin: boolean;
}

const TABS = [
  ['brief', 'Shared Brief'],
  ['feed', 'Engram feed'],
  ['budget', 'Budget meter'],
  ['sessions', 'Sessions'],
  ['overview', 'Overview'],
] as const;

/** `#/tab` or `#/sessions/<id>`. */
function useRoute(): [string[], (path: string) => void] {
  const read = () => (location.hash.replace(/^#\/?/, '') || 'brief').split('/').map(decodeURIComponent);
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const on = () => setRoute(read());
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return [route, (path) => (location.hash = `#/${path}`)];
}

function Login(props: { onLogin: (me: Me) => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    try {
      const me = await api<Me>('/v1/agents/me', { token: token.trim() });
      storeToken(token.trim());
      props.onLogin(me);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <form class="login" onSubmit={submit} data-testid="login">
      <h1>Engram</h1>
      <p class="muted">What the agents share, spend and forget. Sign in with an agent token: an agent sees its own project, an admin everything.</p>
      <label>
        Token
        <input type="password" value={token} onInput={(e) => setToken((e.currentTarget as HTMLInputElement).value)} autoFocus placeholder="eng_…" data-testid="token" />
      </label>
      <button type="submit" disabled={token.trim() === ''} data-testid="sign-in">
        Sign in
      </button>
      {error && <p class="error" data-testid="login-error">{error}</p>}
      <p class="muted small">The token stays in this tab (sessionStorage) and is sent only to this server.</p>
    </form>
  );
}

function App() {
  const [me, setMe] = useState<Me | null>(null);
  const [isChecking, setChecking] = useState(storedToken() !== null);
  const [route, go] = useRoute();
  const [tick, setTick] = useState(0);
  const [isLive, setLive] = useState(false);
  const [activity, setActivity] = useState<BusEvent[]>([]);
  const [pointer, setPointer] = useState<string | null>(null);
  const [run, setRun] = useState('default');
  const pending = useRef<number | null>(null);

  useEffect(() => {
    if (storedToken() === null) return;
    api<Me>('/v1/agents/me').then(
      (m) => {
        setMe(m);
        setChecking(false);
      },
      () => {
        storeToken(null);
        setChecking(false);
      },
    );
  }, []);

  useEffect(() => {
    if (!me) return;
    const bump = () => {
      if (pending.current !== null) return;
      pending.current = window.setTimeout(() => {
        pending.current = null;
        setTick((t) => t + 1);
      }, 250);
    };
    return followStream({
      onBus: (e) => {
        setActivity((old) => [e, ...old].slice(0, 30));
        bump();
      },
      onSessions: bump,
      onState: setLive,
    });
  }, [me]);

  if (isChecking) return <p class="muted center">…</p>;
  if (!me) return <Login onLogin={setMe} />;
  const tab = route[0] ?? 'brief';
  return (
    <LiveTick.Provider value={tick}>
      <OpenPointer.Provider value={setPointer}>
        <div class="shell">
          <header class="top">
            <strong class="logo">Engram</strong>
            <nav>
              {TABS.map(([id, label]) => (
                <a key={id} href={`#/${id}`} class={tab === id ? 'active' : ''} data-testid={`tab-${id}`}>
                  {label}
                </a>
              ))}
            </nav>
            <span class="spacer" />
            <label class="small">
              run <input value={run} size={10} onChange={(e) => setRun((e.currentTarget as HTMLInputElement).value || 'default')} data-testid="run" />
            </label>
            <span class={`live ${isLive ? 'on' : ''}`} data-testid="live" title="live updates (server-sent events)">
              {isLive ? '● live' : '○ offline'}
            </span>
            <span class="who" data-testid="who">
              {me.name} · {me.role}
              {me.isAdmin ? ' · admin' : me.project ? ` · ${me.project}` : ''}
            </span>
            <button
              onClick={() => {
                storeToken(null);
                setMe(null);
              }}
            >
              sign out
            </button>
          </header>
          <main>
            {tab === 'brief' && <BriefPanel run={run} />}
            {tab === 'feed' && <FeedPanel run={run} isAdmin={me.isAdmin} />}
            {tab === 'budget' && <BudgetPanel />}
            {tab === 'sessions' && (route[1] ? <TimelinePanel sessionId={route[1]} onBack={() => go('sessions')} /> : <SessionsPanel onOpen={(id) => go(`sessions/${encodeURIComponent(id)}`)} />)}
            {tab === 'overview' && <OverviewPanel />}
          </main>
          <aside class="activity" data-testid="activity">
            <h2>Live activity</h2>
            {activity.length === 0 ? (
              <p class="muted small">Waiting for the agents…</p>
            ) : (
              <ul>
                {activity.map((e) => (
                  <li key={e.id}>
                    <span class="mono small">{e.type.replace(/^less\./, '')}</span> <span class="muted small">{e.role ?? ''}</span>
                  </li>
                ))}
              </ul>
            )}
          </aside>
        </div>
        {pointer && <PointerModal refText={pointer} onClose={() => setPointer(null)} />}
      </OpenPointer.Provider>
    </LiveTick.Provider>
  );
}

render(<App />, document.getElementById('app')!);
