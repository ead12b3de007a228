/**
 * The workflows by the names Temporal knows them by, with their signatures: the API starts and
 * addresses them through these (`client.workflow.start<Workflows['agentTurn']>('agentTurn', …)`), and
 * workflows/index.ts checks that each workflow has its signature.
 */
import type {
  AgentMessageCallInput,
  AgentSessionInput,
  AgentTurnInput,
  AgentTurnResult,
  FileIngestionInput,
  FileIngestionResult,
  ToolOutcome,
  WebhookDelivery,
} from './payloads';

export interface Workflows {
  /** A conversation's turns, one at a time (workflows/agent-session.ts). */
  agentSession(input: AgentSessionInput): Promise<void>;
  /**
   * One turn: a request's steps (model call, then its reply's tool calls) until its answer, across
   * pauses (workflows/agent-turn.ts).
   */
  agentTurn(input: AgentTurnInput): Promise<AgentTurnResult>;
  /**
   * One call of an agent-message tool, a child of its turn: the messages sent, their replies awaited
   * by signal (workflows/agent-message-call.ts).
   */
  agentMessageCall(input: AgentMessageCallInput): Promise<ToolOutcome>;
  /** One uploaded file, parsed and embedded (workflows/file-ingestion.ts). */
  fileIngestion(input: FileIngestionInput): Promise<FileIngestionResult>;
  /** One webhook, retried (workflows/webhook-delivery.ts). */
  webhookDelivery(input: WebhookDelivery): Promise<void>;
  /** One firing of a scheduled message: the run it started, if any (workflows/scheduled-message.ts). */
  scheduledMessage(input: { scheduledMessageId: string }): Promise<string | null>;
}
