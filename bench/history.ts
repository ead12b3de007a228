/**
 * What a workflow's history holds: its events, their encoded size, and the Temporal Cloud actions
 * they bill, counted by the rule of https://docs.temporal.io/cloud/actions (see bench/README.md).
 */
import { temporal } from '@temporalio/proto';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const Type = temporal.api.enums.v1.EventType;

/** Versioning's own search attribute: upserting only it is not billed. */
const CHANGE_VERSION = 'TemporalChangeVersion';

/** The actions an event bills by itself; markers are counted apart (one a workflow task). */
function actionsOf(event: HistoryEvent): number {
  switch (event.eventType) {
    case Type.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
    case Type.EVENT_TYPE_TIMER_STARTED:
    case Type.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
    case Type.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
    case Type.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
    case Type.EVENT_TYPE_WORKFLOW_EXECUTION_OPTIONS_UPDATED:
    case Type.EVENT_TYPE_NEXUS_OPERATION_SCHEDULED:
    case Type.EVENT_TYPE_NEXUS_OPERATION_CANCEL_REQUESTED:
      return 1;
    case Type.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
      return 2; // the child's start and its execution
    case Type.EVENT_TYPE_ACTIVITY_TASK_STARTED:
      return event.activityTaskStartedEventAttributes?.attempt ?? 1; // each start and each retry
    case Type.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: {
      const fields = event.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
      return Object.keys(fields ?? {}).some((key) => key !== CHANGE_VERSION) ? 1 : 0;
    }
    default:
      return 0;
  }
}

/**
 * Billable actions in a history: the events that bill one (or two), and the markers (local activities'
 * results) as one action for each workflow task that recorded any. Heartbeats and queries bill too but
 * leave no event, so they are not counted here.
 */
export function billableActions(events: HistoryEvent[]): number {
  const markerTasks = new Set(
    events
      .filter((e) => e.eventType === Type.EVENT_TYPE_MARKER_RECORDED)
      .map((e) => String(e.markerRecordedEventAttributes?.workflowTaskCompletedEventId)),
  );
  return events.reduce((sum, e) => sum + actionsOf(e), 0) + markerTasks.size;
}

export interface HistorySize {
  events: number;
  bytes: number;
  billable_actions: number;
}

/** A history's event count, encoded size and billable actions. */
export const historySize = (events: HistoryEvent[]): HistorySize => ({
  events: events.length,
  bytes: temporal.api.history.v1.History.encode({ events }).finish().length,
  billable_actions: billableActions(events),
});

/** What `more` holds beyond `fewer`, per one of the `units` things it does beyond it. */
export const perUnitOf = (more: HistorySize, fewer: HistorySize, units: number): HistorySize => ({
  events: (more.events - fewer.events) / units,
  bytes: (more.bytes - fewer.bytes) / units,
  billable_actions: (more.billable_actions - fewer.billable_actions) / units,
});

/**
 * Where one activity's cycle in a workflow goes, from the times its history records (the server's
 * clock): from its scheduling to its start (none when the worker took it eagerly), its run (the
 * worker's code and its report of the result), until the workflow task that follows starts, that task
 * (the workflow's code and its completion), and anything else until the next activity is scheduled
 * (more workflow tasks, e.g. for local activities). Each the milliseconds of one cycle, one entry for
 * each `activityType` activity that another follows.
 */
export interface ActivityCycle {
  to_start: number;
  run: number;
  to_workflow_task: number;
  workflow_task: number;
  other: number;
}

/** When the server recorded `event`, in milliseconds. */
export const eventMillis = (event: HistoryEvent) =>
  Number(event.eventTime?.seconds ?? 0) * 1000 + (event.eventTime?.nanos ?? 0) / 1e6;

export function activityCycles(events: HistoryEvent[], activityType: string): ActivityCycle[] {
  const id = (e: HistoryEvent) => Number(e.eventId);
  const scheduled = events.filter(
    (e) =>
      e.eventType === Type.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED &&
      e.activityTaskScheduledEventAttributes?.activityType?.name === activityType,
  );
  const after = (from: HistoryEvent, type: temporal.api.enums.v1.EventType) =>
    events.find((e) => id(e) > id(from) && e.eventType === type)!;
  const ofActivity = (type: temporal.api.enums.v1.EventType, s: HistoryEvent) =>
    events.find(
      (e) =>
        e.eventType === type &&
        Number(
          e.activityTaskStartedEventAttributes?.scheduledEventId ??
            e.activityTaskCompletedEventAttributes?.scheduledEventId,
        ) === id(s),
    )!;
  return scheduled.slice(0, -1).map((s, i) => {
    const started = ofActivity(Type.EVENT_TYPE_ACTIVITY_TASK_STARTED, s);
    const completed = ofActivity(Type.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, s);
    const taskStarted = after(completed, Type.EVENT_TYPE_WORKFLOW_TASK_STARTED);
    const taskCompleted = after(taskStarted, Type.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
    return {
      to_start: eventMillis(started) - eventMillis(s),
      run: eventMillis(completed) - eventMillis(started),
      to_workflow_task: eventMillis(taskStarted) - eventMillis(completed),
      workflow_task: eventMillis(taskCompleted) - eventMillis(taskStarted),
      other: eventMillis(scheduled[i + 1]) - eventMillis(taskCompleted),
    };
  });
}
