/**
 * Letta's run_code: the model's own code, run as a script in a sandbox, answered as E2B's execution
 * is in Letta (`{"results", "logs": {"stdout", "stderr"}, "error"?}`). Locally it is a job of the
 * local sandbox, with custom tools' isolation and limits and without network; with E2B_API_KEY set, an
 * E2B code interpreter runs it instead (src/sandbox/e2b-code.ts), as Letta does.
 */
import type { ToolJob, ToolRunResult } from './types';
import { ToolError } from '../returns/tool-error';

export const RUN_CODE_LANGUAGES = ['python', 'js', 'ts', 'r', 'java'] as const;
export type RunCodeLanguage = (typeof RUN_CODE_LANGUAGES)[number];

/** What the code's run gave, in E2B's terms. */
export interface CodeExecution {
  /** The value of the code's last expression, as text (python here; every language on E2B). */
  results: string[];
  stdout: string[];
  stderr: string[];
  error?: { name: string; value: string; traceback: string };
}

export function codeArguments(args: Record<string, unknown>): { code: string; language: RunCodeLanguage } {
  const { code, language } = args;
  if (typeof code !== 'string') throw new ToolError("missing or invalid argument 'code' (expected a string)");
  if (!RUN_CODE_LANGUAGES.includes(language as RunCodeLanguage))
    throw new ToolError(`invalid argument 'language' (expected one of ${RUN_CODE_LANGUAGES.join(', ')})`);
  return { code, language: language as RunCodeLanguage };
}

/** Runs the code as a module of its own and gives back the value of a last expression, as a notebook does. */
const PYTHON_RUNNER = `def run_code(code: str):
    """Runs code as a script; the value of its last expression is the result."""
    import ast

    tree = ast.parse(code, "<code>")
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    scope = {"__name__": "__main__"}
    exec(compile(tree, "<code>", "exec"), scope)
    if last is not None:
        value = eval(compile(ast.Expression(last.value), "<code>", "eval"), scope)
        if value is not None:
            return repr(value)
`;

/**
 * The local sandbox's job for the code: Python through a runner function, JavaScript and TypeScript
 * as the module itself (top-level await and imports work), with an empty entry point to call.
 * Languages the host has no runtime for are the tool's error.
 */
export function localCodeJob(
  code: string,
  language: RunCodeLanguage,
  limits: { timeoutMs: number; returnCharLimit: number },
): ToolJob {
  const common = { name: 'run_code', env: {}, network: false, ...limits };
  if (language === 'python') return { ...common, language: 'python', source: PYTHON_RUNNER, args: { code } };
  if (language === 'js' || language === 'ts')
    return {
      ...common,
      language: 'typescript',
      source: `${code}\nexport async function run_code() {}\n`,
      args: {},
    };
  throw new ToolError(
    `run_code cannot run ${language} in the local sandbox (python, js and ts only): set E2B_API_KEY to run it on E2B`,
  );
}

const FRIENDLY_ERROR = /^Error executing function run_code: ([\w.]+): ([\s\S]*)$/;

/** The local sandbox's result, in E2B's terms. */
export function localExecution(run: ToolRunResult): CodeExecution {
  const execution: CodeExecution = { results: [], stdout: run.stdout, stderr: run.stderr };
  if (run.status === 'success') {
    if (run.funcReturn !== null && run.funcReturn !== undefined)
      execution.results.push(String(run.funcReturn));
    return execution;
  }
  const [, name = 'Error', value = String(run.funcReturn)] =
    FRIENDLY_ERROR.exec(String(run.funcReturn)) ?? [];
  return { ...execution, error: { name, value, traceback: run.stderr.join('\n') } };
}

/** Letta's answer to the model: the execution as JSON, an error in it when the code failed. */
export function codeAnswer(execution: CodeExecution): string {
  const { results, stdout, stderr, error } = execution;
  return JSON.stringify({ results, logs: { stdout, stderr }, ...(error ? { error } : {}) });
}
