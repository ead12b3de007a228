/**
 * The environment a custom tool runs with, as Letta gathers it (`tool_sandbox/base.py`
 * `_gather_env_vars`), lowest precedence first: the sandbox config's variables, the agent's secrets,
 * then `LETTA_AGENT_ID` / `LETTA_TOOL_ID`, and ours, `LETTA_TOOL_CALL_ID`. Unlike Letta's local sandbox,
 * never the server's own environment: it holds the server's keys and DATABASE_URL.
 */
import type { Queryable } from '../db';
import type { SandboxConfigRow } from '../db/rows';
import { getSandboxConfigByType, listSandboxEnvVars } from '../db/sandbox-configs';
import type { SandboxType } from '../schemas/sandbox-config';

/** A sandbox config (null if none of its type was ever made) and its variables, decrypted. */
export interface SandboxEnvironment {
  config: SandboxConfigRow | null;
  env: Record<string, string>;
}

/** The config of `type` and its variables. */
export async function sandboxEnvironment(db: Queryable, type: SandboxType): Promise<SandboxEnvironment> {
  const config = await getSandboxConfigByType(db, type);
  if (!config) return { config: null, env: {} };
  const vars = await listSandboxEnvVars(db, config.id);
  return { config, env: Object.fromEntries(vars.map((v) => [v.key, v.value])) };
}

export interface ToolEnvironmentSources {
  sandboxVars: Record<string, string>;
  agentSecrets: Record<string, string>;
  /** Left out when the tool runs without an agent (`POST /v1/tools/run`). */
  agentId?: string;
  /** Left out when there is no stored tool (source run as is). */
  toolId?: string;
  /**
   * The call's id, the same in every attempt of it: a key the tool may make its effect idempotent
   * with (a retry after an interrupted attempt runs with the same). Left out outside a turn.
   */
  toolCallId?: string;
}

/** The tool's whole environment: an agent secret overrides a sandbox variable of the same key. */
export function toolEnvironment({
  sandboxVars,
  agentSecrets,
  agentId,
  toolId,
  toolCallId,
}: ToolEnvironmentSources): Record<string, string> {
  return {
    ...sandboxVars,
    ...agentSecrets,
    ...(agentId === undefined ? {} : { LETTA_AGENT_ID: agentId }),
    ...(toolId === undefined ? {} : { LETTA_TOOL_ID: toolId }),
    ...(toolCallId === undefined ? {} : { LETTA_TOOL_CALL_ID: toolCallId }),
  };
}
