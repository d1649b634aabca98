import { monotonicFactory } from 'ulid';

declare const brand: unique symbol;
/** A string id of one kind; ids of different kinds cannot be mixed up at compile time. */
export type Branded<T, B extends string> = T & { readonly [brand]: B };

export type EventId = Branded<string, 'EventId'>;
export type ArtifactId = Branded<string, 'ArtifactId'>;
export type SessionId = Branded<string, 'SessionId'>;

export const EVENT_ID_PREFIX = 'evt_';
export const ARTIFACT_ID_PREFIX = 'art_';

const nextUlid = monotonicFactory();

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

/** Session ids are chosen by the caller (e.g. a Claude Code session uuid), within a safe alphabet. */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/;
