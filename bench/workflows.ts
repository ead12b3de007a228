/**
 * The bare-Temporal baseline of `npm run bench`: workflows that do nothing but call a no-op activity,
 * run by a worker created as the server creates its agent worker (same connection, settings and
 * versioning), so that what an agent turn costs above them is what our code adds.
 */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { baselineActivities } from './baseline-activities';

type Activities = ReturnType<typeof baselineActivities>;
const options = { startToCloseTimeout: '10 seconds' } as const;
const { noop } = proxyActivities<Activities>(options);
const local = proxyLocalActivities<Activities>(options);

/** One no-op activity: the floor under a plain agent turn (one model call). */
export async function oneActivity(): Promise<void> {
  await noop();
}

/**
 * `count` no-op activities one after the other: the floor under a turn's tool calls. On `taskQueue`,
 * another worker's queue, as a tool mode's calls run: the worker cannot then take them eagerly, with
 * its workflow task's completion.
 */
export async function activitiesInTurn(count: number, asLocal: boolean, taskQueue?: string): Promise<void> {
  const { noop: onQueue } = taskQueue ? proxyActivities<Activities>({ ...options, taskQueue }) : { noop };
  for (let i = 0; i < count; i++) await (asLocal ? local.noop() : onQueue());
}
