/** One execution mode of custom tools behind one interface, as Letta's sandboxes are. */

/** Limits the runner sets on itself before the tool's code runs (rlimits; they hold in every backend). */
export interface ToolLimits {
  cpu_seconds: number;
  address_space_bytes: number;
  file_size_bytes: number;
  open_files: number;
  processes: number;
}

/** What a tool that takes `agent_state` sees of the agent; its block edits come back in the result. */
export interface AgentStateSnapshot {
  id: string;
  name: string;
  memory: {
    blocks: { label: string; value: string; limit: number; description: string | null; read_only: boolean }[];
  };
}

/** One of a tool's `pip_requirements`, in Letta's shape. */
export interface PipRequirement {
  name: string;
  version?: string | null;
}

export type NpmRequirement = PipRequirement;

/** Inside a local sandbox without a network, where api_bridge.py listens (Letta's own port). */
export const BRIDGED_API_PORT = 8283;

export interface ToolJob {
  /** The tool's name, for error texts (and, for TypeScript, the function called). */
  name: string;
  /** Python unless said otherwise. */
  language?: 'python' | 'typescript';
  source: string;
  args: Record<string, unknown>;
  /** The only environment the tool sees (its sandbox config's variables and the agent's secrets). */
  env: Record<string, string>;
  timeoutMs: number;
  /** The tool's return_char_limit: no more of its return's text leaves the sandbox. */
  returnCharLimit: number;
  /** The host's network (the sandbox config allows it); none otherwise. */
  network?: boolean;
  /**
   * The API's socket on the host, for a local sandbox without a network: bridged to LETTA_BASE_URL
   * inside (api_bridge.py), its only way out.
   */
  apiSocket?: string;
  pipRequirements?: PipRequirement[];
  npmRequirements?: NpmRequirement[];
  /** Given when the function takes `agent_state`. */
  agentState?: AgentStateSnapshot;
  agentId?: string;
}

/** Letta's execution contract: a status, the function's return, and what it printed. */
export interface ToolRunResult {
  status: 'success' | 'error';
  funcReturn: unknown;
  /** Set when the return's text passed the tool's return_char_limit: `funcReturn` is then its cut text. */
  returnChars?: number;
  stdout: string[];
  stderr: string[];
  /** The block values after the call, when the tool was given `agent_state`. */
  agentState?: { memory: { blocks: { label: string; value: string }[] } } | null;
}

export interface Sandbox {
  run(job: ToolJob, signal?: AbortSignal): Promise<ToolRunResult>;
}

/** The sandbox cannot run anything here (not installed, not permitted): a server problem, not the tool's. */
export class SandboxUnavailableError extends Error {
  override name = 'SandboxUnavailableError';
}

/** What the runner (runner.py) reports: Letta's result fields. */
export interface RunnerResult {
  status: 'success' | 'error';
  func_return: unknown;
  /** The return text's whole length, when only its first return_char_limit characters came back. */
  func_return_chars?: number;
  agent_state?: ToolRunResult['agentState'];
}

/** What the local sandbox runs for one job: the runner's read-only mounts, its command and its stdin. */
export interface SandboxCommand {
  mounts: string[];
  env: Record<string, string>;
  argv: string[];
  input: string;
}
