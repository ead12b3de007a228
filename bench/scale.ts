/**
 * How far one machine and one cluster go, in one run (`npm run bench:scale`, not part of CI; about 80
 * minutes on two cores on Node 24, most of it pausing 100,000 turns):
 *
 *   1. the suite (`npm run bench`): the per-call floors with their baselines and streaming's cost;
 *   2. many paused turns (`bench:paused-scale`, BENCH_SCALE_PAUSED over BENCH_SCALE_AGENTS agents) on
 *      the dev server and PostgreSQL; then BENCH_SCALE_PAUSED_SIDE over BENCH_SCALE_AGENTS_SIDE on
 *      Temporal's production server, and on the embedded PGlite, for what each store costs a pause;
 *   3. the server scaled out on the dev server and on Temporal's production server, and as one process
 *      on PostgreSQL and on PGlite (`bench:scale-out`);
 *   4. the chaos run on the production server (`CHAOS_TEMPORAL=production npm run chaos`);
 *
 * Run it on Node 24 (`PATH="$(bash scripts/install-node.sh 24 | tail -n 1):$PATH" npm run bench:scale`):
 * on older Node the workflow thread's work per turn grows with the turns the server has run
 * (bench/sdk-costs.md), and pausing 100,000 takes hours rather than about one.
 *
 * each writing its own JSON file in bench/, then `scale.md`: every figure beside its baseline, and the
 * capacity table docs/operations.md shows. `npm run bench:scale -- --report` writes `scale.md` again
 * from the JSON files already there.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { writeFormatted } from './report';
import { numberSetting } from './stats';

const BENCH = path.join(__dirname, '../../bench');
const read = (file: string) => JSON.parse(fs.readFileSync(path.join(BENCH, file), 'utf8'));

/** Runs one step's script of dist/bench with `env`, its output shown as it goes. */
function step(title: string, script: string, args: string[] = [], env: Record<string, string> = {}) {
  console.log(`\n=== ${title}`);
  execFileSync(process.execPath, [path.join(__dirname, script), ...args], {
    env: { ...process.env, ...env },
    stdio: 'inherit',
  });
}

/** The paused runs: the full count on the dev server and PostgreSQL, and a side count on each other store. */
const PAUSED_RUNS = {
  'paused-scale.json': {},
  'paused-scale-production.json': { PAUSED_SCALE_TEMPORAL: 'production' },
  'paused-scale-pglite.json': { PAUSED_SCALE_DATABASE: 'pglite' },
} satisfies Record<string, Record<string, string>>;
type PausedRun = keyof typeof PAUSED_RUNS;

function runSteps(): void {
  step('the suite: per-call floors, streaming', 'suite.js');
  const full = [numberSetting('BENCH_SCALE_PAUSED', 100_000), numberSetting('BENCH_SCALE_AGENTS', 10_000)];
  const side = [
    numberSetting('BENCH_SCALE_PAUSED_SIDE', 5_000),
    numberSetting('BENCH_SCALE_AGENTS_SIDE', 500),
  ];
  for (const [file, env] of Object.entries(PAUSED_RUNS)) {
    const [paused, agents] = file === 'paused-scale.json' ? full : side;
    const on = Object.values(env).join(', ') || 'dev server, PostgreSQL';
    step(
      `${paused} turns paused over ${agents} agents (${on})`,
      'paused-scale.js',
      [paused, agents].map(String),
      {
        ...env,
        BENCH_OUT: path.join(BENCH, file),
      },
    );
  }
  step(
    'scaled out: 2 APIs and 3 workers on dev and production Temporal; one process on PostgreSQL and PGlite',
    'scale-out.js',
  );
  step('chaos on the production server', 'chaos.js', [], { CHAOS_TEMPORAL: 'production' });
}

interface Latency {
  p50: number;
  p95: number;
}

const ms = (l: Latency) => `${l.p50} / ${l.p95} ms`;
const row = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
const table = (head: string[], rows: (string | number)[][]) =>
  [row(head), row(head.map(() => '---')), ...rows.map(row)].join('\n');

/** What each store a paused run measures is, as the report names it. */
const STORE_NAMES: Record<string, string> = {
  postgres: 'its PostgreSQL schema',
  pglite: "PGlite's folder",
  dev: "the dev server's SQLite file",
  production: "the production server's databases",
};

/** Paused turns: each figure at the full count beside its baseline (1,000 paused, or the first start). */
function pausedSection(p: ReturnType<typeof read>): string {
  const at = p[`at_${p.paused}_paused`];
  const base = p.at_1000_paused;
  const perPause = (mib: number) => `${mib} MiB (${Math.round((mib * 1024) / p.paused)} KiB a pause)`;
  return [
    `### ${p.paused.toLocaleString('en')} turns paused on approvals over ${p.agents.toLocaleString('en')} agents`,
    '',
    table(
      ['figure', `at ${p.paused.toLocaleString('en')}`, 'baseline'],
      [
        [
          '`GET /v1/approvals/` first page, p50 / p95',
          ms(at.inbox_first_page_ms),
          `${ms(base.inbox_first_page_ms)} at 1,000`,
        ],
        ['a deep page, p50 / p95', ms(at.inbox_deep_page_ms), `${ms(base.inbox_deep_page_ms)} at 1,000`],
        ['answering a random one, p50 / p95', ms(at.answer_ms), `${ms(base.answer_ms)} at 1,000`],
        [
          'the server, after a full GC',
          `${at.server_memory_after_gc.rss_mib} MiB`,
          `${p.restart.server_memory_after_gc.rss_mib} MiB after a restart`,
        ],
        [
          "Temporal's resident memory",
          `${at.temporal_rss_mib} MiB`,
          `${at.temporal_rss_mib - at.temporal_rss_grown_mib} MiB before the pauses`,
        ],
        [`the server's database (${STORE_NAMES[p.database]})`, perPause(at.database.grown_mib), ''],
        [`Temporal's history (${STORE_NAMES[p.temporal]})`, perPause(at.temporal_store.grown_mib), ''],
        [
          'restart: SIGTERM to healthy',
          `${p.restart.start_until_healthy_ms} ms`,
          `first start ${p.restart.first_start_until_healthy_ms} ms`,
        ],
        ['a hundred answered at once, until all ended', `${p.answered_100_at_once_ms} ms`, ''],
      ],
    ),
  ].join('\n');
}

/** A scale-out deployment's column heading. */
const DEPLOYMENT_HEADINGS: Record<string, string> = {
  dev: 'split, dev server (SQLite)',
  production: "split, Temporal's production server (PostgreSQL)",
  one_process_postgres: 'one process, dev server, PostgreSQL',
  one_process_pglite: 'one process, dev server, PGlite',
};

/**
 * The scaled-out figures on each deployment side by side, with the chaos runs of the split ones (on
 * the dev server, from `npm run chaos`'s last run).
 */
function scaleOutSection(
  s: ReturnType<typeof read>,
  chaosDev: ReturnType<typeof read>,
  chaosProd: ReturnType<typeof read>,
): string {
  const deployments = Object.keys(DEPLOYMENT_HEADINGS).filter((name) => s[name]);
  const rate = (kind: string) =>
    deployments.map((name) => `${s[name][kind].per_second}/s, turn ${ms(s[name][kind].turn_ms)}`);
  const chaos = (c: ReturnType<typeof read>) =>
    `${c.runs} runs: ${c.lost} lost, ${c.stuck} stuck, ${c.false_cancelled} falsely cancelled, ${c.unaccounted_reruns} unaccounted re-runs`;
  const chaosOf: Record<string, string> = { dev: chaos(chaosDev), production: chaos(chaosProd) };
  return [
    `### Split (${s.settings.apis} APIs and ${s.settings.workers} workers) and as one process`,
    '',
    table(
      ['figure', ...deployments.map((name) => DEPLOYMENT_HEADINGS[name])],
      [
        ['plain steps', ...rate('plain_steps')],
        ['sandboxed calls', ...rate('sandboxed_calls')],
        ['MCP calls', ...rate('mcp_calls')],
        [
          'chaos (rolling SIGTERM and kill -9 of workers, API deploys)',
          ...deployments.map((name) => chaosOf[name] ?? ''),
        ],
      ],
    ),
  ].join('\n');
}

/** CPU of one core a kind of process used, summed over its processes. */
const coresOf = (cpu: Record<string, number>, prefix: string) =>
  Object.entries(cpu)
    .filter(([name]) => name.startsWith(prefix))
    .reduce((sum, [, percent]) => sum + percent / 100, 0);

/** Plain steps a second per core of the processes that run turns: the workers, or the one process. */
function stepsPerCore(s: ReturnType<typeof read>, deployment: string): number | string {
  const plain = s[deployment]?.plain_steps;
  if (!plain) return 'not run';
  const prefix = s[deployment].deployment.split ? 'worker' : 'api';
  return Math.round(plain.per_second / coresOf(plain.cpu_percent_of_one_core, prefix));
}

/** Paused turns per GiB of what a paused run measured, at its count. */
function perGib(p: ReturnType<typeof read>, mibOf: (at: ReturnType<typeof read>) => number): string {
  const mib = mibOf(p[`at_${p.paused}_paused`]);
  return `${Math.round((p.paused / mib) * 1024).toLocaleString('en')} (${p.paused.toLocaleString('en')} paused)`;
}

/**
 * Capacity, for each Temporal server and database: plain steps a second per core (scaled out, and as
 * one process), and paused turns per GiB of each store's disk and of each process's memory.
 */
function capacitySection(
  s: ReturnType<typeof read>,
  paused: Record<PausedRun, ReturnType<typeof read>>,
): string {
  const runs = [
    paused['paused-scale.json'],
    paused['paused-scale-production.json'],
    paused['paused-scale-pglite.json'],
  ];
  const each = (mibOf: (at: ReturnType<typeof read>) => number) => runs.map((p) => perGib(p, mibOf));
  return [
    '### Capacity',
    '',
    table(
      ['', 'dev server, PostgreSQL', "Temporal's production server, PostgreSQL", 'dev server, PGlite'],
      [
        [
          'plain steps a second per worker core, 3 workers',
          stepsPerCore(s, 'dev'),
          stepsPerCore(s, 'production'),
          'one process only',
        ],
        [
          'plain steps a second per core, one process',
          stepsPerCore(s, 'one_process_postgres'),
          'not run',
          stepsPerCore(s, 'one_process_pglite'),
        ],
        ["paused turns per GiB of the server's database", ...each((at) => at.database.grown_mib)],
        ["paused turns per GiB of Temporal's history store", ...each((at) => at.temporal_store.grown_mib)],
        ["paused turns per GiB of Temporal's memory", ...each((at) => at.temporal_rss_grown_mib)],
        [
          "the server's memory after a full GC, with all of them paused",
          ...runs.map((p) => `${p[`at_${p.paused}_paused`].server_memory_after_gc.rss_mib} MiB`),
        ],
      ],
    ),
  ].join('\n');
}

async function writeScaleReport(): Promise<void> {
  const paused = Object.fromEntries(Object.keys(PAUSED_RUNS).map((file) => [file, read(file)])) as Record<
    PausedRun,
    ReturnType<typeof read>
  >;
  const scaleOut = read('scale-out.json');
  const text = [
    '# Scale',
    '',
    `Written by \`npm run bench:scale\` (bench/scale.ts) from the JSON files of its steps: paused-scale.json (and its -production and -pglite runs), scale-out.json, chaos.json, chaos-production.json; the per-call floors and streaming are in results.md (\`npm run bench\`, its first step). Each file records the machine and its load.`,
    '',
    pausedSection(paused['paused-scale.json']),
    '',
    scaleOutSection(scaleOut, read('chaos.json'), read('chaos-production.json')),
    '',
    capacitySection(scaleOut, paused),
    '',
  ].join('\n');
  await writeFormatted(path.join(BENCH, 'scale.md'), text);
}

async function main() {
  if (!process.argv.includes('--report')) runSteps();
  await writeScaleReport();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
