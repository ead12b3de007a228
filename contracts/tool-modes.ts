/**
 * The execution modes, the one list of them: each mode with the activity that runs its calls (by the
 * name histories record) and the task queue it runs on. Every per-mode record is typed from it: the
 * activities' interfaces (contracts/activities.ts), the workflow's rows (`TOOL_MODES`,
 * workflows/tool-calls.ts), the tool types that select a mode (src/agent/turn-context.ts), the
 * workers' registration (src/server.ts) and the task queues (src/temporal/task-queues.ts). A mode added
 * here fails to compile until each of them is written (docs/design.md, "Execution modes").
 */

/** A mode whose calls run on this server: its activity, and the task queue its worker polls. */
interface ServerMode {
  activity: string;
  /** `agent`: the turn's own queue; any other gets a worker pool of its own. */
  queue: string;
}

/** A mode whose calls the client runs: the turn pauses for their returns. */
interface ClientMode {
  activity: null;
  queue: null;
}

export const EXECUTION_MODES = {
  // Memory, conversation and archival search, the web and file tools: trusted code of ours.
  builtin: { activity: 'runBuiltinTool', queue: 'agent' },
  // run_code: the model's own code, in the custom tools' sandbox.
  code: { activity: 'runCode', queue: 'sandbox' },
  // Messages to other agents.
  agent: { activity: 'messageAgents', queue: 'agent' },
  // Custom tools.
  sandbox: { activity: 'runSandboxTool', queue: 'sandbox' },
  // Tools of MCP servers.
  mcp: { activity: 'runMcpTool', queue: 'mcp' },
  // The request's client tools.
  client: { activity: null, queue: null },
} as const satisfies Record<string, ServerMode | ClientMode>;

/** How a tool call is executed: its mode's row here, in TOOL_MODES, and its activity's executor. */
export type ToolMode = keyof typeof EXECUTION_MODES;

type ModeOf<M extends ToolMode> = (typeof EXECUTION_MODES)[M];

/** The modes whose calls run on this server, each by its activity. */
export type ServerToolMode = { [M in ToolMode]: ModeOf<M>['activity'] extends string ? M : never }[ToolMode];

/** The activity that runs a server mode's calls. */
export type ToolCallActivityName = ModeOf<ServerToolMode>['activity'];

/** The task queues: the agent's, and one for each pool of tool workers that can live apart. */
export type TaskQueueName = 'agent' | ModeOf<ServerToolMode>['queue'];

/** The task queues of the tool workers that can live apart from the agent's. */
export type ToolQueueName = Exclude<TaskQueueName, 'agent'>;

/** The activities of the modes whose calls run on task queue `Q`. */
export type ToolCallActivityOn<Q extends TaskQueueName> = {
  [M in ServerToolMode]: ModeOf<M>['queue'] extends Q ? ModeOf<M>['activity'] : never;
}[ServerToolMode];

/** The modes, in the list's order. */
export const toolModes = (): ToolMode[] => Object.keys(EXECUTION_MODES) as ToolMode[];

/** The entry of a mode this build has: a turn's tools stored by a newer build may name one it lacks. */
const entryOf = (mode: string): (ServerMode | ClientMode) | undefined =>
  Object.hasOwn(EXECUTION_MODES, mode) ? EXECUTION_MODES[mode as ToolMode] : undefined;

/** Whether the client runs a mode's calls (the turn pauses for their returns) rather than this server. */
export const runsOnClientMode = (mode: ToolMode): boolean => entryOf(mode)?.activity === null;

/** Whether this server runs a mode's calls, by its activity. */
export const isServerMode = (mode: ToolMode): mode is ServerToolMode =>
  typeof entryOf(mode)?.activity === 'string';

/** The mode whose calls an activity runs, by the activity's name; none for any other activity. */
export function modeOfActivity(activity: string): ServerToolMode | undefined {
  return toolModes().find((mode): mode is ServerToolMode => EXECUTION_MODES[mode].activity === activity);
}
