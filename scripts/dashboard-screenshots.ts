/**
 * Screenshots of every dashboard screen for the docs (docs/dashboard/*.png, shown in the README): the demo
 * team of scripts/dashboard-demo.ts in a temp store, the real server, Debian's headless chromium.
 *
 *   npm run build && node --import tsx scripts/dashboard-screenshots.ts [outDir]
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { createTempRepo } from '../bench/lib/temp-git-repo.js';
import { openEngram } from '../src/engine.js';
import { startHttpServer } from '../src/interfaces/http/server.js';
import { DEMO_FILES, seedDashboardDemo } from './dashboard-demo.js';

const outDir = process.argv[2] ?? 'docs/dashboard';
const lines = (count: number, prefix: string) => Array.from({ length: count }, (_, i) => `${prefix} ${i + 1}`).join('\n') + '\n';

const setup = spawnSync('bash', ['scripts/ensure-test-chromium.sh'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
if (setup.status !== 0) throw new Error('scripts/ensure-test-chromium.sh failed');
const repo = createTempRepo('engram-dashboard-shots-');
const sha = repo.commit(DEMO_FILES(lines));
const dir = mkdtempSync(join(tmpdir(), 'engram-dashboard-shots-'));
const mem = await openEngram({ db: join(dir, 'engram.db'), indexing: { background: false }, bus: { repoRoot: repo.dir } });
const demo = await seedDashboardDemo(mem, sha);
const server = await startHttpServer(mem, { port: 0, version: 'screenshots' });
const browser = await chromium.launch({ executablePath: setup.stdout.trim(), args: ['--headless', '--no-sandbox', '--disable-gpu'] });
mkdirSync(outDir, { recursive: true });

async function signIn(token: string, hash: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1360, height: 860 } });
  await page.goto(`${server.url}/`);
  await page.getByTestId('token').fill(token);
  await page.getByTestId('sign-in').click();
  await page.getByTestId('live').filter({ hasText: 'live' }).waitFor();
  await page.goto(`${server.url}/${hash}`);
  return page;
}
const shot = async (page: Page, name: string) => {
  await page.waitForTimeout(400);
  await page.screenshot({ path: join(outDir, `${name}.png`) });
  process.stdout.write(`${join(outDir, `${name}.png`)}\n`);
};

try {
  const login = await browser.newPage({ viewport: { width: 1360, height: 700 } });
  await login.goto(`${server.url}/`);
  await shot(login, 'login');

  const lead = await signIn(demo.tokens.lead, '#/brief');
  await lead.getByTestId('brief-lead').waitFor();
  await fetch(`${server.url}/v1/engram`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${demo.tokens.alice}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ kind: 'todo', claim: 'Add a retry test for the gateway 502 path.', pointers: [{ type: 'repo', ref: demo.span('gateway', 120, 126) }], confidence: 0.7, ttl: 'P1D', scope: 'project' }),
  });
  await lead.waitForFunction(() => (globalThis as unknown as { document: { body: { textContent: string } } }).document.body.textContent.includes('gateway 502 path'));
  await shot(lead, 'shared-brief');
  await lead.goto(`${server.url}/#/budget`);
  await lead.getByTestId('budget-bob').waitFor();
  await shot(lead, 'budget-meter');

  const root = await signIn(demo.tokens.root, '#/feed');
  await root.getByTestId('feed-item').filter({ hasText: 'the two disagree' }).click();
  await root.getByTestId('contradiction-sources').getByTestId('pointer-view').nth(1).waitFor();
  await shot(root, 'engram-feed');
  await root.getByTestId('feed-item').filter({ hasText: 'debits twice' }).first().click();
  await root.getByTestId('engram-detail').getByTestId('pointer-link').click();
  await root.getByTestId('pointer-view').last().waitFor();
  await shot(root, 'pointer');
  await root.keyboard.press('Escape');
  await root.goto(`${server.url}/#/sessions`);
  await root.getByTestId('session-row').filter({ hasText: demo.codingSession }).waitFor();
  await shot(root, 'sessions');
  await root.goto(`${server.url}/#/sessions/${demo.codingSession}`);
  await root.getByTestId('file-row').first().waitFor();
  await root.getByTestId('event-row').first().waitFor();
  await root.setViewportSize({ width: 1360, height: 1700 });
  await shot(root, 'session-work');
  await root.setViewportSize({ width: 1360, height: 860 });
  await root.goto(`${server.url}/#/sessions/${demo.longSession}`);
  await root.getByTestId('marker').first().waitFor();
  await root.getByTestId('assemble-pack').click();
  await root.getByTestId('pack').waitFor();
  await root.setViewportSize({ width: 1360, height: 1500 });
  await shot(root, 'session-timeline');
  await root.setViewportSize({ width: 1360, height: 860 });
  await root.goto(`${server.url}/#/overview`);
  await root.getByTestId('overview').waitFor();
  await shot(root, 'overview');
} finally {
  await browser.close();
  await server.close();
  await mem.close();
  rmSync(dir, { recursive: true, force: true });
  repo.remove();
}
