/** One execution mode of custom tools behind one interface, as Letta's sandboxes are. */

export interface ToolJob {
  /** The tool's name, for error texts. */
  name: string;
  source: string;
  args: Record<string, unknown>;
  /** The only environment the tool sees (its sandbox config's variables and the agent's secrets). */
  env: Record<string, string>;
  timeoutMs: number;
}

/** Letta's execution contract: a status, the function's return, and what it printed. */
export interface ToolRunResult {
  status: 'success' | 'error';
  funcReturn: unknown;
  stdout: string[];
  stderr: string[];
}

export interface Sandbox {
  run(job: ToolJob, signal?: AbortSignal): Promise<ToolRunResult>;
}

/** The sandbox cannot run anything here (not installed, not permitted): a server problem, not the tool's. */
export class SandboxUnavailableError extends Error {
  override name = 'SandboxUnavailableError';
}
