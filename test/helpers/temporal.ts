import { Client, Connection, type WorkflowExecutionDescription } from '@temporalio/client';
import { temporal as proto, type temporal } from '@temporalio/proto';
import { testTemporalAddress } from './env';
import { eventually } from './eventually';
import type { Queryable } from '../../src/db';

/** The workflow of a run's turn, as the run row names it. */
export async function turnWorkflowId(db: Queryable, runId: string): Promise<string> {
  const [run] = await db.query<{ workflow_id: string }>('SELECT workflow_id FROM runs WHERE id = $1', [
    runId,
  ]);
  return run.workflow_id;
}

export type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** A Temporal client on the test run's server, to read what the Web UI would show. */
export async function connectTemporalClient(): Promise<{ client: Client; close(): Promise<void> }> {
  const connection = await Connection.connect({ address: testTemporalAddress() });
  return { client: new Client({ connection }), close: () => connection.close() };
}

export async function workflowHistory(client: Client, workflowId: string): Promise<HistoryEvent[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return history.events ?? [];
}

/**
 * The whole history of a turn whose run has ended: the turn ends its run in its last workflow task,
 * whose completion (and the workflow's) Temporal stores just after the API may have answered.
 */
export async function finishedTurnHistory(client: Client, workflowId: string): Promise<HistoryEvent[]> {
  await client.workflow
    .getHandle(workflowId)
    .result()
    .catch(() => undefined);
  return workflowHistory(client, workflowId);
}

/** The activity type of each ActivityTaskScheduled event, with its event id. */
export function scheduledActivities(events: HistoryEvent[]): { eventId: number; type: string }[] {
  return events
    .filter((e) => e.activityTaskScheduledEventAttributes)
    .map((e) => ({
      eventId: Number(e.eventId),
      type: e.activityTaskScheduledEventAttributes!.activityType!.name!,
    }));
}

/** The local activities a history ran, in order, with the attempt that completed each. */
export function localActivities(events: HistoryEvent[]): { type: string; attempt: number }[] {
  return events
    .map((e) => e.markerRecordedEventAttributes)
    .filter((marker) => marker?.markerName === 'core_local_activity')
    .map((marker) => {
      const data = marker!.details!.data!.payloads![0].data!;
      const parsed = JSON.parse(Buffer.from(data).toString('utf8')) as {
        activity_type: string;
        attempt: number;
      };
      return { type: parsed.activity_type, attempt: parsed.attempt };
    });
}

/** The activity type of each local activity a history recorded (its markers), in order. */
export const localActivityTypes = (events: HistoryEvent[]): string[] =>
  localActivities(events).map((a) => a.type);

/** Every payload of a history (inputs, results, summaries, failures), decoded as text. */
export function payloadTexts(value: unknown, out: string[] = []): string[] {
  if (value instanceof Uint8Array) out.push(Buffer.from(value).toString('utf8'));
  else if (Array.isArray(value)) value.forEach((v) => payloadTexts(v, out));
  else if (value && typeof value === 'object') Object.values(value).forEach((v) => payloadTexts(v, out));
  return out;
}

/** The agent-message calls of a sender's run: child workflows whose search attributes name the run. */
export async function agentMessageCalls(
  client: Client,
  runId: string,
): Promise<WorkflowExecutionDescription[]> {
  const found: WorkflowExecutionDescription[] = [];
  for await (const info of client.workflow.list({
    query: `WorkflowType = "agentMessageCall" AND LettaRunId = "${runId}"`,
  }))
    found.push(await client.workflow.getHandle(info.workflowId).describe());
  return found;
}

/** An agent-message call waits when its messages are sent and nothing of it runs: no activity is pending. */
export const callWaits = (call: WorkflowExecutionDescription) =>
  call.status.name === 'RUNNING' && (call.raw.pendingActivities ?? []).length === 0;

/** The one agent-message call of a sender's run, once it waits (the last one read, if it never does). */
export async function waitingMessageCall(
  client: Client,
  runId: string,
): Promise<WorkflowExecutionDescription[]> {
  return eventually(
    () => agentMessageCalls(client, runId),
    (calls) => calls.length === 1 && callWaits(calls[0]),
    30_000,
  );
}

/** One run of a workflow's continue-as-new chain: its history, and that history's size in bytes. */
export interface ChainRun {
  runId: string;
  events: HistoryEvent[];
  bytes: number;
}

/** Every run of a workflow's continue-as-new chain, first to last (the first run's id its runs share). */
export async function continueAsNewChain(client: Client, workflowId: string): Promise<ChainRun[]> {
  const { raw } = await client.workflow.getHandle(workflowId).describe();
  const runs: ChainRun[] = [];
  for (let runId: string | undefined = raw.workflowExecutionInfo!.firstRunId!; runId;) {
    const history: temporal.api.history.v1.IHistory = await client.workflow
      .getHandle(workflowId, runId)
      .fetchHistory();
    const events = history.events ?? [];
    runs.push({ runId, events, bytes: proto.api.history.v1.History.encode(history).finish().length });
    runId = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return runs;
}

/** The input a workflow run started with (its first payload), decoded. */
export const startInput = <T>(events: HistoryEvent[]): T =>
  JSON.parse(
    Buffer.from(events[0].workflowExecutionStartedEventAttributes!.input!.payloads![0].data!).toString(
      'utf8',
    ),
  ) as T;
