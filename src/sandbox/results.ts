/**
 * What a sandbox sends back of a call, bounded: Letta's result texts for a run that did not end on its
 * own or ended without a result, the runner's result held to the tool's return_char_limit, and the
 * head and tail of what the tool printed.
 */
import { constants } from 'node:os';
import { stringifyReturn } from '../returns/tool-returns';
import type { LimitHits } from './cgroups';
import type { RunnerResult, ToolJob, ToolRunResult } from './types';

/** What a tool may send back (SANDBOX_MAX_OUTPUT_BYTES, SANDBOX_OUTPUT_KEEP_BYTES, SANDBOX_MAX_RESULT_BYTES). */
export interface OutputLimits {
  /** A tool that prints more, stdout and stderr together, is stopped. */
  maxOutputBytes: number;
  /** Of each of stdout and stderr, the first and last halves of this many bytes are kept. */
  keepOutputBytes: number;
  /** A tool whose result (its return, already cut, and memory edits) takes more is stopped. */
  maxResultBytes: number;
}

export const failure = (
  job: ToolJob,
  kind: string,
  message: string,
): Pick<ToolRunResult, 'status' | 'funcReturn'> => ({
  status: 'error',
  funcReturn: `Error executing function ${job.name}: ${kind}: ${message}`,
});

/**
 * A call that could not start through the tool's own fault (a source that does not compile,
 * requirements that do not install): its error, said on stderr too, where the API's tool run shows it.
 */
export const notStarted = (job: ToolJob, error: Error): ToolRunResult => ({
  ...failure(job, error.name, error.message),
  stdout: [],
  stderr: [`${error.name}: ${error.message}`],
});

/** Seconds as Letta's message prints them (a Python float: `180.0`). */
const pythonFloat = (n: number) => (Number.isInteger(n) ? n.toFixed(1) : String(n));

export type Stop = 'timeout' | 'cancelled' | 'output' | 'result';

export function stoppedResult(job: ToolJob, stop: Stop, limits: OutputLimits) {
  if (stop === 'timeout')
    return failure(
      job,
      'TimeoutError',
      `Executing tool ${job.name} timed out after ${pythonFloat(job.timeoutMs / 1000)} seconds.`,
    );
  if (stop === 'cancelled') return failure(job, 'CancelledError', 'the run was cancelled');
  if (stop === 'result')
    return failure(
      job,
      'OutputLimitError',
      `the tool's result took more than ${limits.maxResultBytes} bytes and was stopped`,
    );
  return failure(
    job,
    'OutputLimitError',
    `the tool printed more than ${limits.maxOutputBytes} bytes and was stopped`,
  );
}

/** How a process ended: its exit code, or the signal (a name) that killed it. */
export interface Ending {
  code: number | null;
  signal: string | null;
}

const signalNames = new Map(Object.entries(constants.signals).map(([name, number]) => [number, name]));

/** A signal forkserver.py reports by number, by its name. */
export const signalName = (signal: number | null) =>
  signal === null ? null : (signalNames.get(signal) ?? String(signal));

/** bubblewrap exits with 128 + N when the command it runs was killed by signal N. */
export function bubblewrapEnding(code: number | null, signal: NodeJS.Signals | null): Ending {
  if (code === null || code <= 128 || !signalNames.has(code - 128)) return { code, signal };
  return { code: null, signal: signalName(code - 128) };
}

export function describeEnding({ code, signal }: Ending): string {
  if (signal) return `was killed (${signal})`;
  return code === null ? 'ended' : `exited (code ${code})`;
}

/** Which of the sandbox's limits the call hit, by its cgroup's counters before and after it. */
export function limitHit(before: LimitHits | undefined, after: LimitHits | undefined): string | null {
  if (!before || !after) return null;
  if (after.memory > before.memory)
    return 'out of memory: the sandbox reached its memory limit (SANDBOX_MEMORY_BYTES)';
  if (after.processes > before.processes)
    return 'process limit reached: the sandbox refused a fork (SANDBOX_MAX_PROCESSES)';
  return null;
}

/**
 * The runner's result, trusted no further than its size: a tool can write its own on the result
 * channel, so the return is held to the tool's return_char_limit here too.
 */
function runnerResult(job: ToolJob, parsed: RunnerResult): Omit<ToolRunResult, 'stdout' | 'stderr'> {
  const text = stringifyReturn(parsed.func_return);
  const chars = Math.max(parsed.func_return_chars ?? 0, text.length);
  const cut = chars > job.returnCharLimit;
  return {
    status: parsed.status === 'success' ? 'success' : 'error',
    funcReturn: cut ? text.slice(0, job.returnCharLimit) : parsed.func_return,
    ...(cut ? { returnChars: chars } : {}),
    agentState: parsed.agent_state ?? null,
  };
}

/** The call's result from the runner's text; without one, how the call ended and, if known, why. */
export function parsedResult(
  job: ToolJob,
  text: string,
  ending: Ending,
  cause: string | null,
): Omit<ToolRunResult, 'stdout' | 'stderr'> {
  let parsed: RunnerResult;
  try {
    parsed = JSON.parse(text) as RunnerResult;
  } catch {
    const why = cause ? ` (${cause})` : '';
    return failure(job, 'SandboxError', `the tool ${describeEnding(ending)} without a result${why}`);
  }
  return runnerResult(job, parsed);
}

/** What is sent back of one output stream: its head and tail, and how many bytes between were cut. */
export interface KeptOutput {
  head: string;
  tail: string;
  cut: number;
}

/** Letta's stdout or stderr list: the stream's text, its middle replaced by a note when it was cut. */
export function outputLines({ head, tail, cut }: KeptOutput): string[] {
  const text = cut > 0 ? `${head}\n[... ${cut} bytes cut ...]\n${tail}` : head + tail;
  return text ? [text] : [];
}

/** The head and tail of `bytes`, `keep` bytes at most. */
export function keptOf(bytes: Buffer, keep: number): KeptOutput {
  if (bytes.length <= keep) return { head: bytes.toString('utf8'), tail: '', cut: 0 };
  const half = Math.floor(keep / 2);
  return {
    head: bytes.toString('utf8', 0, half),
    tail: bytes.toString('utf8', bytes.length - (keep - half)),
    cut: bytes.length - keep,
  };
}

/** Keeps the head and tail of a stream as it comes, `keep` bytes at most; the rest is only counted. */
export function outputKeeper(keep: number) {
  const half = Math.floor(keep / 2);
  let head = Buffer.alloc(0);
  let tail = Buffer.alloc(0);
  let size = 0;
  return {
    add(chunk: Buffer) {
      size += chunk.length;
      const toHead = chunk.subarray(0, Math.max(0, half - head.length));
      if (toHead.length) head = Buffer.concat([head, toHead]);
      const rest = chunk.subarray(toHead.length);
      if (rest.length) tail = Buffer.concat([tail, rest]).subarray(-(keep - half));
    },
    get size() {
      return size;
    },
    kept(): KeptOutput {
      const cut = size - head.length - tail.length;
      // Uncut, the two halves are one text: decoded whole, a character across them stays whole.
      if (cut === 0) return keptOf(Buffer.concat([head, tail]), keep);
      return { head: head.toString('utf8'), tail: tail.toString('utf8'), cut };
    },
  };
}
