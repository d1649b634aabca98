import { describe, expect, it } from 'vitest';
import { isEngramError } from '../../errors.js';
import { buildPreview, classifyContent, sniffMediaType } from './index.js';

const BUILD_LOG = [
  '',
  '> engram@0.1.0 build',
  '> tsc -p tsconfig.build.json',
  '',
  'npm warn Unknown user config "nodedir". This will stop working in the next major version of npm.',
  ...Array.from({ length: 40 }, (_, i) => `[tsc] checking src/module-${i}.ts (${i * 3} ms), ok`),
  "src/memory/recall.ts(88,14): error TS2322: Type 'string | undefined' is not assignable to type 'string'.",
  "  Type 'undefined' is not assignable to type 'string'.",
  '',
  'Found 1 error in src/memory/recall.ts:88',
  '',
  'npm error Lifecycle script `build` failed with error:',
  'npm error code 2',
  'npm error path /work/main',
  'npm error workspace engram@0.1.0',
  'npm error location /work/main',
  'npm error command failed',
  'npm error command sh -c tsc -p tsconfig.build.json',
  '',
  '',
].join('\n');

const API_RESPONSE = {
  id: 1296269,
  name: 'engram',
  full_name: 'octo/engram',
  private: false,
  owner: { login: 'octo', id: 1, type: 'User' },
  topics: ['memory', 'llm', 'agents'],
  license: { key: 'mit', name: 'MIT License' },
  open_issues_count: 7,
  default_branch: 'main',
};

const RG_OUTPUT = [
  'src/memory/ingest.ts-142-      const bytes = Buffer.from(v.binary.base64, "base64");',
  'src/memory/ingest.ts-143-      const id = artifactIdFromSha256(sha256Hex(bytes));',
  'src/memory/ingest.ts:144:      const previewOptions = { mediaType: v.binary.mediaType };',
  'src/memory/ingest.ts:145:      const preview = buildPreview(bytes, previewOptions);',
  'src/memory/ingest.ts-146-      artifacts.set(id, { bytes, mediaType: v.binary.mediaType });',
  '--',
  'src/memory/ingest.ts-153-      const hints = { maxChars: this.opts.previewMaxChars };',
  'src/memory/ingest.ts-154-      const mediaType = sniffMediaType(v.content, hints);',
  'src/memory/ingest.ts:155:      const preview = buildPreview(v.content, { ...hints, mediaType });',
  'src/memory/ingest.ts-156-      artifacts.set(id, { bytes, mediaType });',
  'src/memory/ingest.ts-157-      artifact = { id, mediaType, sizeBytes: bytes.byteLength };',
  '--',
  'src/model/artifact.ts-5-export type PreviewKind = (typeof PREVIEW_KINDS)[number];',
  'src/model/artifact.ts-6-',
  'src/model/artifact.ts:7:export interface Preview {',
  'src/model/artifact.ts-8-  kind: PreviewKind;',
  'src/model/artifact.ts-9-  /** The text kept inline in the event in place of the full content. */',
  '--',
  'src/store/sqlite/sqlite-backend.ts-482-      sizeBytes: row.artifact_size,',
  'src/store/sqlite/sqlite-backend.ts:484:      previewKind: (row.preview_kind ?? "tail") as PreviewKind,',
  'src/store/sqlite/sqlite-backend.ts-485-    };',
  '',
].join('\n');

const CSV = [
  'id,name,email,plan,created_at',
  '1,Ada Lovelace,ada@example.com,pro,2024-01-03',
  '2,"Hopper, Grace",grace@example.com,free,2024-02-11',
  ...Array.from({ length: 97 }, (_, i) => `${i + 3},User ${i + 3},user${i + 3}@example.com,free,2024-03-${String((i % 28) + 1).padStart(2, '0')}`),
  '',
].join('\n');

const TSV = [
  'commit\tauthor\tfiles\tinsertions\tdeletions',
  'a1b2c3d\tada\t3\t120\t4',
  'e4f5a6b\tgrace\t1\t2\t2',
  ...Array.from({ length: 47 }, (_, i) => `c0ffee${i}\tbot\t${i}\t${i * 2}\t0`),
].join('\n');

const MARKDOWN_TABLE = [
  '| Backend | Read p50 (ms) | Write p50 (ms) | Notes |',
  '|---------|--------------:|---------------:|-------|',
  '| sqlite  | 0.21 | 0.9 | WAL, one writer |',
  '| postgres | 0.85 | 1.4 | pooled, 8 conns |',
  '| memory | 0.01 | 0.02 | tests only |',
  '| sqlite-fts | 1.9 | 2.2 | with FTS5 rebuild |',
].join('\n');

const PROSE_WITH_COMMAS = [
  'Installing dependencies, this may take a while.',
  'Resolved 412 packages, 3 of them deprecated.',
  'Note: inflight, glob and rimraf are no longer supported.',
  'Linking binaries, running postinstall scripts.',
  'Done, 412 packages installed.',
  'Run npm fund for details, or npm audit to check for vulnerabilities.',
].join('\n');

const PNG_BYTES = new Uint8Array([
  0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
  0x00, 0x00, 0x03, 0x20, 0x00, 0x00, 0x02, 0x58, 0x08, 0x06, 0x00, 0x00, 0x00, ...new Array<number>(2048).fill(0x7a),
]);

describe('classifyContent', () => {
  it('treats a build log with an error at the end as a log', () => {
    expect(classifyContent(BUILD_LOG)).toBe('log');
  });

  it('detects pretty and minified JSON documents', () => {
    expect(classifyContent(JSON.stringify(API_RESPONSE, null, 2))).toBe('json');
    expect(classifyContent(JSON.stringify(API_RESPONSE))).toBe('json');
    expect(classifyContent(JSON.stringify([1, 2, 3]))).toBe('json');
  });

  it('detects JSON Lines when every non-empty line parses', () => {
    const jsonl = Array.from({ length: 5 }, (_, i) => JSON.stringify({ seq: i, level: 'info', msg: `step ${i}` })).join('\n');
    expect(classifyContent(`${jsonl}\n`)).toBe('json');
    expect(classifyContent(`${jsonl}\nnot json`)).toBe('log');
  });

  it('does not take bracketed log prefixes for JSON', () => {
    expect(classifyContent('[INFO] Scanning for projects...\n[ERROR] BUILD FAILURE\n[ERROR] -> [Help 1]')).toBe('log');
  });

  it('detects rg -n output with context lines and separators as grep', () => {
    expect(classifyContent(RG_OUTPUT)).toBe('grep');
  });

  it('detects grep -rn output and rg --heading output as grep', () => {
    const grepRn = ['lib/a.py:10:import os', 'lib/b.py:3:import os, sys', 'tests/test_a.py:1:import os'].join('\n');
    expect(classifyContent(grepRn)).toBe('grep');
    const heading = ['src/a.ts', '12:const a = 1;', '13-const b = 2;', '', 'src/b.ts', '4:export const a = 1;'].join('\n');
    expect(classifyContent(heading)).toBe('grep');
  });

  it('does not take timestamped log lines for grep output', () => {
    const log = [
      '2024-05-01T10:15:32Z INFO server started on :8080',
      '2024-05-01T10:15:33Z WARN slow query 812ms',
      '10:15:34 ERROR connection reset by peer',
      '10:15:35 INFO retrying in 5s',
    ].join('\n');
    expect(classifyContent(log)).toBe('log');
  });

  it('keeps pytest -v output, whose node ids contain paths, a log', () => {
    const pytest = [
      ...Array.from({ length: 30 }, (_, i) => `tests/test_recall.py::test_case_${i} PASSED  [${String(i * 3).padStart(3)}%]`),
      'tests/test_recall.py::test_deref FAILED  [ 99%]',
      '=========================== short test summary info ============================',
      'FAILED tests/test_recall.py::test_deref - AssertionError: assert 3 == 4',
    ].join('\n');
    expect(classifyContent(pytest)).toBe('log');
  });

  it('lowers the grep threshold when the Grep tool produced the output', () => {
    const mixed = ['src/a.ts:1:foo', 'src/b.ts:2:foo', 'warning: 2 files skipped', 'see the docs'].join('\n');
    expect(classifyContent(mixed)).toBe('log');
    expect(classifyContent(mixed, { toolName: 'Grep' })).toBe('grep');
  });

  it('detects CSV, TSV and markdown tables', () => {
    expect(classifyContent(CSV)).toBe('table');
    expect(classifyContent(TSV)).toBe('table');
    expect(classifyContent(MARKDOWN_TABLE)).toBe('table');
    expect(classifyContent('a;b;c\n1;2;3\n4;5;6\n7;8;9')).toBe('table');
  });

  it('keeps prose that merely contains commas a log', () => {
    expect(classifyContent(PROSE_WITH_COMMAS)).toBe('log');
  });

  it('keeps code ending in semicolons, tab-indented code and cat -n listings logs', () => {
    expect(classifyContent('const a = 1;\nconst b = 2;\nconst c = 3;\nfoo();')).toBe('log');
    expect(classifyContent('build:\n\tgo build ./...\n\tgo vet ./...\n\tgo test ./...')).toBe('log');
    expect(classifyContent('     1\timport os\n     2\timport sys\n     3\t\n     4\tprint(os.name)')).toBe('log');
  });

  it('detects binary from magic bytes, NUL bytes, invalid UTF-8 and declared media types', () => {
    expect(classifyContent(PNG_BYTES)).toBe('binary');
    expect(classifyContent(new Uint8Array([0x68, 0x69, 0x00, 0x21]))).toBe('binary');
    expect(classifyContent(new Uint8Array([0x68, 0xc3, 0x28, 0x69]))).toBe('binary');
    expect(classifyContent('plain words', { mediaType: 'image/jpeg' })).toBe('binary');
    expect(classifyContent('a\u0000b')).toBe('binary');
  });

  it('decodes UTF-8 bytes that are text and classifies the text', () => {
    const bytes = new TextEncoder().encode(JSON.stringify({ städte: ['Köln', 'Zürich'] }));
    expect(classifyContent(bytes)).toBe('json');
  });

  it('lets content decide when Read returns a .json file that is not valid JSON', () => {
    expect(classifyContent('{ "a": 1, // comment\n}', { toolName: 'Read', mediaType: 'application/json' })).toBe('log');
  });
});

describe('sniffMediaType', () => {
  it('names sniffed types from structure and magic bytes', () => {
    expect(sniffMediaType(JSON.stringify(API_RESPONSE))).toBe('application/json');
    expect(sniffMediaType(CSV)).toBe('text/csv');
    expect(sniffMediaType(TSV)).toBe('text/tab-separated-values');
    expect(sniffMediaType(BUILD_LOG)).toBe('text/plain');
    expect(sniffMediaType(PNG_BYTES)).toBe('image/png');
    expect(sniffMediaType(new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 0x10]))).toBe('image/jpeg');
    expect(sniffMediaType(new TextEncoder().encode('GIF89a\x01\x00'))).toBe('image/gif');
    expect(sniffMediaType(new TextEncoder().encode('RIFF\x10\x00\x00\x00WEBPVP8 '))).toBe('image/webp');
    expect(sniffMediaType(new TextEncoder().encode('%PDF-1.7\n'))).toBe('application/pdf');
    expect(sniffMediaType(new Uint8Array([0x50, 0x4b, 0x03, 0x04, 0x14]))).toBe('application/zip');
    expect(sniffMediaType(new Uint8Array([0x1f, 0x8b, 0x08, 0x00]))).toBe('application/gzip');
    expect(sniffMediaType(new Uint8Array([0x01, 0x00, 0xfe]))).toBe('application/octet-stream');
  });

  it('keeps a specific declared type and refines a generic text/plain one', () => {
    expect(sniffMediaType(CSV, { mediaType: 'application/vnd.ms-excel.csv' })).toBe('application/vnd.ms-excel.csv');
    expect(sniffMediaType(CSV, { mediaType: 'text/plain; charset=utf-8' })).toBe('text/csv');
  });
});

describe('buildPreview', () => {
  it('keeps the last 10 lines of a log, with the error, under a size header', () => {
    const preview = buildPreview(BUILD_LOG);
    const lines = preview.text.split('\n');
    expect(preview.kind).toBe('tail');
    const total = BUILD_LOG.split('\n').length - 1;
    expect(lines[0]).toBe(`[log: ${total} lines, ${(Buffer.byteLength(BUILD_LOG) / 1024).toFixed(1)} KB; last 10 lines]`);
    expect(lines.slice(1)).toEqual(BUILD_LOG.trimEnd().split('\n').slice(-10));
    expect(preview.text).toContain('npm error command sh -c tsc -p tsconfig.build.json');
    expect(preview.text).toContain('Found 1 error in src/memory/recall.ts:88');
  });

  it('shows a short log whole and strips ANSI colours', () => {
    const preview = buildPreview('\u001b[31merror\u001b[0m: boom\nexit 1\n');
    expect(preview.text).toBe('[log: 2 lines, 28 B]\nerror: boom\nexit 1');
  });

  it('shows a pretty JSON response as key count, first 5 lines, ... and last 2 lines', () => {
    const pretty = JSON.stringify(API_RESPONSE, null, 2);
    const preview = buildPreview(pretty);
    const lines = pretty.split('\n');
    expect(preview.kind).toBe('json');
    expect(preview.text).toBe(
      [
        `[json: object, 9 keys: id, name, full_name, private, owner, …; ${Buffer.byteLength(pretty)} B]`,
        ...lines.slice(0, 5),
        '...',
        ...lines.slice(-2),
      ].join('\n'),
    );
  });

  it('pretty-prints a minified JSON response before cutting its head and tail', () => {
    const minified = JSON.stringify(API_RESPONSE);
    const preview = buildPreview(minified);
    const text = preview.text.split('\n');
    expect(text[0]).toMatch(/^\[json: object, 9 keys: id, name/);
    expect(text.slice(1)).toEqual(['{', '  "id": 1296269,', '  "name": "engram",', '  "full_name": "octo/engram",', '  "private": false,', '...', '  "default_branch": "main"', '}']);
  });

  it('describes an array by its length and the keys of its first item', () => {
    const items = Array.from({ length: 120 }, (_, i) => ({ id: i, title: `issue ${i}`, state: 'open' }));
    const preview = buildPreview(JSON.stringify(items, null, 2));
    expect(preview.text.split('\n')[0]).toMatch(/^\[json: array, 120 items; first item: object, 3 keys: id, title, state; /);
  });

  it('counts JSON Lines records', () => {
    const jsonl = Array.from({ length: 1500 }, (_, i) => JSON.stringify({ seq: i, msg: `event ${i}` })).join('\n');
    const preview = buildPreview(jsonl);
    expect(preview.kind).toBe('json');
    expect(preview.text.split('\n')[0]).toMatch(/^\[json lines: 1,500 records; first record: object, 2 keys: seq, msg; /);
    expect(preview.text).toContain('{"seq":1499,"msg":"event 1499"}');
  });

  it('shows grep matches with their context lines and the match and file counts', () => {
    const preview = buildPreview(RG_OUTPUT, { maxChars: 4000 });
    expect(preview.kind).toBe('grep');
    const lines = preview.text.split('\n');
    expect(lines[0]).toBe(`[grep: 5 matches in 3 files, ${(Buffer.byteLength(RG_OUTPUT) / 1024).toFixed(1)} KB; all shown]`);
    expect(lines.slice(1)).toEqual(RG_OUTPUT.trimEnd().split('\n'));
  });

  it('keeps whole match groups, in output order, when not all fit', () => {
    const preview = buildPreview(RG_OUTPUT);
    const groups = RG_OUTPUT.trimEnd().split('\n--\n');
    expect(preview.text.length).toBeLessThanOrEqual(1200);
    // The third group does not fit in 1200 characters; the fourth, smaller one does.
    expect(preview.text).toBe(`[grep: 5 matches in 3 files, 1.4 KB; first 4 shown]\n${[groups[0], groups[1], groups[3]].join('\n--\n')}`);
  });

  it('prints grep -rn matches of consecutive files without inventing separators', () => {
    const grepRn = 'lib/a.py:10:import os\nlib/a.py:12:import re\nlib/b.py:3:import os, sys\n';
    expect(buildPreview(grepRn).text).toBe(`[grep: 3 matches in 2 files, 70 B; all shown]\n${grepRn.trimEnd()}`);
  });

  it('prefers grep groups containing the pattern when not all fit', () => {
    const preview = buildPreview(RG_OUTPUT, { pattern: 'previewkind', maxChars: 600 });
    expect(preview.text.length).toBeLessThanOrEqual(600);
    expect(preview.text).toContain('src/store/sqlite/sqlite-backend.ts:484:');
    expect(preview.text).toContain('src/model/artifact.ts:7:export interface Preview {');
    expect(preview.text).not.toContain('src/memory/ingest.ts:144:');
    expect(preview.text.split('\n')[0]).toMatch(/; first 2 shown\]$/);
  });

  it('keeps the file name of rg --heading output above the shown lines', () => {
    const lines = ['src/a.ts', ...Array.from({ length: 200 }, (_, i) => `${i + 1}:const value${i} = compute(${i});`)];
    const preview = buildPreview(lines.join('\n'), { maxChars: 300 });
    expect(preview.kind).toBe('grep');
    const [header, ...rest] = preview.text.split('\n');
    expect(header).toMatch(/^\[grep: 200 matches in 1 file, 6\.5 KB; first \d+ shown\]$/);
    expect(rest.slice(0, 3)).toEqual(['src/a.ts', '1:const value0 = compute(0);', '2:const value1 = compute(1);']);
  });

  it('shows a CSV header, its first 2 rows and the row count', () => {
    const preview = buildPreview(CSV);
    expect(preview.kind).toBe('table');
    expect(preview.text).toBe(
      [
        'id,name,email,plan,created_at',
        '1,Ada Lovelace,ada@example.com,pro,2024-01-03',
        '2,"Hopper, Grace",grace@example.com,free,2024-02-11',
        `[99 rows total; csv, 5 columns, ${(Buffer.byteLength(CSV) / 1024).toFixed(1)} KB]`,
      ].join('\n'),
    );
  });

  it('shows a TSV header, its first 2 rows and the row count', () => {
    const preview = buildPreview(TSV);
    expect(preview.text.split('\n')).toEqual([
      'commit\tauthor\tfiles\tinsertions\tdeletions',
      'a1b2c3d\tada\t3\t120\t4',
      'e4f5a6b\tgrace\t1\t2\t2',
      `[49 rows total; tsv, 5 columns, ${(Buffer.byteLength(TSV) / 1024).toFixed(1)} KB]`,
    ]);
  });

  it('keeps the rule line of a markdown table with its header', () => {
    const preview = buildPreview(MARKDOWN_TABLE);
    const lines = MARKDOWN_TABLE.split('\n');
    expect(preview.text.split('\n')).toEqual([...lines.slice(0, 4), `[4 rows total; pipe table, 4 columns, ${Buffer.byteLength(MARKDOWN_TABLE)} B]`]);
  });

  it('describes PNG bytes by type and size, keeps the caption and never the raw bytes', () => {
    const preview = buildPreview(PNG_BYTES, { caption: 'Screenshot: login form with a red "invalid token" banner' });
    expect(preview.kind).toBe('binary');
    expect(preview.text).toBe('[binary: image/png, 2.0 KB]\ncaption: Screenshot: login form with a red "invalid token" banner');
  });

  it('uses the declared media type for binary without magic bytes', () => {
    const preview = buildPreview(new Uint8Array([1, 2, 3, 0, 5]), { mediaType: 'audio/ogg' });
    expect(preview.text).toBe('[binary: audio/ogg, 5 B]');
  });

  it('honours maxChars on 5 MB inputs of every class', () => {
    const bigLog = Array.from({ length: 60_000 }, (_, i) => `step ${i}: ${'x'.repeat(i % 200)}`).join('\n') + '\nFATAL: out of memory';
    const bigCsv = 'a,b,c\n' + '1,2,3\n'.repeat(900_000);
    const bigGrep = 'src/x.ts:1:needle\n'.repeat(300_000);
    const bigJson = JSON.stringify({ items: Array.from({ length: 120_000 }, (_, i) => ({ id: i, name: `n${i}` })) });
    const bigJsonl = Array.from({ length: 100_000 }, (_, i) => JSON.stringify({ i, pad: 'y'.repeat(40) })).join('\n');
    const bigBinary = new Uint8Array(5 * 1024 * 1024);
    bigBinary.set(PNG_BYTES.subarray(0, 8));
    for (const [content, kind] of [
      [bigLog, 'tail'],
      [bigCsv, 'table'],
      [bigGrep, 'grep'],
      [bigJson, 'json'],
      [bigJsonl, 'json'],
      [bigBinary, 'binary'],
    ] as const) {
      for (const maxChars of [1200, 300, 40, 1]) {
        const preview = buildPreview(content, { maxChars });
        expect(preview.kind).toBe(kind);
        expect(preview.text.length).toBeLessThanOrEqual(maxChars);
        expect(preview.text.length).toBeGreaterThan(0);
      }
    }
    expect(buildPreview(bigLog).text).toContain('FATAL: out of memory');
    expect(buildPreview(bigCsv).text).toContain('[900,000 rows total; csv, 3 columns, 5.1 MB]');
    expect(buildPreview(bigGrep).text.split('\n')[0]).toMatch(/^\[grep: 300,000 matches in 1 file, 5.1 MB; first \d+ shown\]$/);
  });

  it('reports grep totals as lower bounds past the counting limit', () => {
    const huge = 'src/a.ts:1:needle\nsrc/b.ts:2:needle\n'.repeat(300_000);
    expect(buildPreview(huge).text.split('\n')[0]).toMatch(/^\[grep: ≥[\d,]+ matches in ≥2 files, 10\.3 MB; first \d+ shown\]$/);
  });

  it('recognises a JSON document too large to parse by its structure and names its first keys', () => {
    const big = JSON.stringify({ meta: { page: 1 }, results: Array.from({ length: 200_000 }, (_, i) => ({ id: i, v: 'z'.repeat(10) })) });
    expect(big.length).toBeGreaterThan(4 * 1024 * 1024);
    const preview = buildPreview(big);
    expect(preview.kind).toBe('json');
    const lines = preview.text.split('\n');
    expect(lines[0]).toMatch(/^\[json: object, keys not counted \([\d.]+ MB, too large to parse\); first keys: meta, results\]$/);
    expect(lines[1]!.startsWith('{"meta":{"page":1},"results":[')).toBe(true);
    expect(lines[lines.length - 1]!.endsWith('}]}')).toBe(true);
  });

  it('drops whole lines before cutting one mid-line', () => {
    const log = Array.from({ length: 30 }, (_, i) => `line ${String(i).padStart(2, '0')} ${'-'.repeat(30)}`).join('\n');
    const preview = buildPreview(log, { maxChars: 200 });
    const lines = preview.text.split('\n');
    expect(lines[0]).toMatch(/; last 4 lines\]$/);
    expect(lines.slice(1)).toEqual(log.split('\n').slice(-4));
  });

  it('truncates a long line with an ellipsis', () => {
    const preview = buildPreview(`short\n${'a'.repeat(5000)}\nend`);
    const long = preview.text.split('\n')[2]!;
    expect(long.endsWith('…')).toBe(true);
    expect(long.length).toBeLessThan(300);
  });

  it('is deterministic', () => {
    for (const sample of [BUILD_LOG, RG_OUTPUT, CSV, JSON.stringify(API_RESPONSE)]) {
      expect(buildPreview(sample, { maxChars: 500 })).toEqual(buildPreview(sample, { maxChars: 500 }));
    }
  });

  it('never returns an empty preview for empty or blank input', () => {
    expect(buildPreview('')).toEqual({ kind: 'tail', text: '[log: empty]' });
    expect(buildPreview(new Uint8Array(0))).toEqual({ kind: 'tail', text: '[log: empty]' });
    expect(buildPreview('\n\n  \n')).toEqual({ kind: 'tail', text: '[log: 3 lines, 5 B; all blank]' });
    expect(buildPreview('x', { maxChars: 1 }).text).toBe('…');
    expect(buildPreview('{}').text).toBe('[json: object, 0 keys; 2 B]\n{}');
  });

  it('rejects a maxChars that is not a positive integer, naming the field', () => {
    for (const maxChars of [0, -5, 1.5, Number.NaN]) {
      try {
        buildPreview('x', { maxChars });
        expect.unreachable();
      } catch (err) {
        expect(isEngramError(err, 'INVALID_INPUT')).toBe(true);
        expect((err as { data: { field: string } }).data.field).toBe('maxChars');
      }
    }
  });
});
