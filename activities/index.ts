/** Every activity the `agent` task queue's worker runs, built from the process's dependencies. */
import type { ActivityDeps } from './deps';
import { approvalActivities } from './approvals';
import { builtinActivities } from './builtin';
import { fileIngestionActivities } from './file-ingestion';
import { modelActivities } from './model';
import { runActivities } from './run';
import type { AgentActivities } from '../contracts/activities';

export type { ActivityDeps } from './deps';

export function createActivities(deps: ActivityDeps) {
  return {
    ...runActivities(deps),
    ...modelActivities(deps),
    ...builtinActivities(deps),
    ...approvalActivities(deps),
    ...fileIngestionActivities(deps),
  } satisfies AgentActivities;
}
