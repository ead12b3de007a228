/**
 * One call, one runner at a time (activities/tool-claim.ts): a tool call is claimed before its tool
 * runs, and recorded only by the claim's holder, whatever the timing of the attempts. Run on the real
 * Temporal server (workers of their own on task queues of their own) and PostgreSQL.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, WorkflowFailedError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { NativeConnection, type Worker } from '@temporalio/worker';
import type { ToolCallInput } from '../contracts/payloads';
import { interruptedText, toolCallActivity, type ToolExecutor } from '../activities/tool-call';
import { runActivities } from '../activities/run';
import type { ActivityDeps } from '../activities/deps';
import { ATTEMPT_INTERRUPTED } from '../contracts/errors';
import { unpackageFunctionResponse } from '../src/returns/tool-returns';
import { openDatabase, type Database } from '../src/db';
import { readToolCall } from '../src/db/tool-calls';
import { abandonClaim, releaseClaim, renewClaim } from '../src/db/tool-claims';
import { ClaimLostError, recordToolExecution, type ToolExecution } from '../src/db/tool-executions';
import { toolCallTakeovers } from '../src/observability/metrics';
import { ensureBuiltinTools } from '../src/tools/builtin';
import { createAgentWorker, createToolWorker } from '../src/temporal/worker';
import { rejectToolCallOf, runToolCallOn } from './fixtures/tool-call-workflow';
import { silentLogger, testConfig, testTemporalAddress, uniqueSuffix } from './helpers/env';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { agentWithRun, toolCallsOf } from './helpers/runs';

/**
 * A tool whose every run is a side effect the test counts; it takes `ms` unless stopped. Stopped, it
 * throws, or (`stoppedResult`) answers as the sandboxes do, with a result that says it was cancelled.
 */
class CountedTool implements ToolExecutor {
  readonly runs: { toolCallId: string; start: number; end?: number; stopped?: unknown }[] = [];
  constructor(
    private readonly ms: number,
    private readonly stoppedResult = false,
  ) {}

  async execute({ input, signal }: Parameters<ToolExecutor['execute']>[0]) {
    const run: (typeof this.runs)[number] = { toolCallId: input.toolCallId, start: Date.now() };
    this.runs.push(run);
    try {
      await sleep(this.ms, undefined, { signal });
    } catch (error) {
      run.stopped = signal.reason;
      if (!this.stoppedResult) throw error;
      return { status: 'error' as const, text: 'CancelledError: the run was cancelled' };
    }
    run.end = Date.now();
    return { status: 'success' as const, text: `ran ${input.toolCallId}` };
  }

  runsOf(input: ToolCallInput) {
    return this.runs.filter((run) => run.toolCallId === input.toolCallId);
  }
}

/** How many takeovers the counter holds for `action` (the activity's type is its mode label here). */
const takeovers = async (action: string) =>
  (await toolCallTakeovers.get()).values.find((v) => v.labels.action === action)?.value ?? 0;

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
    const { rejectToolCall } = runActivities({ db } as ActivityDeps);
    const activities = { runTool: toolCallActivity(db, tool), rejectToolCall };
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

  /** A call of a built-in tool: its name decides its retry policy (src/tools/retry-policy.ts). */
  const newCall = async (toolName = 'memory_insert'): Promise<ToolCallInput> =>
    (await toolCallsOf(db, await agentWithRun(db), toolName, [{}]))[0];
  const recordsOf = (input: ToolCallInput) =>
    db.query<ToolExecution>('SELECT * FROM tool_executions WHERE tool_call_id = $1', [input.toolCallId]);
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
    expect(await readToolCall(db, input, late)).toMatchObject({ claimed: true, takenFrom: 'early' });
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

  it('takes over a dead attempt’s call of a tool that may run again: waits for its lease, runs it once more', async () => {
    const input = await newCall('conversation_search');
    const before = await takeovers('rerun');
    // An attempt whose worker died holding the claim: its lease runs out in a second.
    expect((await readToolCall(db, input, { owner: 'dead', leaseMs: 1_000 })).claimed).toBe(true);
    const started = Date.now();
    const outcome = await runOn(first, input);
    expect(outcome.status).toBe('success');
    const runs = tool.runsOf(input);
    expect(runs).toHaveLength(1);
    expect(runs[0].start - started).toBeGreaterThanOrEqual(900);
    expect(await takeovers('rerun')).toBe(before + 1);
  });

  it('answers a dead attempt’s call of any other tool that it may have taken effect, and does not run it', async () => {
    const input = await newCall('archival_memory_insert');
    const before = await takeovers('refused');
    expect((await readToolCall(db, input, { owner: 'dead', leaseMs: 1_000 })).claimed).toBe(true);
    const outcome = await runOn(first, input);
    expect(outcome.status).toBe('error');
    expect(tool.runsOf(input)).toHaveLength(0);
    const [record] = await recordsOf(input);
    expect(unpackageFunctionResponse(record.func_return)).toBe(interruptedText('archival_memory_insert'));
    expect(await takeovers('refused')).toBe(before + 1);
  });

  it('knows a takeover from a plain retry: a claim given up leaves none, one let go of or taken over stays one', async () => {
    const input = await newCall();
    const take = (owner: string) => readToolCall(db, input, { owner, leaseMs: 30_000 });
    expect(await take('a')).toMatchObject({ claimed: true, takenFrom: undefined });
    await releaseClaim(db, input.toolCallId, 'a'); // failed before its tool started
    expect(await take('b')).toMatchObject({ claimed: true, takenFrom: undefined });
    await abandonClaim(db, input.toolCallId, 'b'); // interrupted: taken over at once, no lease to wait for
    expect(await take('c')).toMatchObject({ claimed: true, takenFrom: 'b' });
    expect(await take('c')).toMatchObject({ claimed: true, takenFrom: 'b' }); // read again by its holder
    await releaseClaim(db, input.toolCallId, 'c'); // a takeover that fails is still one for the next
    expect(await take('d')).toMatchObject({ claimed: true, takenFrom: 'c' });
    // Each takeover counted (b's from a and c's read again are none): every time the tool may have run again.
    const [claim] = await db.query<{ takeovers: number }>(
      'SELECT takeovers FROM tool_call_claims WHERE tool_call_id = $1',
      [input.toolCallId],
    );
    expect(claim.takeovers).toBe(2);
  });

  describe('at a worker’s shutdown', () => {
    /** A worker of its own that lets running calls finish for `graceMs` when it shuts down. */
    async function workerWithGrace(graceMs: number, slow: CountedTool) {
      const taskQueue = queue(`grace-${graceMs}`);
      const worker = await createToolWorker({
        connection,
        namespace: 'default',
        taskQueue,
        activities: { runTool: toolCallActivity(db, slow) },
        shutdownGraceMs: graceMs,
      });
      return { taskQueue, worker, running: worker.run() };
    }

    it('lets a call that ends within the grace finish and record its result', async () => {
      const slow = new CountedTool(1_000, true);
      const { taskQueue, worker, running } = await workerWithGrace(5_000, slow);
      const input = await newCall();
      const outcome = runOn(taskQueue, input);
      await waitFor(() => slow.runsOf(input).length > 0);
      worker.shutdown();
      expect(await outcome).toEqual({ status: 'success', output: `ran ${input.toolCallId}` });
      await running;
      expect(slow.runsOf(input)[0].stopped).toBeUndefined();
      expect(await recordsOf(input)).toHaveLength(1);
    });

    it('records nothing of a call cut short when the grace ends, and leaves it to a takeover', async () => {
      const slow = new CountedTool(10_000, true);
      const { taskQueue, worker, running } = await workerWithGrace(300, slow);
      const input = await newCall('archival_memory_insert');
      const outcome = runOn(taskQueue, input).catch((error: unknown) => error);
      await waitFor(() => slow.runsOf(input).length > 0);
      worker.shutdown();
      const failure = await outcome;
      await running;
      // The tool answered "cancelled" when stopped; nobody cancelled the run, so that is no result.
      expect(slow.runsOf(input)[0].stopped).toBeDefined();
      expect(failure).toBeInstanceOf(WorkflowFailedError);
      const cause = ((failure as WorkflowFailedError).cause as ActivityFailure).cause as ApplicationFailure;
      expect(cause.type).toBe(ATTEMPT_INTERRUPTED);
      expect(await recordsOf(input)).toHaveLength(0);
      // The next attempt takes the call over at once (no lease to wait for), and knows it may have run.
      const started = Date.now();
      expect(await runOn(first, input)).toMatchObject({ status: 'error' });
      expect(Date.now() - started).toBeLessThan(4_000);
      const [record] = await recordsOf(input);
      expect(unpackageFunctionResponse(record.func_return)).toBe(interruptedText('archival_memory_insert'));
    });
  });

  describe('a refusal racing a hung holder', () => {
    const refuse = (input: ToolCallInput) =>
      client.workflow.execute(rejectToolCallOf, {
        taskQueue: workflows,
        workflowId: `claims-${uniqueSuffix()}`,
        args: [{ ...input, reason: 'refused by the test' }],
      });

    it('waits while the holder’s lease runs, and takes the holder’s record when it comes back', async () => {
      const input = await newCall();
      const hung = { owner: 'hung', leaseMs: 5_000 };
      expect((await readToolCall(db, input, hung)).claimed).toBe(true);
      const refusal = refuse(input);
      await sleep(1_500);
      expect(await recordsOf(input)).toHaveLength(0); // the refusal waits
      await recordToolExecution(db, recordedBy(input, 'the holder’s'), undefined, hung.owner);
      expect(await refusal).toMatchObject({ status: 'success' });
      expect((await recordsOf(input)).map((r) => r.func_return)).toEqual(['the holder’s']);
    });

    it('records the refusal once the holder’s lease ran out; the holder’s late record keeps it', async () => {
      const input = await newCall();
      const hung = { owner: 'hung', leaseMs: 1_000 };
      expect((await readToolCall(db, input, hung)).claimed).toBe(true);
      expect(await refuse(input)).toEqual({ status: 'error' });
      const [claim] = await db.query<{ takeovers: number }>(
        'SELECT takeovers FROM tool_call_claims WHERE tool_call_id = $1',
        [input.toolCallId],
      );
      expect(claim.takeovers).toBe(1);
      // The holder, back from its pause: its record finds the refusal's, and changes nothing.
      const late = await recordToolExecution(db, recordedBy(input, 'the holder’s'), undefined, hung.owner);
      expect(unpackageFunctionResponse(late.func_return)).toBe('refused by the test');
      const records = await recordsOf(input);
      expect(records.map((r) => unpackageFunctionResponse(r.func_return))).toEqual(['refused by the test']);
    });
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
