/**
 * How far one machine and one cluster go, in one run (`npm run bench:scale`, not part of CI; about an
 * hour and a half on two cores, most of it pausing 100,000 turns):
 *
 *   1. the suite (`npm run bench`): the per-call floors with their baselines and streaming's cost;
 *   2. many paused turns (`bench:paused-scale`, BENCH_SCALE_PAUSED over BENCH_SCALE_AGENTS agents);
 *   3. the server scaled out on the dev server and on Temporal's production server (`bench:scale-out`);
 *   4. the chaos run on the production server (`CHAOS_TEMPORAL=production npm run chaos`);
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

function runSteps(): void {
  step('the suite: per-call floors, streaming', 'suite.js');
  const paused = String(numberSetting('BENCH_SCALE_PAUSED', 100_000));
  const agents = String(numberSetting('BENCH_SCALE_AGENTS', 10_000));
  step(`${paused} turns paused over ${agents} agents`, 'paused-scale.js', [paused, agents]);
  step('scaled out: 2 APIs, 3 workers, dev and production Temporal', 'scale-out.js');
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
        ["Temporal's resident memory", `${at.temporal_rss_mib} MiB`, ''],
        ["the server's database schema", perPause(at.postgres.schema_mib), ''],
        ["Temporal's history (the dev server's SQLite file)", perPause(at.temporal.sqlite_mib), ''],
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

/** The scaled-out figures on each Temporal server, side by side. */
function scaleOutSection(
  s: ReturnType<typeof read>,
  chaosDev: ReturnType<typeof read>,
  chaosProd: ReturnType<typeof read>,
): string {
  const servers = ['dev', 'production'] as const;
  const rate = (kind: string) =>
    servers.map((server) => `${s[server][kind].per_second}/s, turn ${ms(s[server][kind].turn_ms)}`);
  const chaos = (c: ReturnType<typeof read>) =>
    `${c.runs} runs: ${c.lost} lost, ${c.stuck} stuck, ${c.false_cancelled} falsely cancelled, ${c.unaccounted_reruns} unaccounted re-runs`;
  return [
    `### ${s.settings.apis} APIs and ${s.settings.workers} workers, on the dev server and on Temporal's production server`,
    '',
    table(
      ['figure', 'dev server (SQLite)', 'production server (PostgreSQL)'],
      [
        ['plain steps', ...rate('plain_steps')],
        ['sandboxed calls', ...rate('sandboxed_calls')],
        ['MCP calls', ...rate('mcp_calls')],
        ['chaos (rolling SIGTERM and kill -9 of workers, API deploys)', chaos(chaosDev), chaos(chaosProd)],
      ],
    ),
  ].join('\n');
}

/** CPU of one core a kind of process used, summed over its processes. */
const coresOf = (cpu: Record<string, number>, prefix: string) =>
  Object.entries(cpu)
    .filter(([name]) => name.startsWith(prefix))
    .reduce((sum, [, percent]) => sum + percent / 100, 0);

/**
 * Capacity: plain steps per second per worker core (the workers' CPU in the scaled-out run), and
 * paused turns per GiB of each store's disk and of Temporal's memory.
 */
function capacitySection(s: ReturnType<typeof read>, p: ReturnType<typeof read>): string {
  const at = p[`at_${p.paused}_paused`];
  const perGib = (mib: number) => Math.round((p.paused / mib) * 1024).toLocaleString('en');
  const stepsPerCore = (server: 'dev' | 'production') => {
    const plain = s[server].plain_steps;
    return Math.round(plain.per_second / coresOf(plain.cpu_percent_of_one_core, 'worker'));
  };
  return [
    '### Capacity',
    '',
    table(
      ['', 'dev server', 'production server'],
      [
        ['plain steps a second per worker core', stepsPerCore('dev'), stepsPerCore('production')],
        [
          "paused turns per GiB of the server's database",
          perGib(at.postgres.schema_mib),
          perGib(at.postgres.schema_mib),
        ],
        [
          "paused turns per GiB of Temporal's history store",
          perGib(at.temporal.sqlite_mib),
          'not measured yet',
        ],
        ["paused turns per GiB of Temporal's memory", perGib(at.temporal_rss_mib), 'not measured yet'],
      ],
    ),
  ].join('\n');
}

async function writeScaleReport(): Promise<void> {
  const paused = read('paused-scale.json');
  const scaleOut = read('scale-out.json');
  const text = [
    '# Scale',
    '',
    `Written by \`npm run bench:scale\` (bench/scale.ts) from the JSON files of its steps: paused-scale.json, scale-out.json, chaos.json, chaos-production.json; the per-call floors and streaming are in results.md (\`npm run bench\`, its first step). Each file records the machine and its load.`,
    '',
    pausedSection(paused),
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
