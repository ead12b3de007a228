/** Letta's result texts for a run that did not end on its own, or ended without a result. */
import type { RunnerResult, ToolJob, ToolRunResult } from './types';

export const failure = (
  job: ToolJob,
  kind: string,
  message: string,
): Pick<ToolRunResult, 'status' | 'funcReturn'> => ({
  status: 'error',
  funcReturn: `Error executing function ${job.name}: ${kind}: ${message}`,
});

/** Seconds as Letta's message prints them (a Python float: `180.0`). */
const pythonFloat = (n: number) => (Number.isInteger(n) ? n.toFixed(1) : String(n));

export type Stop = 'timeout' | 'cancelled' | 'output';

export function stoppedResult(job: ToolJob, stop: Stop, maxOutputBytes: number) {
  if (stop === 'timeout')
    return failure(
      job,
      'TimeoutError',
      `Executing tool ${job.name} timed out after ${pythonFloat(job.timeoutMs / 1000)} seconds.`,
    );
  if (stop === 'cancelled') return failure(job, 'CancelledError', 'the run was cancelled');
  return failure(
    job,
    'OutputLimitError',
    `the tool printed more than ${maxOutputBytes} bytes and was stopped`,
  );
}

export function parsedResult(
  job: ToolJob,
  text: string,
  code: number | null,
): Omit<ToolRunResult, 'stdout' | 'stderr'> {
  try {
    const parsed = JSON.parse(text) as RunnerResult;
    return { status: parsed.status, funcReturn: parsed.func_return, agentState: parsed.agent_state ?? null };
  } catch {
    const how = code === null ? 'was killed' : `exited (code ${code})`;
    return failure(job, 'SandboxError', `the tool ${how} without a result`);
  }
}

export const lines = (text: string) => (text ? [text] : []);
