import path from 'node:path';
import { Worker, type ReplayWorkerOptions } from '@temporalio/worker';
import * as workflows from '../workflows';
import { historyFiles, loadHistory, readManifest, workflowTypeOf } from './helpers/histories';
import { BRANCHES, shows, type Branch } from './helpers/history-branches';
import { replayOptions } from '../src/observability/temporal';

/**
 * Upgrades never break a paused turn: every history of the corpus (test/fixtures/histories/, recorded
 * from this server by `npm run histories:record`) replays against the current workflow code. A change
 * that alters the commands a recorded workflow issued, or their order, fails here, naming the history,
 * instead of failing every paused turn after the upgrade.
 */

type WebpackConfig = Parameters<
  NonNullable<NonNullable<ReplayWorkerOptions['bundlerOptions']>['webpackConfigHook']>
>[0];
type WebpackPlugin = NonNullable<WebpackConfig['plugins']>[number];

const workflowsPath = require.resolve('../workflows');

/** The gist of a replay error: Core's own message (the event that did not match) when it has one. */
const detailOf = (error: Error) =>
  error.message.match(/\[TMPRL\d+\][^"]*/)?.[0] ?? error.message.split('\n')[0].slice(0, 500);

/**
 * Replays each file of the corpus in one replay worker; returns one line per history that fails,
 * naming its file, the error's kind and message.
 */
async function replayCorpus(files: string[], options: Partial<ReplayWorkerOptions> = {}): Promise<string[]> {
  const failures: string[] = [];
  const histories = files.map((file) => ({ workflowId: file, history: loadHistory(file) }));
  for await (const result of Worker.runReplayHistories(
    { workflowsPath, replayName: 'replay-corpus', ...replayOptions, ...options },
    histories,
  )) {
    if (result.error) failures.push(`${result.workflowId}: ${result.error.name}: ${detailOf(result.error)}`);
  }
  return failures;
}

/** What a failing corpus says: which histories no longer replay, and what to do about it. */
function assertReplays(failures: string[]): void {
  if (failures.length)
    throw new Error(
      `${failures.length} recorded histories (test/fixtures/histories/) no longer replay against the current workflow code. ` +
        'Turns paused in production in these states would fail after the upgrade: keep the old commands, ' +
        'or branch on patched() (see docs/upgrades.md, "Replay corpus"):\n' +
        failures.map((line) => `  ${line}`).join('\n'),
    );
}

/** The bundle of the real workflows with a module of test/fixtures/reordered-workflows/ in place of its original. */
const withReordered = (moduleName: string): Partial<ReplayWorkerOptions> => {
  const workflowsDir = path.dirname(workflowsPath);
  const replacement = path.join(__dirname, 'fixtures', 'reordered-workflows', `${moduleName}.ts`);
  const swap: WebpackPlugin = {
    apply(compiler) {
      compiler.hooks.normalModuleFactory.tap('reordered-workflows', (factory) => {
        factory.hooks.beforeResolve.tap('reordered-workflows', (data) => {
          if (data.request === `./${moduleName}` && data.context === workflowsDir) data.request = replacement;
        });
      });
    },
  };
  return {
    replayName: 'reordered-corpus',
    bundlerOptions: {
      webpackConfigHook: (config) => ({ ...config, plugins: [...(config.plugins ?? []), swap] }),
    },
  };
};

describe('the replay corpus (test/fixtures/histories/)', () => {
  const manifest = readManifest();
  const files = historyFiles();

  it('lists every history file in its manifest, with the workflow type the file holds', () => {
    expect(manifest.histories.map((h) => h.file).sort()).toEqual(files);
    for (const entry of manifest.histories)
      expect({ file: entry.file, workflowType: workflowTypeOf(loadHistory(entry.file)) }).toEqual({
        file: entry.file,
        workflowType: entry.workflowType,
      });
  });

  it('holds a history of every workflow the worker runs, and of each state of a turn', () => {
    const types = new Set(manifest.histories.map((h) => h.workflowType));
    expect([...types].sort()).toEqual(expect.arrayContaining(Object.keys(workflows).sort()));
    const scenarios = new Set(manifest.histories.map((h) => h.scenario));
    for (const scenario of [
      'step-finished-tools',
      'step-paused-client-tool',
      'step-paused-approval',
      'step-approval-answered',
      'step-mid-tool-call',
      'session-continued-as-new',
      'step-agent-message',
      'step-local-tool-calls',
      'step-model-call-ends-run',
    ])
      expect(scenarios).toContain(scenario);
  });

  it('covers every branch of the turn and session workflows, each by a history that shows it', () => {
    const covering = (branch: string) => manifest.histories.filter((h) => h.branches?.includes(branch));
    expect(Object.keys(BRANCHES).filter((branch) => covering(branch).length === 0)).toEqual([]);
    for (const entry of manifest.histories)
      for (const branch of entry.branches ?? [])
        expect({
          file: entry.file,
          branch,
          shown: branch in BRANCHES && shows(branch as Branch, loadHistory(entry.file)),
        }).toEqual({ file: entry.file, branch, shown: true });
  });

  it('replays every recorded history against the current workflow code', async () => {
    expect(files.length).toBeGreaterThanOrEqual(6);
    assertReplays(await replayCorpus(files));
  });

  it('fails, naming the history, against workflow code whose commands changed (the test of the test)', async () => {
    // The changed copy makes the model call a local activity without a patch: every recorded turn
    // that scheduled a regular one no longer replays; sessions and the rest still do.
    const modelCalling = manifest.histories
      .filter((h) =>
        (loadHistory(h.file).events ?? []).some(
          (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel',
        ),
      )
      .map((h) => h.file)
      .sort();
    expect(modelCalling).toEqual(
      expect.arrayContaining([
        'step-approval-answered.binpb',
        'step-finished-tools.binpb',
        'step-calls-in-order.binpb',
      ]),
    );

    const failures = await replayCorpus(files, withReordered('turn-activities'));
    expect(failures.map((line) => line.split(':')[0]).sort()).toEqual(modelCalling);
    for (const line of failures) expect(line).toMatch(/^step-[\w.-]+\.binpb: DeterminismViolationError: /);
    expect(() => assertReplays(failures)).toThrow(/step-finished-tools\.binpb: DeterminismViolationError/);
  });
});
