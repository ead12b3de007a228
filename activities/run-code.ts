/**
 * run_code: the `code` execution mode, the model's own code. It runs as custom tools do (on the turn's
 * task queue or the sandbox pool's, or as a local activity), in their sandbox: locally without network, or on
 * E2B when a key is set.
 */
import type { Database } from '../src/db';
import { SandboxUnavailableError, type Sandbox } from '../src/sandbox';
import type { CodeInterpreter } from '../src/sandbox/e2b-code';
import { codeAnswer, codeArguments, localCodeJob, localExecution } from '../src/sandbox/run-code';
import { toolCallActivity, type ToolExecutor } from './tool-call';
import type { RunCodeActivities } from '../contracts/activities';

export interface RunCodeDeps {
  db: Database;
  sandbox: Sandbox;
  /** E2B's code interpreter, when E2B_API_KEY is set: every language runs there then, as in Letta. */
  interpreter?: CodeInterpreter;
  /** How long the code may run. */
  timeoutMs: number;
}

/** The code's failure is in its answer, for the model to read; a sandbox that cannot run it fails the activity. */
export function runCodeExecutor({ sandbox, interpreter, timeoutMs }: RunCodeDeps): ToolExecutor {
  return {
    failedWithoutEffect: (error) => error instanceof SandboxUnavailableError,
    async execute({ tool, args, signal }) {
      const { code, language } = codeArguments(args);
      const execution = interpreter
        ? await interpreter.run(code, language, { timeoutMs, signal })
        : localExecution(
            await sandbox.run(
              localCodeJob(code, language, { timeoutMs, returnCharLimit: tool.return_char_limit }),
              signal,
            ),
          );
      return { status: 'success', text: codeAnswer(execution) };
    },
  };
}

export function runCodeActivities(deps: RunCodeDeps) {
  return { runCode: toolCallActivity(deps.db, runCodeExecutor(deps)) } satisfies RunCodeActivities;
}
