/**
 * Every figure as a multiple of its bare-Temporal baseline (results.json's `baseline`), the issue's
 * targets checked against one run, and the quick mode's check: a multiple more than
 * QUICK_TOLERANCE times worse than the recorded one is a regression.
 */
import type { Percentiles } from './stats';

type Results = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** How much worse than recorded a multiple may come out in a quick run before it fails CI. */
export const QUICK_TOLERANCE = 3;

const round = (value: number) => Math.round(value * 100) / 100;

interface Multiple {
  /** The figure over its baseline, from a run's results. */
  of(r: Results): number;
  /** Whether a larger multiple is better (throughput); otherwise smaller is. */
  higherIsBetter?: boolean;
  /**
   * Not checked by the quick mode: it divides a figure that moves with the machine's process
   * creation by one that does not, so it differs across machines by more than any tolerance would
   * forgive; a multiple of the same figure that does is checked instead.
   */
  unchecked?: true;
}

const p50 = (p: Percentiles) => p.p50;
const mcp = (r: Results, transport: string) => p50(r.mcp_tool_call[transport].engine.per_call_ms);

/**
 * What each multiple divides: the figure, then the baseline run in the same process. Tool calls other
 * than the built-in ones run as regular activities, so their floor is one more bare regular activity;
 * names say which floor, so that a multiple recorded against another does not pass for this one.
 */
export const MULTIPLES: Record<string, Multiple> = {
  plain_agent_step_over_one_activity_workflow: { of: (r) => p50(r.plain_agent_step.ratio) },
  // Built-in memory tools stay local activities: one database transaction each.
  builtin_call_over_local_activity: {
    of: (r) =>
      p50(r.orchestration_overhead.in_one_reply.per_call_ms) / p50(r.bare_temporal.local_activity_ms),
  },
  sandboxed_call_over_regular_activity: {
    of: (r) => p50(r.sandboxed_tool_call.warm_pool.per_call_ms) / p50(r.bare_temporal.activity_ms),
    unchecked: true,
  },
  // Both are process creation, whose cost differs about fivefold between 2-core VMs.
  sandbox_own_work_over_fresh_interpreter: {
    of: (r) => p50(r.sandboxed_tool_call.own_work_over_fresh_interpreter_ratio),
  },
  mcp_stdio_call_over_regular_activity: { of: (r) => mcp(r, 'stdio') / p50(r.bare_temporal.activity_ms) },
  mcp_http_call_over_regular_activity: {
    of: (r) => mcp(r, 'streamable_http') / p50(r.bare_temporal.activity_ms),
  },
  approval_to_model_over_one_activity_workflow: {
    of: (r) =>
      p50(r.approval_round_trip.post_to_next_model_request_ms) /
      p50(r.bare_temporal.one_activity_workflow_ms),
  },
  throughput_over_regular_activities: {
    of: (r) => r.throughput.in_one_reply.tool_calls_per_second / r.bare_temporal.activities_per_second,
    higherIsBetter: true,
  },
};

/** results.json's `baseline`: the bare-Temporal figures and every figure as a multiple of them. */
export function baselineMultiples(r: Results) {
  return {
    ...r.bare_temporal,
    multiples: Object.fromEntries(Object.entries(MULTIPLES).map(([name, m]) => [name, round(m.of(r))])),
  };
}

export interface Target {
  figure: string;
  value: string;
  target: string;
  met: boolean;
}

/** A slow model call's history events over an instant one's, when the run measured it. */
function slowModelCall(r: Results): Target[] {
  const slow = r.slow_model_call_history;
  if (!slow) return [];
  return [
    {
      figure: `history of a ${slow.model_delay_ms / 1000} s model call`,
      value: `+${slow.added_events} events`,
      target: '≤ 10 events more than an instant one',
      met: slow.added_events <= 10,
    },
  ];
}

/** A token's trip from the model to the client at 16 turns streaming at once, when the run measured it. */
function streaming(r: Results): Target[] {
  const many = r.streaming?.token_to_client_ms.streams_16;
  if (!many) return [];
  return [
    {
      figure: 'a streamed token, model to client, 16 turns streaming at once',
      value: `${many.p50} ms p50, ${many.p99} ms p99`,
      target: `≤ ${r.streaming.target_p50_ms} ms p50`,
      met: many.p50 <= r.streaming.target_p50_ms,
    },
  ];
}

/** The targets, each a ratio or a difference against a baseline of the same run. */
export function targets(r: Results): Target[] {
  const o = r.orchestration_overhead;
  const s = r.sandboxed_tool_call;
  // Each round's per-call figure against its baselines in the same round (suite.ts).
  const builtin = p50(o.in_one_reply.over_baseline_ms);
  const ownWork = p50(s.own_work_ms);
  const ofFresh = p50(s.own_work_over_fresh_interpreter_ratio);
  const plain = p50(r.plain_agent_step.ratio);
  const rate = r.throughput.in_one_reply.tool_calls_per_second;
  const ofBare = round(rate / r.bare_temporal.activities_per_second);
  return [
    {
      figure: 'plain agent turn (one step)',
      value: `${plain}×`,
      target: '≤ 1.5× one-activity workflow',
      met: plain <= 1.5,
    },
    {
      figure: 'built-in tool call',
      value: `+${builtin} ms`,
      target: '≤ direct call + 5 ms',
      met: builtin <= 5,
    },
    {
      figure: "warm sandboxed Python call, the sandbox's own work (over one more regular activity)",
      value: `${ownWork} ms, ${ofFresh}× fresh interpreter`,
      target: '≤ 10 ms and ≤ 0.25× fresh interpreter',
      met: ownWork <= 10 && ofFresh <= 0.25,
    },
    ...['stdio', 'streamable_http'].map((transport) => {
      const over = p50(r.mcp_tool_call[transport].engine.over_activity_floor_ms);
      return {
        figure: `MCP call over ${transport}`,
        value: `+${over} ms`,
        target: '≤ one more bare regular activity + 3 ms',
        met: over <= 3,
      };
    }),
    ...slowModelCall(r),
    ...streaming(r),
    {
      figure: 'throughput',
      value: `${rate} tool calls/s, ${ofBare}× bare regular activities`,
      target: '≥ 0.8× bare regular activities/s',
      met: ofBare >= 0.8,
    },
  ];
}

/** Whether a quick run's multiples stay within QUICK_TOLERANCE of the recorded ones; says which do not. */
export function checkQuick(quick: Results, recorded: Results): boolean {
  const before = recorded.baseline?.multiples as Record<string, number> | undefined;
  if (!before) {
    console.log('quick bench: bench/results.json records no multiples yet; nothing to compare');
    return true;
  }
  let ok = true;
  for (const [name, multiple] of Object.entries(MULTIPLES)) {
    const now = quick.baseline.multiples[name] as number;
    if (before[name] === undefined) {
      console.log(`—  ${name}: ${now} (not in the recorded results.json; not checked)`);
      continue;
    }
    if (multiple.unchecked) {
      console.log(`—  ${name}: ${now} (recorded ${before[name]}; not checked: varies across machines)`);
      continue;
    }
    const worse = multiple.higherIsBetter ? before[name] / now : now / before[name];
    const regressed = worse > QUICK_TOLERANCE;
    ok &&= !regressed;
    console.log(`${regressed ? 'REGRESSION' : 'ok'}  ${name}: ${now} (recorded ${before[name]})`);
  }
  return ok;
}
