import type { Config } from '../config';
import { e2bSandbox } from './e2b';
import { localSandbox } from './local';
import type { Sandbox } from './types';

export type { Sandbox, ToolJob, ToolRunResult } from './types';
export { SandboxUnavailableError } from './types';

/** The sandbox custom tools run in: E2B only when SANDBOX_TYPE says so, else the local (bubblewrap) one. */
export function sandboxFor(config: Config): Sandbox {
  if (config.SANDBOX_TYPE === 'e2b')
    return e2bSandbox({
      apiKey: config.E2B_API_KEY!, // loadConfig requires it with SANDBOX_TYPE=e2b
      template: config.E2B_TEMPLATE,
      sandboxTimeoutMs: config.E2B_SANDBOX_TIMEOUT_MS,
      reuse: config.E2B_SANDBOX_REUSE,
      maxOutputBytes: config.SANDBOX_MAX_OUTPUT_BYTES,
    });
  return localSandbox({
    bwrap: config.SANDBOX_BWRAP_PATH,
    python: config.SANDBOX_PYTHON,
    maxOutputBytes: config.SANDBOX_MAX_OUTPUT_BYTES,
  });
}
