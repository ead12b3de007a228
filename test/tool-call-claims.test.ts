/**
 * One call, one runner at a time (activities/tool-claim.ts): a tool call is claimed before its tool
 * runs, and recorded only by the claim's holder, whatever the timing of the attempts. Run on the real
 * Temporal server (workers of their own on task queues of their own) and PostgreSQL.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import type { ToolCallInput } from '../contracts/payloads';
import { toolCallActivity, type ToolExecutor } from '../activities/tool-call';
import { openDatabase, type Database } from '../src/db';
import { readToolCall } from '../src/db/tool-calls';
import { renewClaim } from '../src/db/tool-claims';
import { ClaimLostError, recordToolExecution, type ToolExecution } from '../src/db/tool-executions';
import { ensureBuiltinTools } from '../src/tools/builtin';
import { createAgentWorker, createToolWorker } from '../src/temporal/worker';
import { runToolCallOn } from './fixtures/tool-call-workflow';
import { silentLogger, testConfig, testTemporalAddress, uniqueSuffix } from './helpers/env';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { agentWithRun, toolCallsOf } from './helpers/runs';

/** A tool whose every run is a side effect the test counts; it takes `ms` unless stopped. */
class CountedTool implements ToolExecutor {
  readonly runs: { toolCallId: string; start: number; end?: number; stopped?: unknown }[] = [];
  constructor(private readonly ms: number) {}

  async execute({ input, signal }: Parameters<ToolExecutor['execute']>[0]) {
    const run: (typeof this.runs)[number] = { toolCallId: input.toolCallId, start: Date.now() };
    this.runs.push(run);
    try {
      await sleep(this.ms, undefined, { signal });
    } catch (error) {
      run.stopped = signal.reason;
      throw error;
    }
    run.end = Date.now();
    return { status: 'success' as const, text: `ran ${input.toolCallId}` };
  }
}

describe('a tool call claimed before it runs', () => {
  let schema: TestSchema;
  let db: Database;
  let connection: NativeConnection;
  let client: Client;
  const workers: { worker: Worker; running: Promise<void> }[] = [];
  const queue = (name: string) => `claims-${uniqueSuffix()}-${name}`;
  const tool = new CountedTool(1_500);
  const [first, second, workflows] = [queue('first'), queue('second'), queue('workflows')];

  beforeAll(async () => {
    schema = await createTestSchema();
    db = await openDatabase(testConfig({ DATABASE_URL: schema.url }), silentLogger());
    await ensureBuiltinTools(db);
    connection = await NativeConnection.connect({ address: testTemporalAddress() });
    client = new Client({ connection });
    const activities = { runTool: toolCallActivity(db, tool) };
    const common = { connection, namespace: 'default', activities };
    for (const worker of [
      await createToolWorker({ ...common, taskQueue: first }),
      await createToolWorker({ ...common, taskQueue: second }),
      await createAgentWorker({
        ...common,
        taskQueue: workflows,
        workflowsPath: require.resolve('./fixtures/tool-call-workflow'),
        maxCachedWorkflows: 10,
      }),
    ])
      workers.push({ worker, running: worker.run() });
  });
  afterAll(async () => {
    for (const { worker } of workers) worker.shutdown();
    await Promise.all(workers.map(({ running }) => running));
    await connection?.close();
    await db?.close();
    await schema?.drop();
  });

  const newCall = async (): Promise<ToolCallInput> =>
    (await toolCallsOf(db, await agentWithRun(db), 'memory_insert', [{}]))[0];
  const runOn = (taskQueue: string, input: ToolCallInput) =>
    client.workflow.execute(runToolCallOn, {
      taskQueue: workflows,
      workflowId: `claims-${uniqueSuffix()}`,
      args: [taskQueue, input],
    });
  const recordedBy = (input: ToolCallInput, text: string): ToolExecution => ({
    tool_call_id: input.toolCallId,
    run_id: input.runId,
    agent_id: input.agentId,
    tool_name: input.toolName,
    status: 'success',
    func_return: text,
    stdout: null,
    stderr: null,
  });

  it('runs a call sent to two workers at once one time: the second waits and takes the first’s result', async () => {
    const input = await newCall();
    const outcomes = await Promise.all([runOn(first, input), runOn(second, input)]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['success', 'success']);
    expect(tool.runs.filter((run) => run.toolCallId === input.toolCallId)).toHaveLength(1);
  });

  it('gives the claim to one of many attempts taking it at once', async () => {
    const input = await newCall();
    const reads = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        readToolCall(db, input, { owner: `attempt-${i}`, leaseMs: 30_000 }),
      ),
    );
    expect(reads.filter((read) => read.claimed)).toHaveLength(1);
  });

  it('lets a later attempt take over a lease that ran out, and fences the earlier holder’s record', async () => {
    const input = await newCall();
    const early = { owner: 'early', leaseMs: 300 };
    const late = { owner: 'late', leaseMs: 30_000 };
    expect((await readToolCall(db, input, early)).claimed).toBe(true);
    expect((await readToolCall(db, input, late)).claimed).toBe(false);
    await sleep(400);
    expect((await readToolCall(db, input, late)).claimed).toBe(true);
    // The earlier holder, back from a pause: it can neither renew nor record.
    expect(await renewClaim(db, input.toolCallId, early)).toBe(false);
    await expect(recordToolExecution(db, recordedBy(input, 'early'), undefined, early.owner)).rejects.toThrow(
      ClaimLostError,
    );
    const recorded = await recordToolExecution(db, recordedBy(input, 'late'), undefined, late.owner);
    expect(recorded.func_return).toBe('late');
    // Recorded: no attempt claims it again, however late.
    const after = await readToolCall(db, input, { owner: 'later', leaseMs: 30_000 });
    expect(after).toMatchObject({ claimed: false, done: { func_return: 'late' } });
  });

  it('waits for a dead attempt’s lease, then runs the call once', async () => {
    const input = await newCall();
    // An attempt whose worker died holding the claim: its lease runs out in a second.
    expect((await readToolCall(db, input, { owner: 'dead', leaseMs: 1_000 })).claimed).toBe(true);
    const started = Date.now();
    const outcome = await runOn(first, input);
    expect(outcome.status).toBe('success');
    const runs = tool.runs.filter((run) => run.toolCallId === input.toolCallId);
    expect(runs).toHaveLength(1);
    expect(runs[0].start - started).toBeGreaterThanOrEqual(900);
  });

  it('stops a running tool whose claim was taken over, and records nothing', async () => {
    const slow = await newCall();
    const running = runOn(first, slow).catch((error: Error) => error);
    await waitFor(() => tool.runs.some((run) => run.toolCallId === slow.toolCallId));
    await db.query(
      `UPDATE tool_call_claims SET owner = 'thief', lease_until = now() + interval '1 minute'
        WHERE tool_call_id = $1`,
      [slow.toolCallId],
    );
    expect(await running).toBeInstanceOf(Error);
    const [run] = tool.runs.filter((r) => r.toolCallId === slow.toolCallId);
    expect(run.stopped).toBeInstanceOf(ClaimLostError);
    expect(
      await db.query('SELECT 1 FROM tool_executions WHERE tool_call_id = $1', [slow.toolCallId]),
    ).toHaveLength(0);
  });
});

async function waitFor(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await sleep(20);
  }
}
