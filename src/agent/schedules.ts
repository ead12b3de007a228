/**
 * Scheduled messages (Letta's `agents.schedule`), each a Temporal Schedule: a recurring one fires on
 * its cron expression, a one-time one once, at its time. A firing starts the `scheduledMessage`
 * workflow, which queues an ordinary turn of the agent (ordered with its other messages) under a run
 * id derived from the firing, so a retried firing queues nothing twice.
 *
 * Missed firings (everything down at the time): a one-time message runs once when the server is back,
 * however late; a recurring one runs the firings missed within SCHEDULE_CATCHUP_WINDOW_MS, and skips
 * older ones.
 */
import { createHash } from 'node:crypto';
import { ScheduleNotFoundError, ScheduleOverlapPolicy } from '@temporalio/client';
import type { Workflows } from '../../contracts/workflows';
import * as store from '../db/scheduled-messages';
import type { InputMessage } from '../db/rows';
import { getAgentRow } from '../db/agents';
import { conflict, invalid, notFound } from '../errors';
import { newId } from '../ids';
import { scopedId, startAgentTurn, type TurnServices } from './turns';

/** gRPC's status for a request the server refuses as invalid. */
const INVALID_ARGUMENT = 3;

/** How long after its time a one-time message that could not fire (all down) still fires. */
const ONE_TIME_CATCHUP_MS = 365 * 24 * 3600 * 1000;

export interface ScheduleRequest {
  /** The request as it came, echoed by list and retrieve. */
  message: store.ScheduledRequest;
  input: InputMessage[];
  schedule: store.MessageSchedule;
}

const scheduleIdFor = (ctx: TurnServices, id: string) => scopedId(ctx.deploymentId, `schedule/${id}`);

/** A one-time message's moment as a 7-field cron expression (seconds … year), in UTC. */
function momentCron(at: Date): string {
  const d = at;
  return `${d.getUTCSeconds()} ${d.getUTCMinutes()} ${d.getUTCHours()} ${d.getUTCDate()} ${d.getUTCMonth() + 1} * ${d.getUTCFullYear()}`;
}

function specOf(schedule: store.MessageSchedule, now: number) {
  if (schedule.type === 'recurring') return { cronExpressions: [schedule.cron_expression] };
  if (!Number.isFinite(schedule.scheduled_at) || schedule.scheduled_at <= now)
    throw invalid('scheduled_at must be a time in the future (Unix time in milliseconds)');
  return { cronExpressions: [momentCron(new Date(schedule.scheduled_at))] };
}

/** Stores the message and creates its Temporal Schedule; answers Letta's `{id, next_scheduled_at}`. */
export async function createScheduledMessage(ctx: TurnServices, agentId: string, request: ScheduleRequest) {
  if (!(await getAgentRow(ctx.db, agentId))) throw notFound(`Agent ${agentId}`);
  if ((await store.countScheduledMessages(ctx.db, agentId)) >= ctx.config.SCHEDULES_PER_AGENT_MAX)
    throw conflict(
      `Agent ${agentId} has ${ctx.config.SCHEDULES_PER_AGENT_MAX} scheduled messages, the most it may have (SCHEDULES_PER_AGENT_MAX)`,
    );
  const id = newId('scheduled_message');
  const oneTime = request.schedule.type === 'one-time';
  const spec = specOf(request.schedule, Date.now());
  const scheduleId = scheduleIdFor(ctx, id);
  try {
    await ctx.temporal.schedule.create({
      scheduleId,
      spec,
      action: {
        type: 'startWorkflow',
        workflowType: 'scheduledMessage' as const,
        workflowId: scopedId(ctx.deploymentId, `scheduled/${id}`),
        taskQueue: ctx.taskQueues.agent,
        args: [{ scheduledMessageId: id }] as Parameters<Workflows['scheduledMessage']>,
        staticSummary: `Scheduled message ${id} to ${agentId}`,
      },
      policies: {
        overlap: ScheduleOverlapPolicy.ALLOW_ALL,
        catchupWindow: oneTime ? ONE_TIME_CATCHUP_MS : ctx.config.SCHEDULE_CATCHUP_WINDOW_MS,
      },
      state: {
        note: `Letta scheduled message of agent ${agentId}`,
        ...(oneTime ? { remainingActions: 1 } : {}),
      },
    });
  } catch (error) {
    // Temporal judges the cron expression (gRPC INVALID_ARGUMENT): a bad one is the caller's.
    const cause = (error as { cause?: { code?: number; details?: string; message?: string } }).cause;
    if (cause?.code === INVALID_ARGUMENT) throw invalid(cause.details || cause.message || 'Invalid schedule');
    throw error;
  }
  try {
    await store.insertScheduledMessage(ctx.db, {
      id,
      agent_id: agentId,
      message: request.message,
      input: request.input,
      schedule: request.schedule,
      schedule_id: scheduleId,
    });
  } catch (error) {
    await ctx.temporal.schedule
      .getHandle(scheduleId)
      .delete()
      .catch(() => undefined);
    throw error;
  }
  return { id, next_scheduled_at: (await nextTime(ctx, scheduleId)) ?? undefined };
}

/** The schedule's next firing, or null when it will fire no more. */
async function nextTime(ctx: TurnServices, scheduleId: string): Promise<string | null> {
  try {
    const described = await ctx.temporal.schedule.getHandle(scheduleId).describe();
    if (described.state.remainingActions === 0) return null;
    return described.info.nextActionTimes[0]?.toISOString() ?? null;
  } catch (error) {
    if (error instanceof ScheduleNotFoundError) return null;
    throw error;
  }
}

/** Letta's ScheduledMessage. */
async function scheduledMessageShape(ctx: TurnServices, row: store.ScheduledMessageRow) {
  return {
    id: row.id,
    agent_id: row.agent_id,
    message: row.message,
    next_scheduled_time: await nextTime(ctx, row.schedule_id),
    schedule: row.schedule,
  };
}

async function ownRow(ctx: TurnServices, agentId: string, id: string) {
  const row = await store.getScheduledMessage(ctx.db, id);
  if (!row || row.agent_id !== agentId) throw notFound(`Scheduled message ${id}`);
  return row;
}

export async function getScheduledMessage(ctx: TurnServices, agentId: string, id: string) {
  return scheduledMessageShape(ctx, await ownRow(ctx, agentId, id));
}

export async function listScheduledMessages(
  ctx: TurnServices,
  agentId: string,
  page: { after?: string; limit: number },
) {
  if (!(await getAgentRow(ctx.db, agentId))) throw notFound(`Agent ${agentId}`);
  const rows = await store.listScheduledMessages(ctx.db, agentId, { ...page, limit: page.limit + 1 });
  return {
    scheduled_messages: await Promise.all(
      rows.slice(0, page.limit).map((row) => scheduledMessageShape(ctx, row)),
    ),
    has_next_page: rows.length > page.limit,
  };
}

/** Stops its future firings, then forgets it. */
export async function deleteScheduledMessage(ctx: TurnServices, agentId: string, id: string) {
  const row = await ownRow(ctx, agentId, id);
  await deleteSchedule(ctx, row.schedule_id);
  await store.deleteScheduledMessage(ctx.db, id);
  return { success: true as const };
}

async function deleteSchedule(ctx: TurnServices, scheduleId: string) {
  try {
    await ctx.temporal.schedule.getHandle(scheduleId).delete();
  } catch (error) {
    if (!(error instanceof ScheduleNotFoundError)) throw error;
  }
}

/** An agent's schedules, deleted with it (its rows go by the foreign key). */
export async function deleteAgentSchedules(ctx: TurnServices, agentId: string): Promise<void> {
  for (
    let page: store.ScheduledMessageRow[];
    (page = await store.listScheduledMessages(ctx.db, agentId, { limit: 100 })).length;
  ) {
    for (const row of page) {
      await deleteSchedule(ctx, row.schedule_id);
      await store.deleteScheduledMessage(ctx.db, row.id);
    }
  }
}

/** A run id of a firing: the same for every attempt at it, so the turn is queued once. */
function firingRunId(firingId: string): string {
  const hex = createHash('sha256').update(firingId).digest('hex');
  return `run-${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * One firing: queues the message as a turn of the agent (background, with the request's callback and
 * step limit). A message whose schedule was deleted meanwhile sends nothing.
 */
export async function fireScheduledMessage(
  ctx: TurnServices,
  input: { scheduledMessageId: string; firingId: string },
): Promise<{ runId: string } | null> {
  const row = await store.getScheduledMessage(ctx.db, input.scheduledMessageId);
  if (!row) return null;
  const { run } = await startAgentTurn(ctx, {
    agentId: row.agent_id,
    conversationId: null,
    clientTools: [],
    maxSteps: row.message.max_steps ?? 50,
    background: true,
    runType: 'scheduled_message',
    userMessages: row.input,
    runId: firingRunId(input.firingId),
    metadata: { scheduled_message_id: row.id },
    callbackUrl: row.message.callback_url ?? undefined,
    origin: `scheduled message ${row.id}`,
  });
  return { runId: run.id };
}
