import { randomFillSync } from 'node:crypto';
import { monotonicFactory } from 'ulid';

declare const brand: unique symbol;
/** A string id of one kind; ids of different kinds cannot be mixed up at compile time. */
export type Branded<T, B extends string> = T & { readonly [brand]: B };

export type EventId = Branded<string, 'EventId'>;
export type ArtifactId = Branded<string, 'ArtifactId'>;
export type SessionId = Branded<string, 'SessionId'>;

export const EVENT_ID_PREFIX = 'evt_';
export const ARTIFACT_ID_PREFIX = 'art_';

/** Crypto-random bytes the ULIDs' random parts are drawn from, refilled a pool at a time. */
const randomPool = new Uint8Array(4096);
let randomAt = randomPool.length;

/**
 * ulid's source of randomness, as its default (a crypto-random byte / 256 per character) but read from a pool: the
 * default asks Web Crypto for one byte per character, 16 calls per id drawn in a new millisecond, about 130 us per
 * id on Node 20 (an ad-hoc loop of 50,000 ids: 130-160 us per id, 1.5 us pooled); under `engram serve` with 32
 * agents appending that was ~2 % of the server's CPU (bench/results/http-load-profile.md).
 */
function pooledRandom(): number {
  if (randomAt === randomPool.length) {
    randomFillSync(randomPool);
    randomAt = 0;
  }
  return randomPool[randomAt++]! / 256;
}

const nextUlid = monotonicFactory(pooledRandom);

/** New event id: `evt_` + a ULID, so ids sort by creation time. */
export function newEventId(nowMs: number = Date.now()): EventId {
  return `${EVENT_ID_PREFIX}${nextUlid(nowMs).toLowerCase()}` as EventId;
}

/** Artifacts are content-addressed: the id is derived from the sha256 of their bytes. */
export function artifactIdFromSha256(sha256Hex: string): ArtifactId {
  return `${ARTIFACT_ID_PREFIX}${sha256Hex}` as ArtifactId;
}

export function isEventId(value: string): value is EventId {
  return /^evt_[0-9a-z]{26}$/.test(value);
}

export function isArtifactId(value: string): value is ArtifactId {
  return /^art_[0-9a-f]{64}$/.test(value);
}

/**
 * Session ids are chosen by the caller (e.g. a Claude Code session uuid), within a safe alphabet; an id may start
 * with a project's qualifier and `~` (`shop~alice`), the form of a session an agent keeps in its project's own
 * name space (model/session-names.ts). `~` is outside the alphabet of names, so no chosen name is ever qualified.
 */
export const SESSION_ID_PATTERN = /^(?:[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}~)?[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/;
