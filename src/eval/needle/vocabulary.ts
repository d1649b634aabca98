/**
 * Words of the synthetic traces: the components of an imagined product, files, people, technologies and
 * reasons. Needles and flood draw on the same words, so a probe's words also occur around distractors.
 */
import type { Prng } from '../../util/prng.js';

export const COMPONENTS = [
  'checkout', 'billing', 'search', 'inventory', 'auth', 'notifications', 'orders',
  'payments', 'reporting', 'gateway', 'scheduler', 'ingest', 'shipping', 'catalog',
] as const;

export const FILES = [
  'client', 'pool', 'router', 'handler', 'schema', 'index', 'worker', 'config', 'service',
  'model', 'queue', 'retry', 'session', 'mapper', 'validator', 'cache',
] as const;

export const AUTHORS = ['Mina Okafor', 'Jonas Berg', 'Priya Raman', 'Luis Ortega', 'Hana Sato', 'Tom Becker'] as const;

export const COMMIT_VERBS = ['fix', 'feat', 'chore', 'refactor', 'perf', 'build', 'test'] as const;
export const COMMIT_TOPICS = [
  'bump eslint config', 'pin lockfile resolution', 'add retry banner', 'switch to node 20 base image',
  'drop legacy flag', 'move mapper into its own module', 'tighten schema validation', 'cache tenant lookups',
  'rename queue topic', 'split router by version', 'update snapshot tests', 'log request ids',
] as const;

export const JOBS = ['sync', 'backfill', 'export', 'reindex', 'reconcile', 'digest'] as const;
export const ERROR_CODES = ['ECONNREFUSED', 'ETIMEDOUT', 'ECONNRESET', 'EHOSTUNREACH'] as const;
export const PROPS = ['amount', 'tenantId', 'currency', 'items', 'userId', 'status', 'address'] as const;
export const NOUNS = ['refund', 'invoice', 'cart', 'export', 'webhook', 'retry', 'batch'] as const;

/** Technology choices: the chosen option, the rejected one, and what the decision is for. */
export const CHOICES = [
  ['PostgreSQL', 'MySQL', 'event store'],
  ['Redis', 'Memcached', 'session cache'],
  ['Kafka', 'RabbitMQ', 'event bus'],
  ['gRPC', 'REST', 'internal API'],
  ['esbuild', 'webpack', 'bundler'],
  ['SQLite', 'LevelDB', 'local index'],
  ['Vitest', 'Jest', 'test runner'],
  ['pnpm', 'yarn', 'package manager'],
] as const;

/** Reasons a decision names; two are joined with "and" into one rationale. */
export const REASONS = [
  'JSONB support', 'better concurrent write performance', 'native TTL eviction', 'lower tail latency under load',
  'exactly-once delivery with transactions', 'a smaller install footprint', 'faster cold builds',
  'schema evolution without downtime', 'first-class TypeScript types', 'simpler failover with replicas',
  'cheaper cross-region replication', 'streaming responses', 'built-in snapshot testing', 'strict dependency isolation',
  'a single-file deployment', 'mature backup tooling',
] as const;

/** Design decisions that are not a technology choice: what is kept, what lost, and a full reason clause. */
export const DESIGN_CHOICES = [
  ['polling', 'webhooks', 'the partner API drops webhook deliveries during deploys'],
  ['optimistic locking', 'row locks', 'the hot rows see a few conflicting writes per hour at most'],
  ['a nightly batch', 'per-event updates', 'the ledger export must match the bank cut-off exactly'],
  ['UUIDv7 keys', 'sequential ids', 'tenants merge shards and sequential ids would collide'],
  ['server-side rendering', 'a client bundle', 'the checkout page must work without JavaScript for the payment redirect'],
  ['an outbox table', 'direct publishing', 'a crash between commit and publish lost 14 events last quarter'],
] as const;

export const IP_PREFIXES = ['10.0.3', '10.0.4', '10.2.1', '172.16.8', '192.168.40'] as const;
export const PORTS = [5432, 6379, 9092, 8080, 27017, 5672, 9200, 3306] as const;

export function sourcePath(rng: Prng, component: string): string {
  return `src/${component}/${rng.pick(FILES)}.ts`;
}

export function ipAddress(rng: Prng): string {
  return `${rng.pick(IP_PREFIXES)}.${rng.int(2, 250)}`;
}

/** A commit subject such as `fix(billing): pin lockfile resolution`. */
export function commitSubject(rng: Prng, component: string): string {
  return `${rng.pick(COMMIT_VERBS)}(${component}): ${rng.pick(COMMIT_TOPICS)}`;
}

export function isoTime(baseMs: number, offsetSeconds: number): string {
  return new Date(baseMs + offsetSeconds * 1000).toISOString();
}
