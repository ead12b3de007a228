import type { SandboxSettings } from './settings';
import type { Logger } from '../logger';
import { cgroups } from './cgroups';
import { e2bSandbox, type E2BSandboxOptions } from './e2b';
import { localSandbox } from './local';
import { modalSandbox, type ModalToolSandbox } from './modal';
import { modalUnsupportedReason } from './modal-support';
import { nodeRuntimeOptions } from './node-runtime';
import { pythonEnvOptions } from './python-env';
import { warmPool } from './warm-pool';
import type { OutputLimits } from './results';
import { toolSandboxes, type ToolSandboxes } from './tool-sandboxes';
import type { Sandbox, ToolJob, ToolRunResult } from './types';

export type { AgentStateSnapshot, PipRequirement, Sandbox, ToolJob, ToolRunResult } from './types';
export { SandboxUnavailableError } from './types';
export { ToolEnvironmentError } from './tool-environment-error';
export { runInFirstAvailable, type SandboxChoice, type ToolSandboxes } from './tool-sandboxes';

/** The configured sandbox, with what its start-up probe found. */
export interface ConfiguredSandbox extends Sandbox {
  /** Null when the sandbox works here; otherwise why it does not. Run once, then remembered. */
  problem(): Promise<string | null>;
  describe(): string;
  /** Stops the warm runners. */
  close(): void;
}

const PROBE: ToolJob = {
  name: 'probe',
  source: 'def probe():\n    return "ok"\n',
  args: {},
  env: {},
  timeoutMs: 15_000,
  returnCharLimit: 100,
};

async function probe(sandbox: Sandbox): Promise<string | null> {
  try {
    const result = await sandbox.run(PROBE);
    if (result.status === 'success' && result.funcReturn === 'ok') return null;
    // What bubblewrap or setpriv said is the reason; the runner's own text only when they said nothing.
    const said = result.stderr.join('\n').trim() || String(result.funcReturn);
    return said.replace(/\s*\n\s*/g, '; ');
  } catch (error) {
    return (error as Error).message;
  }
}

/** Refuses every tool, with the probe's finding and what the operator can do, when the probe failed. */
function guarded(sandbox: Sandbox, what: string, close: () => void): ConfiguredSandbox {
  let found: Promise<string | null> | undefined;
  const problem = () => (found ??= probe(sandbox));
  return {
    problem,
    describe: () => what,
    close,
    async run(job, signal) {
      const reason = await problem();
      if (!reason) return sandbox.run(job, signal);
      return refusal(job, reason);
    },
  };
}

function refusal(job: ToolJob, reason: string): ToolRunResult {
  const advice =
    'Custom tools are refused: fix the sandbox, or set SANDBOX_TYPE=local-unsafe to run them without isolation';
  return {
    status: 'error',
    funcReturn: `Error executing function ${job.name}: SandboxUnavailableError: the local sandbox (bubblewrap) does not work on this host (${reason.slice(0, 300)}). ${advice}.`,
    stdout: [],
    stderr: [],
  };
}

/** What a tool may send back, in every sandbox. */
const outputLimits = (config: SandboxSettings): OutputLimits => ({
  maxOutputBytes: config.SANDBOX_MAX_OUTPUT_BYTES,
  keepOutputBytes: config.SANDBOX_OUTPUT_KEEP_BYTES,
  maxResultBytes: config.SANDBOX_MAX_RESULT_BYTES,
});

/** The operator's sandbox (SANDBOX_TYPE): E2B, or the local one (also with SANDBOX_TYPE=modal). */
export function sandboxFor(config: SandboxSettings): ConfiguredSandbox {
  const operators = operatorsSandbox(config);
  const modal = modalDescription(config);
  return modal ? { ...operators, describe: () => `${operators.describe()}; ${modal}` } : operators;
}

/** What the banner and the log say of Modal, when it has credentials. */
function modalDescription(config: SandboxSettings): string | null {
  if (!config.MODAL_TOKEN_ID || !config.MODAL_TOKEN_SECRET) return null;
  const unsupported = modalUnsupportedReason();
  if (unsupported) return `Modal configured but not usable (${unsupported}): its tools fall back`;
  const which = config.SANDBOX_TYPE === 'modal' ? 'every custom tool' : 'tools that ask for it';
  return `Modal for ${which} (app ${config.MODAL_APP_NAME})`;
}

function operatorsSandbox(config: SandboxSettings): ConfiguredSandbox {
  if (config.SANDBOX_TYPE !== 'e2b') return localSandboxFor(config);
  // Not probed: a probe would start a paid sandbox at every start-up; E2B's failures fail the activity.
  const sandbox = e2bSandbox(e2bOptions(config, config.E2B_API_KEY!)); // loadConfig requires the key
  return {
    run: (job, signal) => sandbox.run(job, signal),
    problem: async () => null,
    describe: () => `e2b (template ${config.E2B_TEMPLATE})`,
    close: () => undefined,
  };
}

/**
 * Where custom tools run: the operator's sandbox, and Modal for the tools that ask for it (with
 * E2B and the local sandbox as its fallbacks).
 */
export function toolSandboxesFor(
  config: SandboxSettings,
  operators: ConfiguredSandbox,
  log?: Logger,
): ToolSandboxes {
  const e2bKey = config.E2B_API_KEY;
  const onE2B = config.SANDBOX_TYPE === 'e2b';
  return toolSandboxes({
    operators: { name: onE2B ? 'E2B' : 'local', configType: onE2B ? 'e2b' : 'local', sandbox: operators },
    modal: modalSandboxFor(config, log),
    e2b: !onE2B && e2bKey ? e2bSandbox(e2bOptions(config, e2bKey)) : null,
    local: onE2B ? localSandboxFor({ ...config, SANDBOX_TYPE: 'local' }) : null,
    everyToolOnModal: config.SANDBOX_TYPE === 'modal',
  });
}

const e2bOptions = (config: SandboxSettings, apiKey: string): E2BSandboxOptions => ({
  apiKey,
  template: config.E2B_TEMPLATE,
  sandboxTimeoutMs: config.E2B_SANDBOX_TIMEOUT_MS,
  reuse: config.E2B_SANDBOX_REUSE,
  outputs: outputLimits(config),
});

/** The Modal sandbox, when Modal has credentials. */
export function modalSandboxFor(config: SandboxSettings, log?: Logger): ModalToolSandbox | null {
  const { MODAL_TOKEN_ID: tokenId, MODAL_TOKEN_SECRET: tokenSecret } = config;
  if (!tokenId || !tokenSecret) return null;
  return modalSandbox({
    tokenId,
    tokenSecret,
    environment: config.MODAL_ENVIRONMENT,
    appName: config.MODAL_APP_NAME,
    pythonImage: config.MODAL_PYTHON_IMAGE,
    nodeImage: config.MODAL_NODE_IMAGE,
    reuse: config.MODAL_SANDBOX_REUSE,
    idleMs: config.MODAL_SANDBOX_IDLE_MS,
    lifetimeMs: config.MODAL_SANDBOX_LIFETIME_MS,
    outputs: outputLimits(config),
    log,
  });
}

function localSandboxFor(config: SandboxSettings): ConfiguredSandbox {
  const limits = {
    cpu_seconds: config.SANDBOX_CPU_SECONDS,
    address_space_bytes: config.SANDBOX_MEMORY_BYTES,
    file_size_bytes: config.SANDBOX_FILE_SIZE_BYTES,
    open_files: config.SANDBOX_OPEN_FILES,
    processes: config.SANDBOX_MAX_PROCESSES,
  };
  const cgroupLimits = cgroups({
    memoryBytes: config.SANDBOX_MEMORY_BYTES,
    processes: config.SANDBOX_MAX_PROCESSES,
  });
  const isolation = config.SANDBOX_TYPE === 'local-unsafe' ? 'none' : 'bubblewrap';
  const pool =
    isolation === 'bubblewrap' && config.SANDBOX_WARM_POOL_SIZE > 0
      ? warmPool({
          size: config.SANDBOX_WARM_POOL_SIZE,
          idleMs: config.SANDBOX_WARM_IDLE_MS,
          outputs: outputLimits(config),
          cgroups: cgroupLimits,
        })
      : null;
  const sandbox = localSandbox({
    isolation,
    bwrap: config.SANDBOX_BWRAP_PATH,
    python: config.SANDBOX_PYTHON,
    node: nodeRuntimeOptions(config),
    outputs: outputLimits(config),
    tmpBytes: config.SANDBOX_TMP_BYTES,
    limits,
    cgroups: cgroupLimits,
    pythonEnvs: pythonEnvOptions(config),
    warmPool: pool,
  });
  const runners = pool ? `warm pool of ${config.SANDBOX_WARM_POOL_SIZE}` : 'cold spawn';
  const what = `${config.SANDBOX_TYPE} (${isolation === 'none' ? 'NO isolation' : `bubblewrap, ${runners}`}; ${cgroupLimits.describe()})`;
  return guarded(sandbox, what, () => pool?.close());
}
