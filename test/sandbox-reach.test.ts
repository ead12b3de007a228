/**
 * The server as root with its data under a folder the sandbox's user (nobody) cannot enter, as a
 * root user's clone under /root or a `mktemp -d` has it: tools with requirements, and so tools using
 * the injected client, still run, their environments kept where the sandbox can reach them; `--check`
 * says where they live, and exactly what to change when SANDBOX_ENV_DIR is set to a closed folder.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { useAgentServer } from './helpers/agent-server';
import { testTemporalAddress } from './helpers/env';
import { startProcess } from './helpers/process';
import { blockedFolder, reachableFolder } from '../src/sandbox/reach';

const closed = fs.mkdtempSync(path.join(os.tmpdir(), 'closed-')); // mkdtemp makes it 0700
const dataDir = path.join(closed, 'data');
fs.mkdirSync(dataDir);

/** Whether nobody can read `file`, as the sandbox's bubblewrap does (setpriv drops to nobody). */
const nobodyReads = (file: string) =>
  spawnSync('setpriv', ['--reuid', '65534', '--regid', '65534', '--clear-groups', 'cat', file]).status === 0;

afterAll(() => fs.rmSync(closed, { recursive: true, force: true }));

it('runs as root, so that the sandbox drops to nobody', () => {
  expect(process.getuid?.()).toBe(0);
  expect(fs.statSync(closed).mode & 0o777).toBe(0o700);
  expect(blockedFolder(dataDir)).toBe(closed);
});

it('gives the sandbox a copy of a folder it cannot enter, the same files, and the folder itself when it can', () => {
  const runners = path.join(closed, 'runners');
  fs.mkdirSync(runners);
  fs.writeFileSync(path.join(runners, 'runner.py'), 'print("hi")\n');
  expect(nobodyReads(path.join(runners, 'runner.py'))).toBe(false);
  const copy = reachableFolder(runners);
  expect(copy).not.toBe(runners);
  expect(fs.readFileSync(path.join(copy, 'runner.py'), 'utf8')).toBe('print("hi")\n');
  expect(nobodyReads(path.join(copy, 'runner.py'))).toBe(true);
  expect(reachableFolder(runners)).toBe(copy); // named by its contents: made once
  expect(reachableFolder(os.tmpdir())).toBe(os.tmpdir());
});

describe('a server whose DATA_DIR the sandbox cannot enter', () => {
  const h = useAgentServer('openai', { DATA_DIR: dataDir });

  it('runs a tool whose requirement is the injected client, which reads its own agent', async () => {
    const source = [
      'import os',
      '',
      'def my_agent() -> str:',
      '    """Names its agent."""',
      '    return "no client" if client is None else client.agents.retrieve(os.environ["LETTA_AGENT_ID"]).name',
      '',
    ].join('\n');
    const tool = await h.client.tools.upsert({
      source_code: source,
      pip_requirements: [{ name: 'letta-client' }],
    });
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      name: 'behind-a-closed-folder',
      tool_ids: [tool.id],
    });
    const result = await h.client.agents.tools.run('my_agent', { agent_id: agent.id, args: {} });
    expect(result).toMatchObject({ status: 'success', func_return: 'behind-a-closed-folder' });
    // Not in DATA_DIR, which nobody cannot enter.
    expect(fs.existsSync(path.join(dataDir, 'sandbox-envs'))).toBe(false);
  }, 180_000);
});

describe('npm start -- --check with DATA_DIR behind a closed folder', () => {
  const check = async (env: Record<string, string>) => {
    const proc = startProcess('node', ['dist/src/main.js', '--check'], {
      DATA_DIR: dataDir,
      DATABASE_URL: 'postgres://root@127.0.0.1:1/none',
      TEMPORAL_ADDRESS: testTemporalAddress(),
      ...env,
    });
    await proc.exited;
    return proc.output();
  };

  it('says where the tool environments live instead', async () => {
    expect(await check({})).toMatch(
      new RegExp(`✓ tool environments: \\S+ \\(the sandbox's user cannot enter ${closed}, mode 0700`),
    );
  }, 60_000);

  it('says exactly what to change when SANDBOX_ENV_DIR is closed to the sandbox', async () => {
    const envDir = path.join(closed, 'envs');
    expect(await check({ SANDBOX_ENV_DIR: envDir })).toMatch(
      new RegExp(
        `✗ tool environments: the sandbox's user \\(nobody\\) cannot enter ${closed} \\(mode 0700\\), on the way to SANDBOX_ENV_DIR=${envDir}.*\\n\\s+→ chmod o\\+x ${closed}, or set SANDBOX_ENV_DIR`,
      ),
    );
  }, 60_000);
});
