/** bench/results.json as a markdown table: bench/results.md. */
import fs from 'node:fs';
import path from 'node:path';
import * as prettier from 'prettier';
import { projectRoot } from '../src/paths';
import type { MemorySample } from './memory-probe';
import type { Percentiles } from './stats';
import type { HistorySize } from './history';
import { targets } from './baseline';

type Results = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const ms = (p: Percentiles) => `${p.p50} / ${p.p95} / ${p.max} ms`;
const ratio = (a: number, b: number) => (b > 0 ? `${Math.round((a / b) * 10) / 10}×` : '–');
const verdict = (met: boolean) => (met ? 'met' : '**missed**');
const cpu = (run: Results) =>
  `CPU: server ${run.server_process_cpu_percent}%, Temporal ${run.temporal_server_cpu_percent}%${run.postgres_cpu_percent === undefined ? '' : `, PostgreSQL ${run.postgres_cpu_percent}%`} (of one core)`;

const times = (n: number) => `${n}×`;
/** A paired difference's percentiles, each with its sign. */
const signed = (p: Percentiles) =>
  `${[p.p50, p.p95, p.max].map((v) => (v < 0 ? `${v}` : `+${v}`)).join(' / ')} ms`;
/** A throughput figure's rounds, lowest to highest: the figure is their median. */
const spread = (rates: number[]) => `${Math.min(...rates)}–${Math.max(...rates)}`;

function rows(r: Results): string[][] {
  const b = r.baseline;
  const x = b.multiples;
  const o = r.orchestration_overhead;
  const s = r.sandboxed_tool_call;
  const fresh = s.fresh_interpreter_per_call_ms as Percentiles;
  const mcp = (t: string) => r.mcp_tool_call[t];
  const a = r.approval_round_trip;
  const t = r.throughput;
  const p = r.plain_agent_step;
  const memory = r.paused_runs_at_rest?.server_memory_after_gc_by_paused_runs as
    Record<string, MemorySample> | undefined;
  return [
    ['0. Bare Temporal: workflow of one no-op activity', ms(b.one_activity_workflow_ms), '', ''],
    [
      '   one more no-op activity / local activity',
      `${ms(b.activity_ms)} / ${ms(b.local_activity_ms)}`,
      '',
      '',
    ],
    [
      "   one more no-op activity on another worker's task queue (no eager dispatch)",
      ms(b.activity_on_tool_queue_ms),
      '',
      '',
    ],
    [
      `   ${t.agents} workflows × ${t.calls_per_agent} activities at once / local ones`,
      `${b.activities_per_second} / ${b.local_activities_per_second} activities/s`,
      `rounds ${spread(b.activities_per_second_by_round)} / ${spread(b.local_activities_per_second_by_round)}`,
      '',
    ],
    [
      '1. Plain agent turn (one step: one model call), paired with the one-activity workflow',
      ms(p.step_ms),
      `workflow ${ms(p.one_activity_workflow_ms)}`,
      `${p.ratio.p50} / ${p.ratio.p95} / ${p.ratio.max}×`,
    ],
    [
      '2. Built-in tool call (`memory_insert`), calls in one reply',
      ms(o.in_one_reply.per_call_ms),
      `direct call ${ms(o.direct_call_ms)}; per round, over it: ${signed(o.in_one_reply.over_baseline_ms)}`,
      `${times(x.builtin_call_over_local_activity)} local activity (a built-in call is one)`,
    ],
    [
      '   one call per model reply: the model call through the engine too',
      ms(o.one_per_model_turn.per_call_ms),
      '',
      '',
    ],
    [
      '3. Sandboxed Python call, warm',
      ms(s.warm_pool.per_call_ms),
      `one more regular activity ${ms(s.warm_pool.activity_floor_ms)}, on a tool's queue ${ms(s.warm_pool.tool_queue_floor_ms)}; fresh interpreter ${ms(fresh)}`,
      `${times(x.sandboxed_call_over_regular_activity)} regular activity`,
    ],
    [
      "   the sandbox's own work: per round, over one more regular activity",
      signed(s.own_work_ms),
      `per round, of a fresh interpreter: ${times(s.own_work_over_fresh_interpreter_ratio.p50)}; over one on a tool's queue: ${signed(s.own_work_over_tool_queue_floor_ms)}`,
      `${times(x.sandbox_own_work_over_fresh_interpreter)} fresh interpreter`,
    ],
    ...(s.cold_sandbox
      ? [
          [
            '   cold sandbox per call',
            ms(s.cold_sandbox.per_call_ms),
            `${ratio(s.cold_sandbox.per_call_ms.p50, fresh.p50)} fresh interpreter`,
            '',
          ],
        ]
      : []),
    ...[
      ['stdio', x.mcp_stdio_call_over_regular_activity],
      ['streamable_http', x.mcp_http_call_over_regular_activity],
    ].map(([transport, multiple]) => [
      `4. MCP \`echo\` over ${transport}, through the engine`,
      ms(mcp(transport).engine.per_call_ms),
      `per round, over one more regular activity: ${signed(mcp(transport).engine.over_activity_floor_ms)}, on a tool's queue: ${signed(mcp(transport).engine.over_tool_queue_floor_ms)}; over the direct SDK call (${ms(mcp(transport).direct_sdk_call_ms)}): ${signed(mcp(transport).engine.over_baseline_ms)}`,
      `${times(multiple)} regular activity`,
    ]),
    [
      '5. Throughput: ' + `${t.agents} agents × ${t.calls_per_agent} calls, each agent's in one reply`,
      `${t.in_one_reply.tool_calls_per_second} tool calls/s`,
      `rounds ${spread(t.in_one_reply.tool_calls_per_second_by_round)}; ${cpu(t.in_one_reply)}`,
      `${times(x.throughput_over_regular_activities)} regular activities`,
    ],
    [
      '   one call per model reply: model calls too',
      `${t.one_per_model_turn.tool_calls_per_second} tool calls/s`,
      `rounds ${spread(t.one_per_model_turn.tool_calls_per_second_by_round)}; ${cpu(t.one_per_model_turn)}`,
      '',
    ],
    [
      'Approval: POST → next model request / → its response',
      `${ms(a.post_to_next_model_request_ms)} / ${ms(a.post_to_response_ms)}`,
      '',
      `${times(x.approval_to_model_over_one_activity_workflow)} one-activity workflow`,
    ],
    ...historyRows(r),
    ...streamingRows(r),
    ...(memory
      ? [
          [
            'Server memory (API and worker in one process, after a full GC) with runs paused',
            Object.keys(memory)
              .map((c) => `${c}: ${memory[c].rss_mib} MiB`)
              .join(', '),
            Object.keys(memory)
              .map((c) => `heap ${memory[c].heap_used_mib} MiB`)
              .join(', '),
            '',
          ],
        ]
      : []),
  ];
}

/** A history's size: events, encoded bytes, Temporal Cloud billable actions. */
const size = (h: HistorySize) => `${h.events} events, ${h.bytes} bytes, ${h.billable_actions} actions`;

/** What Temporal stores and bills per plain turn and per tool call, and what a slow model call adds. */
function historyRows(r: Results): string[][] {
  const h = r.history_per_step;
  const slow = r.slow_model_call_history;
  return [
    ...(h
      ? [
          ['History of a plain turn', size(h.plain_step), '', ''],
          ['   per built-in call (a local activity)', size(h.builtin_call), '', ''],
          ['   per sandboxed call (a regular activity)', size(h.sandboxed_call), '', ''],
        ]
      : []),
    ...(slow
      ? [
          [
            `History of a plain turn whose model call takes ${slow.model_delay_ms / 1000} s`,
            size(slow.slow_step),
            `instant: ${size(slow.instant_step)}`,
            `+${slow.added_events} events`,
          ],
        ]
      : []),
  ];
}

/** A streamed token's trip from the model to the client, at one turn and at 16 at once. */
function streamingRows(r: Results): string[][] {
  const figures = r.streaming?.token_to_client_ms as
    Record<string, Percentiles & { p99: number; load_average: number }> | undefined;
  if (!figures) return [];
  return Object.entries(figures).map(([key, p], i) => [
    i
      ? `   ${key.replace('streams_', '')} turns at once`
      : `Streamed token, model to client (\`stream_tokens\`): ${key.replace('streams_', '')} turn`,
    `${ms(p)} (p99 ${p.p99} ms)`,
    `load average ${p.load_average} on ${r.streaming.cores} cores`,
    '',
  ]);
}

/** Hand-written: where the time goes, from profiles, for the targets a run misses. */
const PROFILE_NOTES = path.join(projectRoot, 'bench', 'where-the-time-goes.md');

/** The tables: measured figures, then targets. `withNotes` adds where-the-time-goes.md. */
export function reportMarkdown(r: Results, withNotes = true): string {
  const m = r.machine;
  const table = [
    '| figure | p50 / p95 / max | side by side | as a multiple of its baseline |',
    '| --- | --- | --- | --- |',
    ...rows(r).map((row) => `| ${row.join(' | ')} |`),
  ];
  const goals = [
    '| target | this run | goal | |',
    '| --- | --- | --- | --- |',
    ...targets(r).map((g) => `| ${g.figure} | ${g.value} | ${g.target} | ${verdict(g.met)} |`),
  ];
  return [
    `Measured ${m.date} by \`npm run bench\` (${r.seconds} s) on ${m.cores} cores (${m.cpu}), ${m.memory_gib} GiB, Node ${m.node}; the embedded Temporal dev server and local PostgreSQL, the model a local stub answering at once. ${r.method.repetitions} timed repetitions after ${r.method.warm_up_runs} untimed ones; every percentile is of per-sample values (a per-call figure: each pair of turns' difference; its difference from, or ratio to, its baseline: each round's against the same round's baseline runs). A throughput is the median of ${r.method.throughput_rounds} timed rounds after an untimed one.`,
    '',
    ...table,
    '',
    ...goals,
    '',
    ...(withNotes && fs.existsSync(PROFILE_NOTES) ? [fs.readFileSync(PROFILE_NOTES, 'utf8')] : []),
  ].join('\n');
}

/** Written as `npm run format` would write it, so that lint passes after a bench run. */
export async function writeFormatted(file: string, text: string): Promise<void> {
  const options = await prettier.resolveConfig(file);
  fs.writeFileSync(file, await prettier.format(text, { ...options, filepath: file }));
}

export async function writeReport(r: Results): Promise<void> {
  const markdown = reportMarkdown(r);
  await writeFormatted(path.join(projectRoot, 'bench', 'results.md'), markdown);
}

/** `npm run bench:report`: bench/results.md again from results.json, after where-the-time-goes.md or a label changed. */
if (require.main === module) {
  const recorded = JSON.parse(
    fs.readFileSync(path.join(projectRoot, 'bench', 'results.json'), 'utf8'),
  ) as Results;
  writeReport(recorded).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
