import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ENGRAM_BIN, runEngram } from '../fixtures/cli.js';

// engram artifacts lifecycle / show / stats through the built CLI, on a SQLite store and its <db>.cold/ directory.
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-cli-artifacts-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const engram = (args: string[], input?: string) => runEngram(['--embedder', 'none', ...args], { cwd: dir, ...(input !== undefined ? { input } : {}) });

const LOG = Array.from({ length: 400 }, (_, i) => `2026-03-02T10:${String(i % 60).padStart(2, '0')}:00Z WARN pool-${i % 5} retry ${i} for order ord_${9000 + i}`).join('\n') + '\n';

it('moves old artifacts to the cold tier, reads them back byte-identical, counts them, and fails loudly on a corrupt copy', () => {
  const lines = [
    { kind: 'user', content: 'tail the payment logs' },
    { kind: 'tool_result', toolName: 'Bash', content: LOG },
  ].map((l) => JSON.stringify(l));
  expect(engram(['ingest', '-', '--session', 'pay', '--format', 'jsonl'], `${lines.join('\n')}\n`).code).toBe(0);
  const event = JSON.parse(engram(['show', '--json', (JSON.parse(engram(['recall', 'ord_9123', '--json']).stdout) as { hits: Array<{ eventId: string }> }).hits[0]!.eventId]).stdout) as {
    artifact: { id: string };
  };
  const artifactId = event.artifact.id;

  // Young artifacts stay; a bad age names the option.
  const young = engram(['artifacts', 'lifecycle', '--older-than', '1d']);
  expect(young.code, young.stderr).toBe(0);
  expect(young.stdout).toMatch(/artifacts\s+0 of 0 moved/);
  const bad = engram(['artifacts', 'lifecycle', '--older-than', 'soon']);
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain('--older-than');

  const dry = engram(['artifacts', 'lifecycle', '--older-than', '0s', '--dry-run']);
  expect(dry.code, dry.stderr).toBe(0);
  expect(dry.stdout).toMatch(/artifacts\s+1 of 1 would move to the cold tier/);
  expect(dry.stdout).toContain('Dry run: nothing was moved');
  expect(JSON.parse(engram(['stats', '--json']).stdout).artifactTiers).toMatchObject({ hot: 1, cold: 0 });

  const run = engram(['artifacts', 'lifecycle', '--older-than', '0s', '--json']);
  expect(run.code, run.stderr).toBe(0);
  const report = JSON.parse(run.stdout) as { moved: number; hotBytes: number; coldBytes: number; coldLocation: string };
  expect(report.moved).toBe(1);
  expect(report.coldBytes).toBeLessThan(report.hotBytes);
  expect(report.coldLocation).toBe(`${join(dir, '.engram', 'engram.db')}.cold`);

  // Every read path of the CLI rehydrates it: raw bytes, text, JSON with the cold record.
  const raw = spawnSync(process.execPath, [ENGRAM_BIN, '--embedder', 'none', 'show', artifactId, '--raw'], { cwd: dir });
  expect(raw.status).toBe(0);
  expect(Buffer.compare(raw.stdout, Buffer.from(LOG))).toBe(0);
  const shown = JSON.parse(engram(['show', artifactId.slice(0, 12), '--json']).stdout) as { record: { coldAt?: string; coldLocation?: string }; text: string };
  expect(shown.text).toBe(LOG);
  expect(shown.record.coldAt).toMatch(/^\d{4}-/);
  // Search over the artifact's text still finds its event.
  expect((JSON.parse(engram(['recall', 'ord_9377', '--json']).stdout) as { hits: unknown[] }).hits.length).toBeGreaterThan(0);

  const stats = engram(['stats']);
  expect(stats.stdout).toMatch(/artifact tiers\s+0 hot \(0 B\), 1 cold/);

  // A corrupt cold copy: a storage error naming the artifact and the file, not other bytes.
  writeFileSync(shown.record.coldLocation!, 'garbage');
  const broken = engram(['show', artifactId]);
  expect(broken.code).toBe(4);
  expect(broken.stderr).toContain(artifactId);
  expect(broken.stderr).toContain(shown.record.coldLocation!);
  expect(broken.stdout).toBe('');
});
