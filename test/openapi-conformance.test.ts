/**
 * The API keeps the promises of its own document: schemathesis (from PyPI, pinned in
 * test/schemathesis/requirements.txt) reads /openapi.json from a fresh server with a password and runs
 * every check against every operation: answers in their declared statuses, media types and shapes,
 * requests the document forbids refused with a 4xx, requests it allows not refused for their form,
 * public routes open and the others closed without the password, undeclared methods 405 with `Allow`,
 * never a 500. A bounded run: a few examples per operation, deterministic.
 *
 * The run's settings, and what it leaves out with the reason for each, are in
 * test/schemathesis/schemathesis.toml.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { useAgentServer } from './helpers/agent-server';

const PASSWORD = 'a-password-for-schemathesis';
const ROOT = path.join(__dirname, '..');
const SETTINGS = path.join(ROOT, 'test/schemathesis/schemathesis.toml');

/**
 * Runs the Python of schemathesis's environment (scripts/python-venv.sh makes it on first use) in
 * `cwd`: Hypothesis keeps its files under the working directory's .hypothesis/.
 */
function schemathesis(args: string[], cwd: string): Promise<{ status: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      'bash',
      [path.join(ROOT, 'scripts/python-venv.sh'), '-m', 'schemathesis.cli', ...args],
      {
        cwd,
        env: {
          ...process.env,
          PYTHON_VENV: '.venv-schemathesis',
          PYTHON_REQUIREMENTS: 'test/schemathesis/requirements.txt',
          NO_COLOR: '1',
        },
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) =>
        resolve({ status: error ? Number(error.code ?? 1) : 0, output: `${stdout}${stderr}` }),
    );
  });
}

/** The run's failures and the summary: what a reader of a red CI needs. */
const failuresOf = (output: string) => output.slice(Math.max(0, output.indexOf('FAILURES')) || 0);

describe('the OpenAPI document, checked by schemathesis', () => {
  // Schemathesis also sends requests without the password and with a wrong one (its `ignored_auth`
  // check); past AUTH_FAILURE_LIMIT every later request would get 429 and test nothing.
  const h = useAgentServer('openai', { LETTA_SERVER_PASSWORD: PASSWORD, AUTH_FAILURE_LIMIT: '1000000' });

  it('finds every operation keeping its document with every check', async () => {
    const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'schemathesis-'));
    const { status, output } = await schemathesis(
      [
        '--config-file',
        SETTINGS,
        'run',
        `${h.server.url}/openapi.json`,
        '--header',
        `Authorization: Bearer ${PASSWORD}`,
        '--workers',
        '2',
        '--no-color',
      ],
      workDir,
    ).finally(() => fs.rmSync(workDir, { recursive: true, force: true }));
    if (status !== 0) throw new Error(`schemathesis exited ${status}:\n${failuresOf(output)}`);
    // Every operation the document lists was tested.
    const selected = /Selected: (\d+)\/\d+/.exec(output)?.[1];
    expect(/Tested: (\d+)/.exec(output)?.[1]).toBe(selected);
    expect(output).not.toMatch(/\d+ failures?\b/);
  }, 600_000);
});
