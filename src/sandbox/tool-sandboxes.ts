/**
 * Where a custom tool's call runs. Every tool runs in the operator's sandbox (SANDBOX_TYPE), except
 * that a tool asking for Modal (Letta's `metadata_.sandbox == "modal"`, or every tool with
 * SANDBOX_TYPE=modal) runs on Modal, falling back as Letta does when Modal is not configured or
 * cannot start: to E2B when it has a key, then to the local sandbox. A tool's own error is a result
 * wherever it ran, never a reason to fall back.
 */
import type { SandboxType } from '../schemas/sandbox-config';
import type { ModalToolSandbox } from './modal';
import { SandboxUnavailableError, type Sandbox, type ToolJob, type ToolRunResult } from './types';

/** One place a call may run, and whose sandbox config (variables, requirements) applies there. */
export interface SandboxChoice {
  name: 'Modal' | 'E2B' | 'local';
  configType: SandboxType;
  sandbox: Sandbox;
}

export interface ToolSandboxes {
  /** The places a call of `tool` may run, in the order they are tried. */
  choicesFor(tool: { metadata?: Record<string, unknown> | null }): SandboxChoice[];
  close(): Promise<void>;
}

/** The sandboxes a call may run in (none starts anything before its first call). */
export interface SandboxBackends {
  /** SANDBOX_TYPE's (the local one with SANDBOX_TYPE=modal). */
  operators: SandboxChoice;
  /** Null when Modal is not configured. */
  modal: ModalToolSandbox | null;
  /** E2B when it has a key and is not the operator's. */
  e2b: Sandbox | null;
  /** The local sandbox when the operator's is E2B; closed with the others. */
  local: (Sandbox & { close(): void }) | null;
  /** SANDBOX_TYPE=modal: every tool asks for Modal. */
  everyToolOnModal: boolean;
}

const NOT_CONFIGURED: Sandbox = {
  run: () =>
    Promise.reject(
      new SandboxUnavailableError('Modal is not configured (MODAL_TOKEN_ID, MODAL_TOKEN_SECRET)'),
    ),
};

export function toolSandboxes(backends: SandboxBackends): ToolSandboxes {
  const { operators } = backends;
  const modal: SandboxChoice = {
    name: 'Modal',
    configType: 'modal',
    sandbox: backends.modal ?? NOT_CONFIGURED,
  };
  const e2b: SandboxChoice | null =
    operators.name === 'E2B'
      ? operators
      : backends.e2b && { name: 'E2B', configType: 'e2b', sandbox: backends.e2b };
  const local: SandboxChoice = backends.local
    ? { name: 'local', configType: 'local', sandbox: backends.local }
    : operators;
  const fallbacks = [...(e2b ? [e2b] : []), local];
  return {
    choicesFor(tool) {
      const asksModal = backends.everyToolOnModal || tool.metadata?.sandbox === 'modal';
      return asksModal ? [modal, ...fallbacks] : [operators];
    },
    close: async () => {
      backends.local?.close();
      await backends.modal?.close();
    },
  };
}

/**
 * Runs the call in the first of `choices` that can run it, with the job made for that place (its
 * sandbox config's variables and requirements). When it ran past the first choice, its stderr says
 * where and why; when none can, the last one's failure is thrown (the activity retries).
 */
export async function runInFirstAvailable(
  choices: SandboxChoice[],
  jobFor: (choice: SandboxChoice) => Promise<ToolJob>,
  signal?: AbortSignal,
): Promise<{ job: ToolJob; run: ToolRunResult; ranOn: SandboxChoice['name'] }> {
  const skipped: string[] = [];
  for (const [index, choice] of choices.entries()) {
    const job = await jobFor(choice);
    try {
      const run = await choice.sandbox.run(job, signal);
      if (!skipped.length) return { job, run, ranOn: choice.name };
      const note = `${skipped.join('; ')}: the tool ran in the ${choice.name} sandbox instead`;
      return { job, run: { ...run, stderr: [note, ...run.stderr] }, ranOn: choice.name };
    } catch (error) {
      if (!(error instanceof SandboxUnavailableError) || index === choices.length - 1) throw error;
      skipped.push(`${choice.name} sandbox unavailable (${error.message})`);
    }
  }
  throw new SandboxUnavailableError('no sandbox to run the tool in');
}
