import { describe, expect, it } from 'vitest';
import { isEngramError } from '../errors.js';
import { thrown } from './resolvers/test-support.js';
import { MAX_CLAIM_CHARS, MAX_POINTERS_PER_ENGRAM, parseTtl, ttlExpiresAt, type EngramClaim } from '../model/engram.js';
import { validateEngram, validatePointer } from './validation.js';

const SHA = '3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39';

/**
 * The child-to-parent example of PAS Bus §7.1, as an engram object. The seed's page lost everything inside
 * angle brackets (`...#L280-L360@` where `@<sha>` was meant), and the YAML example leaves out the id and
 * provenance the schema requires, so those are filled in here.
 */
function seedEngram(): EngramClaim {
  return {
    id: '01JHZ3V8G6Q2W5X7Y9Z0A1B2C3',
    kind: 'risk',
    claim: 'Potential contradiction between SPEC budget rules and current gateway reservation flow.',
    confidence: 0.72,
    ttl: 'P7D',
    scope: 'project',
    pointers: [
      { type: 'artifact', ref: 'artifact:SPEC_Budget_Enforcement.md#sec=Rules@9f86d081' },
      { type: 'repo', ref: `repo:services/gateway/vendor_client.py#L280-L360@${SHA}` },
    ],
    provenance: { created_at: '2026-01-19T10:00:00Z', created_by: 'programmer-1', source: 'agent' },
  };
}

/** The field an INVALID_INPUT (or POINTER_INVALID) error from validateEngram names. */
function refusedField(input: unknown): unknown {
  const err = thrown(() => validateEngram(input));
  expect(['INVALID_INPUT', 'POINTER_INVALID']).toContain(err.code);
  return err.data.field;
}

describe('validateEngram', () => {
  it("accepts the seed's example engram (PAS Bus §7.1) and the seed's other pointer shapes", () => {
    expect(validateEngram(seedEngram())).toEqual(seedEngram());
    const withAll = {
      ...seedEngram(),
      tags: ['budget', 'gateway'],
      hash_keys: ['service:gateway', 'budget:reservation'],
      embedding_ref: 'emb:01JHZ3V8G6',
      pointers: [
        { type: 'repo', ref: `repo:path/to/file.py#L120-L188@${SHA}`, digest: 'e3b0c44298fc1c149afbf4c8996fb924', span: 'L120-L188' },
        { type: 'artifact', ref: 'artifact:SPEC_Foo.md#sec=BudgetRules@9f86d081' },
        { type: 'sam', ref: 'sam:decision:publish-domain@2026-01-08' },
        { type: 'diff', ref: `diff:${SHA}#services/ledger/reservation.py#L1-L220` },
        { type: 'test', ref: 'test:ledger/reservation.test.py::test_atomic' },
        { type: 'url', ref: 'url:https://json-schema.org/draft/2020-12/schema' },
      ],
    };
    expect(validateEngram(withAll).pointers).toHaveLength(6);
  });

  it('refuses extra properties, naming them, at every level', () => {
    expect(refusedField({ ...seedEngram(), summary: 'x' })).toBe('summary');
    expect(refusedField({ ...seedEngram(), provenance: { ...seedEngram().provenance, content_digest: 'x' } })).toBe('provenance.content_digest');
    expect(refusedField({ ...seedEngram(), pointers: [{ type: 'test', ref: 'test:a', excerpt: 'pasted' }] })).toBe('pointers[0].excerpt');
  });

  it(`refuses a claim of ${MAX_CLAIM_CHARS + 1} characters and accepts ${MAX_CLAIM_CHARS}`, () => {
    expect(refusedField({ ...seedEngram(), claim: 'x'.repeat(MAX_CLAIM_CHARS + 1) })).toBe('claim');
    expect(validateEngram({ ...seedEngram(), claim: 'x'.repeat(MAX_CLAIM_CHARS) }).claim).toHaveLength(MAX_CLAIM_CHARS);
    expect(refusedField({ ...seedEngram(), claim: '' })).toBe('claim');
  });

  it(`refuses 0 and ${MAX_POINTERS_PER_ENGRAM + 1} pointers`, () => {
    expect(refusedField({ ...seedEngram(), pointers: [] })).toBe('pointers');
    const many = Array.from({ length: MAX_POINTERS_PER_ENGRAM + 1 }, (_, i) => ({ type: 'test', ref: `test:t${i}` }));
    expect(refusedField({ ...seedEngram(), pointers: many })).toBe('pointers');
    expect(validateEngram({ ...seedEngram(), pointers: many.slice(0, MAX_POINTERS_PER_ENGRAM) }).pointers).toHaveLength(MAX_POINTERS_PER_ENGRAM);
  });

  it('refuses confidence outside 0..1', () => {
    expect(refusedField({ ...seedEngram(), confidence: 1.1 })).toBe('confidence');
    expect(refusedField({ ...seedEngram(), confidence: -0.01 })).toBe('confidence');
    expect(refusedField({ ...seedEngram(), confidence: '0.5' })).toBe('confidence');
    expect(validateEngram({ ...seedEngram(), confidence: 0 }).confidence).toBe(0);
  });

  it.each(['6 hours', 'P', 'PT', 'P1H', 'PT6h', '7D', 'P1W2D', ''])('refuses the TTL %j', (ttl) => {
    expect(refusedField({ ...seedEngram(), ttl })).toBe('ttl');
  });

  it.each(['PT6H', 'P7D', 'P1W', 'P1Y2M3DT4H5M6.5S', 'PT30M'])('accepts the TTL %s', (ttl) => {
    expect(validateEngram({ ...seedEngram(), ttl }).ttl).toBe(ttl);
  });

  it('refuses bad enums, scopes, provenance and missing required fields, naming each', () => {
    expect(refusedField({ ...seedEngram(), kind: 'opinion' })).toBe('kind');
    expect(refusedField({ ...seedEngram(), scope: 'team' })).toBe('scope');
    expect(refusedField({ ...seedEngram(), provenance: { ...seedEngram().provenance, source: 'llm' } })).toBe('provenance.source');
    expect(refusedField({ ...seedEngram(), provenance: { ...seedEngram().provenance, created_at: '2026-01-19 10:00' } })).toBe('provenance.created_at');
    const { ttl: _ttl, ...noTtl } = seedEngram();
    expect(refusedField(noTtl)).toBe('ttl');
    expect(refusedField({ ...seedEngram(), tags: ['x'.repeat(41)] })).toBe('tags[0]');
    expect(refusedField({ ...seedEngram(), hash_keys: Array.from({ length: 33 }, (_, i) => `k${i}`) })).toBe('hash_keys');
  });

  it('refuses pointers whose ref does not parse (PAS Bus §8.2), naming the pointer', () => {
    const engram = seedEngram();
    engram.pointers[1] = { type: 'repo', ref: 'repo:services/gateway/vendor_client.py#L280-L360@' };
    const err = thrown(() => validateEngram(engram));
    expect(err.code).toBe('POINTER_INVALID');
    expect(err.data).toMatchObject({ field: 'pointers[1].ref', reason: 'missing-commit' });
  });
});

describe('validatePointer', () => {
  it('checks structure then grammar, naming the field', () => {
    expect(validatePointer({ type: 'test', ref: 'test:a' })).toEqual({ type: 'test', ref: 'test:a' });
    expect(thrown(() => validatePointer({ type: 'file', ref: 'file:a' })).data.field).toBe('pointer.type');
    expect(thrown(() => validatePointer({ type: 'test', ref: 'x'.repeat(301) })).data.field).toBe('pointer.ref');
    expect(thrown(() => validatePointer({ type: 'test', ref: 'test:a', span: 'x'.repeat(81) })).data.field).toBe('pointer.span');
    const err = thrown(() => validatePointer({ type: 'repo', ref: 'repo:/etc/passwd@abcdef1' }));
    expect(isEngramError(err, 'POINTER_INVALID')).toBe(true);
  });
});

describe('TTL', () => {
  it('parses durations and computes expiry in UTC', () => {
    expect(parseTtl('P1Y2M3DT4H5M6.5S')).toEqual({ years: 1, months: 2, weeks: 0, days: 3, hours: 4, minutes: 5, seconds: 6.5 });
    expect(ttlExpiresAt('2026-01-19T10:00:00Z', 'PT6H').toISOString()).toBe('2026-01-19T16:00:00.000Z');
    expect(ttlExpiresAt('2026-01-19T10:00:00+02:00', 'P7D').toISOString()).toBe('2026-01-26T08:00:00.000Z');
    expect(ttlExpiresAt('2026-01-19T10:00:00Z', 'P1W').toISOString()).toBe('2026-01-26T10:00:00.000Z');
    expect(ttlExpiresAt('2026-01-19T10:00:00Z', 'P1M').toISOString()).toBe('2026-02-19T10:00:00.000Z');
    expect(thrown(() => parseTtl('7 days')).data.field).toBe('ttl');
  });
});
