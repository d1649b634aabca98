import { defineRoute, type Route } from './route.js';

/** The artifact lifecycle over HTTP (docs/storage.md, "Artifact lifecycle"): its counts, for admins. */
export const ARTIFACT_ROUTES: readonly Route[] = [
  defineRoute({
    method: 'get',
    path: '/v1/artifacts/stats',
    operationId: 'artifactStats',
    tag: 'admin',
    summary: 'Hot and cold artifacts and their bytes (admins only: it counts every project)',
    description:
      'Artifacts older than the lifecycle cut-off (`engram artifacts lifecycle`, or hourly in `engram serve`) are compressed harder and moved ' +
      'to the cold tier; their rows, previews and full-text entries stay, and reads rehydrate them byte-identical. ' +
      '`coldBytesBefore - coldStoredBytes` is what the recompression saved.',
    success: { status: 200, description: '`{ hot, cold, hotStoredBytes, coldStoredBytes, coldBytesBefore }`.' },
    errors: [403],
    isAdminOnly: true,
    handle: async ({ mem }) => ({ body: await mem.store.artifactTiers.counts() }),
  }),
];
