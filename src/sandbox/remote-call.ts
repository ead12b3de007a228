/**
 * What the remote sandboxes (E2B, Modal) share: they run the runner by a command whose only channel
 * back is its output, so the result comes framed on stdout; their timers decide timeouts; their own
 * failures are the sandbox's, not the tool's.
 */
import { CorruptResultError, splitFramedResult } from './result-frame';
import { failure, keptOf, outputLines, parsedResult, type OutputLimits } from './results';
import { SandboxUnavailableError, type ToolJob, type ToolRunResult } from './types';

/** Variables new with every call (a call's own access token): they never decide which sandbox is reused. */
const PER_CALL_VARIABLES = new Set(['LETTA_API_KEY']);

/**
 * The job's environment as a kept sandbox is chosen by (each call still passes its own): every
 * variable of its config and agent, in order, without the per-call ones.
 */
export const reusableEnv = (job: ToolJob): [string, string][] =>
  Object.entries(job.env)
    .filter(([name]) => !PER_CALL_VARIABLES.has(name))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

/** What a finished remote command gave back. */
export interface CommandOutput {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/** The tool's result from the runner's framed stdout, with what it printed, kept as the limits say. */
export function framedResult(
  job: ToolJob,
  output: CommandOutput,
  marker: string,
  outputs: OutputLimits,
): ToolRunResult {
  try {
    const { result, stdout } = splitFramedResult(Buffer.from(output.stdout), marker);
    const captured = capturedOutput(stdout, output.stderr, outputs);
    if (result === undefined) {
      const message = `the tool exited (code ${output.exitCode}) without a result`;
      return { ...failure(job, 'SandboxError', message), ...captured };
    }
    return { ...parsedResult(job, result, { code: output.exitCode, signal: null }, null), ...captured };
  } catch (error) {
    if (!(error instanceof CorruptResultError)) throw error;
    return { ...failure(job, error.name, error.message), ...capturedOutput('', output.stderr, outputs) };
  }
}

/** Remote sandboxes hand output over whole: only its head and tail are kept. */
export function capturedOutput(
  stdout: string,
  stderr: string,
  outputs: OutputLimits,
): Pick<ToolRunResult, 'stdout' | 'stderr'> {
  const kept = (text: string) => outputLines(keptOf(Buffer.from(text), outputs.keepOutputBytes));
  return { stdout: kept(stdout), stderr: kept(stderr) };
}

/** Settles when the tool's time is up or the run is cancelled, whichever comes first. */
export function stopWhen(timeoutMs: number, signal?: AbortSignal) {
  let timer: NodeJS.Timeout | undefined;
  let onAbort = () => {};
  const stopped = new Promise<'timeout' | 'cancelled'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
    onAbort = () => resolve('cancelled');
    if (signal?.aborted) onAbort();
    signal?.addEventListener('abort', onAbort);
  });
  const clear = () => {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  };
  return { stopped, clear };
}

/** A failure of the sandbox `name` itself (unreachable, refused, gone): the server's, not the tool's. */
export function unavailable(name: string, error: unknown): SandboxUnavailableError {
  if (error instanceof SandboxUnavailableError) return error;
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return new SandboxUnavailableError(`${name} sandbox: ${text}`, { cause: error });
}

export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/** runner.py's job where its result comes back framed on stdout under `marker`. */
export const framedRunnerJob = (job: ToolJob, marker: string) => ({
  source: job.source,
  args: job.args,
  return_char_limit: job.returnCharLimit,
  agent_state: job.agentState,
  agent_id: job.agentId,
  marker,
});

/** pip's spelling of the job's requirements. */
export const pipSpecs = (job: ToolJob): string[] =>
  (job.pipRequirements ?? []).map((r) => (r.version ? `${r.name}==${r.version}` : r.name));
