import type { Config } from '../config';
import { localSandbox } from './local';
import { nodeRuntimeOptions } from './node-runtime';
import type { Sandbox } from './types';

export type { Sandbox, ToolJob, ToolRunResult } from './types';
export { SandboxUnavailableError } from './types';

/** The sandbox custom tools run in; the local (bubblewrap) one for now. */
export function sandboxFor(config: Config): Sandbox {
  return localSandbox({
    bwrap: config.SANDBOX_BWRAP_PATH,
    python: config.SANDBOX_PYTHON,
    node: nodeRuntimeOptions(config),
    maxOutputBytes: config.SANDBOX_MAX_OUTPUT_BYTES,
  });
}
