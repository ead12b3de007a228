/** bench/results.json as a markdown table: bench/results.md, and the README's copy between its markers. */
import fs from 'node:fs';
import path from 'node:path';
import * as prettier from 'prettier';
import { projectRoot } from '../src/paths';
import type { MemorySample } from './memory-probe';
import type { Percentiles } from './stats';

const START = '<!-- bench:start -->';
const END = '<!-- bench:end -->';

type Results = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const ms = (p: Percentiles) => `${p.p50} / ${p.p95} / ${p.max} ms`;
const ratio = (a: number, b: number) => (b > 0 ? `${Math.round((a / b) * 10) / 10}×` : '–');
const verdict = (met: boolean) => (met ? 'met' : '**missed**');
const cpu = (run: Results) =>
  `CPU: server ${run.server_process_cpu_percent}%, Temporal ${run.temporal_server_cpu_percent}% (of one core)`;

function rows(r: Results): string[][] {
  const o = r.orchestration_overhead;
  const s = r.sandboxed_tool_call;
  const fresh = s.fresh_interpreter_per_call_ms as Percentiles;
  const mcp = (t: string) => r.mcp_tool_call[t];
  const a = r.approval_round_trip;
  const t = r.throughput;
  const memory = r.paused_runs_at_rest.server_memory_after_gc_by_paused_runs as Record<string, MemorySample>;
  const counts = Object.keys(memory);
  // Growth from the first count paused to the last; with one count, from none paused.
  const [fromCount, toCount] = [counts.length > 2 ? counts[1] : counts[0], counts.at(-1)!];
  const growth = (key: keyof MemorySample) => memory[toCount][key] - memory[fromCount][key];
  const signed = (n: number) => `${n >= 0 ? '+' : ''}${n} MiB`;
  return [
    [
      '1. Orchestration overhead per built-in tool call',
      ms(o.in_one_reply.per_call_ms),
      `direct call ${ms(o.direct_call_ms)}`,
      '≤ 10 ms p50',
      verdict(o.in_one_reply.per_call_ms.p50 <= 10),
    ],
    [
      '   one call per model turn: the model call through the engine too',
      ms(o.one_per_model_turn.per_call_ms),
      '',
      '',
      '',
    ],
    [
      '2. Sandboxed Python call, warm pool',
      ms(s.warm_pool.per_call_ms),
      `fresh interpreter ${ms(fresh)} (${ratio(s.warm_pool.per_call_ms.p50, fresh.p50)})`,
      '≤ 10 ms p50',
      verdict(s.warm_pool.per_call_ms.p50 <= 10),
    ],
    [
      '   cold sandbox per call',
      ms(s.cold_sandbox.per_call_ms),
      `${ratio(s.cold_sandbox.per_call_ms.p50, fresh.p50)} fresh interpreter`,
      '',
      '',
    ],
    ...['stdio', 'streamable_http'].map((transport) => [
      `3. MCP \`echo\` over ${transport}, through the engine`,
      ms(mcp(transport).engine.per_call_ms),
      `direct SDK call ${ms(mcp(transport).direct_sdk_call_ms)} (${ratio(mcp(transport).engine.per_call_ms.p50, mcp(transport).direct_sdk_call_ms.p50)})`,
      '',
      '',
    ]),
    [
      '4. Approval: POST → next model request',
      ms(a.post_to_next_model_request_ms),
      '',
      '≤ 50 ms p50',
      verdict(a.post_to_next_model_request_ms.p50 <= 50),
    ],
    ['   Approval: POST → its response', ms(a.post_to_response_ms), '', '', ''],
    [
      `5. Throughput: ${t.agents} agents × ${t.calls_per_agent} calls, each agent's in one reply`,
      `${t.in_one_reply.tool_calls_per_second} tool calls/s`,
      cpu(t.in_one_reply),
      '≥ 100 /s',
      verdict(t.in_one_reply.tool_calls_per_second >= 100),
    ],
    [
      '   one call per model turn: model calls too',
      `${t.one_per_model_turn.tool_calls_per_second} tool calls/s`,
      cpu(t.one_per_model_turn),
      '',
      '',
    ],
    [
      '6. Server memory (API and worker in one process, after a full GC) with runs paused',
      counts.map((c) => `${c}: ${memory[c].rss_mib} MiB`).join(', '),
      `${fromCount} → ${toCount}: RSS ${signed(growth('rss_mib'))}, ` +
        `JS heap in use ${signed(growth('heap_used_mib'))}`,
      'no growth',
      verdict(growth('rss_mib') <= 20 && growth('heap_used_mib') <= 20),
    ],
  ];
}

export function reportMarkdown(r: Results): string {
  const m = r.machine;
  const table = [
    '| figure | p50 / p95 / max | baseline, side by side | target | |',
    '| --- | --- | --- | --- | --- |',
    ...rows(r).map((row) => `| ${row.join(' | ')} |`),
  ];
  return [
    `Measured ${m.date} by \`npm run bench\` (${r.seconds} s) on ${m.cores} cores (${m.cpu}), ${m.memory_gib} GiB, Node ${m.node}; the embedded Temporal dev server and local PostgreSQL, the model a local stub answering at once.`,
    '',
    ...table,
    '',
  ].join('\n');
}

/** Written as `npm run format` would write it, so that lint passes after a bench run. */
async function writeFormatted(file: string, text: string): Promise<void> {
  const options = await prettier.resolveConfig(file);
  fs.writeFileSync(file, await prettier.format(text, { ...options, filepath: file }));
}

export async function writeReport(r: Results): Promise<void> {
  const markdown = reportMarkdown(r);
  await writeFormatted(path.join(projectRoot, 'bench', 'results.md'), markdown);
  const readme = path.join(projectRoot, 'README.md');
  const text = fs.readFileSync(readme, 'utf8');
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  if (start < 0 || end < start) return;
  await writeFormatted(readme, `${text.slice(0, start + START.length)}\n\n${markdown}\n${text.slice(end)}`);
}
