/**
 * Opens the built-in embedder in a fresh process and prints what it cost, as one JSON line:
 * `node --import tsx bench/lib/embedder-child.ts <cacheDir>`. Used by bench/embedder.ts, so a build's peak
 * memory and a cold load are measured without the benchmark's own heap.
 */
import { performance } from 'node:perf_hooks';
import { createBuiltinEmbedder } from '../../src/providers/builtin-embedder.js';

const started = performance.now();
const embedder = await createBuiltinEmbedder({ cacheDir: process.argv[2]! });
const openMs = performance.now() - started;
const [v] = await embedder.embed(['warm up the first call']);
process.stdout.write(
  JSON.stringify({
    openMs,
    isBuilt: embedder.cache.isBuilt,
    buildReason: embedder.cache.buildReason,
    dimensions: v!.length,
    rssMb: process.memoryUsage().rss / 1e6,
    // resourceUsage().maxRSS is in kilobytes: the peak of the whole process, the build included.
    maxRssMb: (process.resourceUsage().maxRSS * 1024) / 1e6,
  }) + '\n',
);
