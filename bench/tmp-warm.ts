import { performance } from 'node:perf_hooks';
import { openEngram } from '../src/engine.js';
import { runClaudeCodeHook } from '../src/interfaces/claude-code/hook-handlers.js';
const cwd = '/tmp/engram-carry-over-mxXv31/latency-100000/shop';
const t0 = performance.now();
const mem = await openEngram({ db: '/tmp/warm/engram.db' } as never);
console.log('open', (performance.now() - t0).toFixed(1));
for (let i = 0; i < 8; i++) {
  const sid = `warm-${Date.now()}-${i}`;
  let t = performance.now();
  const a = await runClaudeCodeHook(mem, 'session-start', { session_id: sid, transcript_path: null, cwd, source: 'startup' } as never, {});
  const s = performance.now() - t; t = performance.now();
  const b = await runClaudeCodeHook(mem, 'user-prompt-submit', { session_id: sid, transcript_path: null, cwd, prompt: 'why does the checkout test fail on the cart total' } as never, {});
  const u = performance.now() - t; t = performance.now();
  await runClaudeCodeHook(mem, 'stop', { session_id: sid, transcript_path: null, cwd } as never, {});
  const st = performance.now() - t; t = performance.now();
  await runClaudeCodeHook(mem, 'session-end', { session_id: sid, transcript_path: null, cwd } as never, {});
  const e = performance.now() - t;
  console.log(`start ${s.toFixed(1)} (${a.stdout?.length}) prompt ${u.toFixed(1)} (${b.stdout?.length ?? 0}) stop ${st.toFixed(1)} end ${e.toFixed(1)}`);
}
