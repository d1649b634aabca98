import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

/** Globals of the page, for code that runs in the browser (the test's own lib has no DOM). */
declare const sessionStorage: { getItem(key: string): string | null };
declare const document: { querySelector(selector: string): { textContent: string | null } | null };
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTempRepo, numberedLines, type TempRepo } from '../../src/bus/resolvers/test-support.js';
import { openEngram, type Engram } from '../../src/engine.js';
import { startHttpServer, type RunningHttpServer } from '../../src/interfaces/http/server.js';
import { DEMO_FILES, seedDashboardDemo, type DashboardDemo } from '../../scripts/dashboard-demo.js';

/**
 * The dashboard (issue #18) end to end: the built UI served by the real HTTP server on loopback, driven in a
 * real headless Chromium (Debian's package, installed by scripts/ensure-test-chromium.sh when missing) through
 * playwright-core. Agents act through the HTTP API while the page is open; the page must follow live.
 */

const BROWSER_SETUP_MS = 20 * 60_000;
let browser: Browser;
let repo: TempRepo;
let dir: string;
let mem: Engram;
let server: RunningHttpServer;
let demo: DashboardDemo;

/** dist/dashboard/ as `npm run build` makes it; rebuilt when a source file is newer (a developer's tree). */
function ensureDashboardBuilt(): void {
  const index = join('dist', 'dashboard', 'index.html');
  const newest = (d: string): number =>
    Math.max(...readdirSync(d, { withFileTypes: true }).map((e) => (e.isDirectory() ? newest(join(d, e.name)) : statSync(join(d, e.name)).mtimeMs)));
  if (existsSync(index) && statSync(index).mtimeMs >= newest('dashboard')) return;
  const run = spawnSync('npm', ['run', 'build:dashboard'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 5 * 60_000 });
  if (run.status !== 0) throw new Error(`npm run build:dashboard failed: ${run.stderr}${run.stdout}`);
}

beforeAll(async () => {
  const setup = spawnSync('bash', ['scripts/ensure-test-chromium.sh'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: BROWSER_SETUP_MS, maxBuffer: 64 * 1024 * 1024 });
  if (setup.status !== 0) throw new Error(`scripts/ensure-test-chromium.sh failed: ${setup.stderr}`);
  const executablePath = setup.stdout.trim();
  ensureDashboardBuilt();
  repo = createTempRepo();
  const sha = repo.commit(DEMO_FILES(numberedLines));
  dir = mkdtempSync(join(tmpdir(), 'engram-dashboard-browser-'));
  mem = await openEngram({ db: join(dir, 'engram.db'), indexing: { background: false }, bus: { repoRoot: repo.dir, limits: { maxEngramsPerAgentPerMinute: 10_000 } } });
  demo = await seedDashboardDemo(mem, sha);
  server = await startHttpServer(mem, { port: 0, version: '0.0.0-test' });
  browser = await chromium.launch({ executablePath, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
}, BROWSER_SETUP_MS);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await mem?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  repo?.remove();
});

async function signIn(token: string, hash = ''): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(`${server.url}/${hash}`);
  await page.getByTestId('token').fill(token);
  await page.getByTestId('sign-in').click();
  await page.getByTestId('who').waitFor();
  await page.getByTestId('live').filter({ hasText: 'live' }).waitFor({ timeout: 10_000 });
  return page;
}

async function api(path: string, token: string, body: unknown): Promise<number> {
  const res = await fetch(`${server.url}${path}`, { method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  await res.arrayBuffer();
  return res.status;
}

// A browser under a full parallel test run on two cores is slow to start pages: generous limits, no timing asserted.
describe('dashboard in a real browser', { timeout: 120_000 }, () => {
  it('refuses a wrong token, signs in with a right one, and keeps the token out of the URL', async () => {
    const page = await browser.newPage();
    await page.goto(`${server.url}/`);
    await page.getByTestId('token').fill('eng_not-a-token');
    await page.getByTestId('sign-in').click();
    await expect(page.getByTestId('login-error').textContent()).resolves.toMatch(/token/i);
    await page.getByTestId('token').fill(demo.tokens.lead);
    await page.getByTestId('sign-in').click();
    await expect(page.getByTestId('who').textContent()).resolves.toContain('lead');
    expect(page.url()).not.toContain(demo.tokens.lead);
    expect(await page.evaluate(() => sessionStorage.getItem('engram.token'))).toBe(demo.tokens.lead);
    await page.close();
  });

  it("shows the lead's Shared Brief and updates it live when a child posts an engram through the API", async () => {
    const page = await signIn(demo.tokens.lead, '#/brief');
    const lines = page.getByTestId('brief-lead').getByTestId('brief-lines');
    await expect(lines.textContent()).resolves.toContain('Reservation retries are not idempotent');
    await expect(lines.textContent()).resolves.toContain('CONTRADICTION');
    // alice's message started her turn 1, in which she read two spans; the grant lead gave her is still open.
    const alice = (await page.getByTestId('child-alice').allInnerTexts()).join(' ');
    expect(alice).toMatch(/\b1\s+1 \/ 2 \/ 2 \/ \d+\s/);
    expect(alice).toContain('#L100-L110');
    expect(alice).toContain('≤300 tokens');
    const claim = 'Ledger lock is held across the network call; release it before calling the gateway.';
    expect(await api('/v1/engram', demo.tokens.alice, { kind: 'risk', claim, pointers: [{ type: 'repo', ref: demo.span('ledger', 70, 75) }], confidence: 0.9, ttl: 'P1D', scope: 'project' })).toBe(201);
    // No reload: the stream's event makes the panel fetch the brief again.
    await page.waitForFunction((text) => document.querySelector('[data-testid="brief-lead"] [data-testid="brief-lines"]')?.textContent?.includes(text), claim, { timeout: 10_000 });
    await page.close();
  });

  it('opens a pointer from the feed and shows the exact span with its digest among the lines around it', async () => {
    const page = await signIn(demo.tokens.root, '#/feed');
    await page.getByTestId('feed-item').filter({ hasText: 'debits twice' }).first().click();
    await page.getByTestId('engram-detail').getByTestId('pointer-link').click();
    const view = page.getByTestId('pointer-view');
    await view.waitFor();
    expect(await view.getByTestId('span-line').allTextContents()).toEqual(Array.from({ length: 13 }, (_, i) => `${40 + i}ledger ${40 + i}`));
    expect((await view.getByTestId('context-line').allTextContents())[0]).toBe('35ledger 35');
    await expect(view.getByTestId('pointer-lines').textContent()).resolves.toBe('40-52');
    await expect(view.getByTestId('pointer-digest').textContent()).resolves.toMatch(/^sha256:[0-9a-f]{64}$/);
    await page.keyboard.press('Escape');
    // A contradiction shows both of its sources side by side.
    await page.getByTestId('feed-item').filter({ hasText: 'the two disagree' }).click();
    const both = page.getByTestId('contradiction-sources').getByTestId('pointer-view');
    await both.nth(1).waitFor();
    expect(await both.count()).toBe(2);
    await expect(both.nth(0).textContent()).resolves.toContain('routes 120');
    await expect(both.nth(1).textContent()).resolves.toContain('ledger 40');
    await page.close();
  });

  it('shows a deref rejection in the budget meter as it happens', async () => {
    const page = await signIn(demo.tokens.lead, '#/budget');
    const badge = page.getByTestId('rejections-bob');
    await expect(badge.textContent()).resolves.toBe('1');
    for (const [a, b] of [[1, 5], [6, 10], [11, 15]] as const) expect(await api('/v1/pointer/deref', demo.tokens.bob, { pointer: demo.span('gateway', a, b) })).toBe(200);
    expect(await api('/v1/pointer/deref', demo.tokens.bob, { pointer: demo.span('gateway', 16, 20) })).toBe(403);
    await page.waitForFunction(() => document.querySelector('[data-testid="rejections-bob"]')?.textContent === '2', undefined, { timeout: 10_000 });
    const latest = page.getByTestId('budget-bob').getByTestId('rejection').first();
    await expect(latest.textContent()).resolves.toContain('repo deref refused: budget');
    await expect(latest.textContent()).resolves.toContain('#L16-L20');
    await expect(page.getByTestId('meter-repo-bob').textContent()).resolves.toContain('3/3');
    await page.close();
  });

  it('opens a session and shows its compaction markers, task states and recalls', async () => {
    const page = await signIn(demo.tokens.root, '#/sessions');
    await page.getByTestId('session-row').filter({ hasText: demo.longSession }).click();
    await page.getByTestId('marker').first().waitFor();
    expect(await page.getByTestId('marker').count()).toBeGreaterThan(0);
    await expect(page.getByTestId('compactions').textContent()).resolves.toMatch(/^[1-9]\d* compactions · [1-9][\d,]* events evicted$/);
    await expect(page.getByTestId('task-states').textContent()).resolves.toContain('v2');
    await expect(page.getByTestId('recalls').textContent()).resolves.toContain('idempotency key');
    await page.getByTestId('assemble-pack').click();
    await expect(page.getByTestId('pack').textContent()).resolves.toContain('markers');
    await page.close();
  });

  it("lists sessions by host, project, first request and summary line, and a coding session's page shows its summary, files and tool calls", async () => {
    const page = await signIn(demo.tokens.root, '#/sessions');
    const row = page.getByTestId('session-row').filter({ hasText: demo.codingSession });
    await row.waitFor();
    await expect(row.getByTestId('session-host').textContent()).resolves.toBe('claude-code');
    await expect(row.getByTestId('session-project').textContent()).resolves.toBe('shop');
    // The request as the user typed it: the IDE's note around it is the host's, not the user's.
    await expect(row.getByTestId('session-request').textContent()).resolves.toBe('Make reservation retries idempotent: a retried debit must not charge twice.');
    await expect(row.getByTestId('session-summary').textContent()).resolves.toBe('Files created: tests/test_reserve_retry.py');
    const plain = page.getByTestId('session-row').filter({ hasText: 'shop-checkout' });
    await expect(plain.getByTestId('session-host').textContent()).resolves.toBe('unknown host');
    await expect(plain.getByTestId('session-request').textContent()).resolves.toBe('Checkout shows the wrong total after a retry.');
    await expect(plain.getByTestId('session-summary').textContent()).resolves.toBe('not summarized yet');

    await row.click();
    await page.getByTestId('summary-text').waitFor();
    await expect(page.getByTestId('timeline-host').textContent()).resolves.toBe('claude-code');
    await expect(page.getByTestId('timeline-request').textContent()).resolves.toContain('Make reservation retries idempotent');
    const summary = page.getByTestId('summary');
    await expect(summary.textContent()).resolves.toContain('Failed: `pytest tests/test_reserve_retry.py -q`');
    await expect(summary.textContent()).resolves.toContain('fixed: a later run passed');
    // Each cited event is a link that opens it.
    expect(await summary.getByTestId('pointer-link').count()).toBeGreaterThanOrEqual(6);
    const files = await page.getByTestId('file-row').allTextContents();
    expect(files).toEqual([expect.stringMatching(/^services\/ledger\/reservation\.pyedited2sam:event:evt_/), expect.stringMatching(/^tests\/test_reserve_retry\.pycreated1sam:event:evt_/)]);
    await page.getByTestId('files').getByTestId('pointer-link').first().click();
    await expect(page.getByTestId('pointer-view').last().textContent()).resolves.toContain('ledger.seen(key)');
    await page.keyboard.press('Escape');

    // Tool calls by tool name with a readable input, not their JSON; Engram's own start record labelled as such.
    const events = page.getByTestId('event-list');
    await events.getByTestId('event-row').first().waitFor();
    const rows = await events.getByTestId('event-row').allTextContents();
    expect(rows.find((r) => r.includes('TodoWrite'))).toContain('2 items, 0 done; doing: Add an idempotency key to reserve()');
    expect(rows.find((r) => r.includes('tool_callBash'))).toContain('$ pytest tests/test_reserve_retry.py -q');
    expect(rows.find((r) => r.includes('tool_callEdit'))).toContain('/home/dev/shop/services/ledger/reservation.py');
    expect(rows.some((r) => r.includes('{"todos"'))).toBe(false);
    expect(rows[0]).toMatch(/^#1 systemengram claude-code session startup/);
    expect(await events.locator('.event-row.derived').count()).toBe(1);
    await page.close();
  });

  it('renders a feed of hundreds of engrams a screenful at a time and reads the next page as it scrolls', async () => {
    const bob = await mem.agents.get('bob');
    for (let i = 0; i < 300; i++) {
      const line = 1 + (i % 200);
      await mem.bus.engrams.put(bob, { kind: 'fact', claim: `Bulk finding number ${i} on line ${line}.`, pointers: [{ type: 'repo', ref: demo.span('ledger', line, line + 1) }], confidence: 0.6, ttl: 'P1D', scope: 'project' }, mem.bus.defaultRunId);
    }
    const page = await signIn(demo.tokens.lead, '#/feed');
    await page.getByTestId('feed-item').first().waitFor();
    // 100 read, more to come: the badge says so, and only the rows in view are in the page.
    await expect(page.getByTestId('feed-total').textContent()).resolves.toBe('100+ engrams');
    expect(await page.getByTestId('feed-item').count()).toBeLessThan(30);
    const list = page.getByTestId('feed-list');
    for (let i = 0; i < 12 && !(await page.getByText('Bulk finding number 0 on line 1.', { exact: true }).count()); i++) {
      await list.evaluate((el) => {
        el.scrollTop = el.scrollHeight;
      });
      await page.waitForTimeout(300);
    }
    await page.getByText('Bulk finding number 0 on line 1.', { exact: true }).waitFor();
    expect(await page.getByTestId('feed-item').count()).toBeLessThan(30);
    await expect(page.getByTestId('feed-total').textContent()).resolves.toMatch(/^30\d engrams$/);
    await page.close();
  });

  it("an agent of another project sees neither the shop's sessions nor its engrams", async () => {
    const page = await signIn(demo.tokens.eve, '#/sessions');
    await page.getByTestId('session-row').first().waitFor();
    expect(await page.getByTestId('session-row').allTextContents()).toEqual([expect.stringContaining('bank-rounding')]);
    await page.goto(`${server.url}/#/sessions/${demo.longSession}`);
    await page.getByText('no session').first().waitFor({ timeout: 10_000 });
    await page.goto(`${server.url}/#/feed`);
    await page.getByTestId('feed-item').first().waitFor();
    expect(await page.getByTestId('feed-item').allTextContents()).toEqual([expect.stringContaining('banker')]);
    await page.close();
  });
});
