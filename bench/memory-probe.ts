/**
 * Preloaded into the server process by bench/paused-runs.ts (`node --require`): on SIGUSR2 it collects
 * the main thread's garbage, then writes the process's RSS and that thread's JS heap in use to the file
 * BENCH_MEMORY_PROBE_FILE names. A sample of RSS alone says little: V8 grows and shrinks its heap in
 * steps of tens of MiB on its own schedule, so samples of one unchanged process differed by ~150 MiB.
 * (Cached workflows live in the SDK's workflow thread, whose heap only the RSS counts.)
 */
import fs from 'node:fs';
import v8 from 'node:v8';
import vm from 'node:vm';

export interface MemorySample {
  rss_mib: number;
  heap_used_mib: number;
}

v8.setFlagsFromString('--expose-gc');
const collectGarbage = vm.runInNewContext('gc') as () => void;
const mib = (bytes: number) => Math.round(bytes / 2 ** 20);

process.on('SIGUSR2', () => {
  collectGarbage();
  const { rss, heapUsed } = process.memoryUsage();
  const sample: MemorySample = { rss_mib: mib(rss), heap_used_mib: mib(heapUsed) };
  fs.writeFileSync(process.env.BENCH_MEMORY_PROBE_FILE!, JSON.stringify(sample));
});
