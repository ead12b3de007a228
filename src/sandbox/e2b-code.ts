/**
 * E2B's code interpreter, as Letta's run_code uses it: a fresh sandbox per call (the SDK's default
 * code-interpreter template unless E2B_CODE_TEMPLATE names one), killed after it. The SDK's own
 * E2B_API_URL and E2B_SANDBOX_URL (or E2B_DOMAIN) reach a self-hosted E2B.
 */
import { Sandbox } from '@e2b/code-interpreter';
import type { SandboxSettings } from './settings';
import type { CodeExecution, RunCodeLanguage } from './run-code';

export interface CodeInterpreter {
  run(
    code: string,
    language: RunCodeLanguage,
    options: { timeoutMs: number; signal?: AbortSignal },
  ): Promise<CodeExecution>;
}

/** E2B's interpreter when E2B_API_KEY is set (Letta's rule for run_code); none otherwise. */
export function codeInterpreterFor(config: SandboxSettings): CodeInterpreter | undefined {
  if (!config.E2B_API_KEY) return undefined;
  return e2bCodeInterpreter({ apiKey: config.E2B_API_KEY, template: config.E2B_CODE_TEMPLATE });
}

export function e2bCodeInterpreter(options: { apiKey: string; template?: string }): CodeInterpreter {
  return {
    async run(code, language, { timeoutMs, signal }) {
      // The sandbox outlives the code by a margin, in case the kill below never reaches E2B.
      const lifetime = { apiKey: options.apiKey, timeoutMs: timeoutMs + 60_000 };
      const sandbox = options.template
        ? await Sandbox.create(options.template, lifetime)
        : await Sandbox.create(lifetime);
      // The SDK's run takes no signal: a cancel kills the sandbox, which ends the run.
      const kill = () => void sandbox.kill().catch(() => undefined);
      signal?.addEventListener('abort', kill, { once: true });
      try {
        const execution = await sandbox.runCode(code, {
          // Letta leaves the language out for Python: the interpreter's default.
          ...(language === 'python' ? {} : { language }),
          timeoutMs,
        });
        signal?.throwIfAborted();
        const { name, value, traceback } = execution.error ?? {};
        return {
          results: execution.results.map((result) => result.text ?? String(result)),
          stdout: execution.logs.stdout,
          stderr: execution.logs.stderr,
          ...(execution.error ? { error: { name: name!, value: value!, traceback: traceback! } } : {}),
        };
      } finally {
        signal?.removeEventListener('abort', kill);
        await sandbox.kill().catch(() => undefined);
      }
    },
  };
}
