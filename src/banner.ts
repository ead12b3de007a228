/**
 * What `npm start` prints once the server is up, on a terminal: where everything is, and what is still
 * missing with the line that fixes it. Not on a terminal, the same facts are one log line.
 */
import type { Config } from './config';

export interface StartupFacts {
  apiUrl?: string;
  temporalUiUrl?: string;
  temporalAddress: string;
  dataDir: string;
  /** Whether the database is the embedded PGlite (no DATABASE_URL). */
  embeddedDatabase: boolean;
  /** Model providers with a key or an endpoint. */
  providers: string[];
  sandbox: { description: string; problem?: string };
  /** A password is asked of every API request. */
  passwordRequired: boolean;
}

export function modelProviders(config: Config): string[] {
  return [
    ...(config.OPENAI_API_KEY || config.OPENAI_BASE_URL
      ? [`openai${config.OPENAI_BASE_URL ? ` (${config.OPENAI_BASE_URL})` : ''}`]
      : []),
    ...(config.ANTHROPIC_API_KEY ? ['anthropic'] : []),
  ];
}

/** The command that gets the sandbox working, for a problem the sandbox's probe reported. */
export function sandboxFix(problem: string): string {
  if (/bwrap|bubblewrap/i.test(problem))
    return process.platform === 'linux'
      ? 'install bubblewrap: sudo apt-get install bubblewrap (Debian, Ubuntu) or sudo dnf install bubblewrap'
      : 'bubblewrap is Linux only: set SANDBOX_TYPE=e2b and E2B_API_KEY to run custom tools on E2B';
  if (/python/i.test(problem)) return 'install python3, or set PYTHON_PATH';
  return 'see docs/operations.md, "Running it on one machine", and docs/configuration.md for the SANDBOX_ variables';
}

const bold = (text: string) => `\u001b[1m${text}\u001b[22m`;
const green = (text: string) => `\u001b[32m${text}\u001b[39m`;
const yellow = (text: string) => `\u001b[33m${text}\u001b[39m`;

export function startupBanner(facts: StartupFacts): string {
  const ok = (text: string) => `${green('✓')} ${text}`;
  const missing = (text: string, fix: string) => `${yellow('!')} ${text}\n${' '.repeat(17)}→ ${fix}`;
  const row = (label: string, value: string) => `  ${label.padEnd(14)} ${value}`;
  const { sandbox } = facts;
  const rows = [
    ...(facts.apiUrl
      ? [row('API', facts.apiUrl), row('API reference', `${facts.apiUrl}/docs`)]
      : [row('API', 'not served by this process (--role=worker or --role=tools)')]),
    row('Temporal UI', facts.temporalUiUrl ?? `the UI of ${facts.temporalAddress}`),
    row('data', `${facts.dataDir}${facts.embeddedDatabase ? ' (embedded PostgreSQL)' : ''}`),
    row(
      'models',
      facts.providers.length
        ? ok(facts.providers.join(', '))
        : missing(
            'none configured',
            'set OPENAI_API_KEY or ANTHROPIC_API_KEY (OPENAI_BASE_URL: Ollama, vLLM…)',
          ),
    ),
    row(
      'sandbox',
      sandbox.problem
        ? missing(`custom tools refused: ${sandbox.problem}`, sandboxFix(sandbox.problem))
        : ok(sandbox.description),
    ),
    row(
      'password',
      facts.passwordRequired
        ? 'required (Authorization: Bearer <password>)'
        : 'none: the API answers on loopback only',
    ),
  ];
  return `\n${bold('letta-temporal is ready')}\n${rows.join('\n')}\n\n`;
}
