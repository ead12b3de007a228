/**
 * The activities as workflows call them: each interface is implemented by its factory in activities/
 * (checked with `satisfies`), and workflows proxy these types, never the factories'.
 */
import type {
  AgentMessagesSent,
  AgentRepliesInput,
  ApprovalAnswered,
  ApprovalWait,
  CallModelInput,
  ElicitationPauseInput,
  EmbedBatchInput,
  FileIngestionInput,
  FinishRunInput,
  StepReply,
  ParsedFile,
  RejectToolCallInput,
  ResumePlan,
  ToolCallInput,
  TurnContext,
  ToolOutcome,
  WebhookSubject,
} from './payloads';
import type { TaskQueueName, ToolCallActivityName, ToolCallActivityOn, ToolQueueName } from './tool-modes';

/** A tool call of any execution mode (activities/tool-call.ts). */
export type ToolCallActivity = (input: ToolCallInput) => Promise<ToolOutcome>;

/** The run's bookkeeping (activities/run.ts). */
export interface RunActivities {
  cancelQueuedRuns(input: { runIds: string[] }): Promise<void>;
  rejectToolCall(input: RejectToolCallInput): Promise<ToolOutcome>;
  appendUserMessage(input: { agentId: string; runId: string; step: number; text: string }): Promise<void>;
  finishRun(input: FinishRunInput): Promise<void>;
  /**
   * The agent's tools and rules a request works with, by the digest they are stored under
   * (AgentTurnInput.contextDigest, ApprovalAnswered.contextDigest).
   */
  loadTurnContext(input: { agentId: string; digest: string }): Promise<TurnContext>;
}

/** activities/model.ts */
export interface ModelActivities {
  callModel(input: CallModelInput): Promise<StepReply>;
}

/** A paused turn's answer, its reminder, its expiry and its cancel (activities/approvals.ts). */
export interface ApprovalActivities {
  remindApproval(input: { agentId: string; messageId: string }): Promise<void>;
  expireApproval(input: { agentId: string; messageId: string }): Promise<ApprovalAnswered | null>;
  denyOnCancel(input: { agentId: string; runId: string; messageId: string }): Promise<string | null>;
  pauseForElicitation(input: ElicitationPauseInput): Promise<ApprovalWait>;
  applyApprovalAnswer(input: {
    agentId: string;
    runId: string;
    approvalMessageId: string;
  }): Promise<ResumePlan>;
}

/** activities/file-ingestion.ts */
export interface FileIngestionActivities {
  parseFile(input: Pick<FileIngestionInput, 'fileId' | 'chunkSize' | 'chunkOverlap'>): Promise<ParsedFile>;
  embedChunks(input: EmbedBatchInput): Promise<{ chunksEmbedded: number }>;
  finishIngestion(input: { fileId: string }): Promise<void>;
  failIngestion(input: { fileId: string; error: string }): Promise<void>;
}

/**
 * The execution modes' activities, by the names contracts/tool-modes.ts gives them, one module each in
 * activities/: a mode added there is an activity here at once, which its factory must then provide.
 */
export type ToolCallActivities = Record<ToolCallActivityName, ToolCallActivity>;
/** What the worker of task queue `Q` registers to run the calls of the modes on it. */
export type ToolCallActivitiesOn<Q extends TaskQueueName> = Pick<ToolCallActivities, ToolCallActivityOn<Q>>;
/** The tool workers that can live apart, each with the activities of its queue (src/server.ts). */
export type ToolQueueActivities = { [Q in ToolQueueName]: ToolCallActivitiesOn<Q> };

export type BuiltinActivities = Pick<ToolCallActivities, 'runBuiltinTool'>;
/**
 * `messageAgents` sends and waits in one activity, polling: turns recorded before agent messages waited
 * in a child workflow (workflows/agent-message-call.ts) still call it.
 */
export type AgentMessageActivities = Pick<ToolCallActivities, 'messageAgents'>;
/** The steps of an agent message's call (workflows/agent-message-call.ts). */
export interface AgentMessageCallActivities {
  /** Sends the call's messages, each a turn of its recipient's, told to signal the calling workflow. */
  sendAgentMessages(input: ToolCallInput): Promise<AgentMessagesSent>;
  /** The runs of `runIds` that have stopped, or whose turn no longer runs to stop them. */
  lookAtMessageRuns(input: { runIds: string[] }): Promise<string[]>;
  /** Reads the replies and records the call's result, once per tool call id. */
  recordAgentReplies(input: AgentRepliesInput): Promise<ToolOutcome>;
}
export type RunCodeActivities = Pick<ToolCallActivities, 'runCode'>;
export type SandboxActivities = Pick<ToolCallActivities, 'runSandboxTool'>;
export type McpActivities = Pick<ToolCallActivities, 'runMcpTool'>;

/** A turn waiting in its session for its conversation's lane (src/db/lanes.ts). */
export interface LaneHolder {
  agentId: string;
  runId: string;
  workflowId: string;
}

/** activities/lanes.ts */
export interface LaneActivities {
  /** True once the lane is taken; otherwise the turn is marked waited on. */
  takeLaneTurn(turn: LaneHolder): Promise<boolean>;
  giveLaneBack(turn: LaneHolder): Promise<void>;
}

/** activities/schedules.ts */
export interface ScheduleActivities {
  sendScheduledMessage(input: {
    scheduledMessageId: string;
    firingId: string;
  }): Promise<{ runId: string } | null>;
}

/** activities/webhooks.ts */
export interface WebhookActivities {
  deliverWebhook(subject: WebhookSubject): Promise<void>;
}

/** Every activity of the `agent` task queue's worker (activities/index.ts). */
export type AgentActivities = RunActivities &
  ModelActivities &
  BuiltinActivities &
  ApprovalActivities &
  FileIngestionActivities;
