/**
 * Benchmark entry point: `npm run bench -- <name> [options]`. Each benchmark writes its report to
 * bench/results/ (committed, so numbers in the README and issues can be traced to a run).
 */
import { parseArgs } from 'node:util';
import { runIngestRecall } from './ingest-recall.js';

const [name, ...rest] = process.argv.slice(2);
const { values } = parseArgs({
  args: rest,
  options: {
    sizes: { type: 'string', default: '10000,100000' },
    queries: { type: 'string', default: '300' },
    single: { type: 'string', default: '3000' },
    backends: { type: 'string', default: 'sqlite,postgres' },
    writers: { type: 'string', default: '1,2,4' },
    'writer-events': { type: 'string', default: '5000' },
  },
});

switch (name) {
  case 'ingest-recall':
    await runIngestRecall({
      sizes: values.sizes.split(',').map(Number),
      queries: Number(values.queries),
      single: Number(values.single),
      backends: values.backends.split(',') as Array<'sqlite' | 'postgres'>,
      writers: values.writers.split(',').map(Number),
      writerEvents: Number(values['writer-events']),
    });
    break;
  default:
    console.error(
      'usage: npm run bench -- ingest-recall [--sizes 10000,100000] [--queries 300] [--single 3000] [--backends sqlite,postgres] [--writers 1,2,4] [--writer-events 5000]',
    );
    process.exitCode = 2;
}
