import http from 'node:http';
import { toolReturnsOf } from './helpers/tool-returns';
import type { AddressInfo } from 'node:net';
import { useAgentServer } from './helpers/agent-server';
import { startE2BServer, type E2BServer } from './helpers/e2b-server';

/** Letta's run_code without E2B: the model's code in the local sandbox, answered in E2B's terms. */
describe('run_code in the local sandbox', () => {
  const h = useAgentServer('openai');
  let agentId: string;
  beforeAll(async () => {
    agentId = (await h.client.agents.create({ model: 'openai/gpt-4o-mini', tools: ['run_code'] })).id;
  });

  const runCode = async (code: string, language: string) => {
    h.stub.enqueue({ toolCalls: [{ name: 'run_code', arguments: { code, language } }] }, { text: 'done' });
    const response = await h.client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: 'run it' }],
    });
    const result = toolReturnsOf(response.messages)[0];
    const text = String(result?.tool_return);
    return { status: result?.status, text, answer: text.startsWith('{') ? JSON.parse(text) : undefined };
  };

  it('runs Python: what it prints, and the value of its last expression', async () => {
    const { status, answer } = await runCode('import math\nprint("hello")\nmath.factorial(5)', 'python');
    expect(status).toBe('success');
    expect(answer).toEqual({ results: ['120'], logs: { stdout: ['hello\n'], stderr: [] } });
  });

  it('runs JavaScript and TypeScript, with top-level await', async () => {
    const js = await runCode('const n = await Promise.resolve(6 * 7);\nconsole.log(`js ${n}`);', 'js');
    expect(js.answer).toEqual({ results: [], logs: { stdout: ['js 42\n'], stderr: [] } });
    const ts = await runCode(
      'const greet = (name: string): string => `hi ${name}`;\nconsole.log(greet("ts"));',
      'ts',
    );
    expect(ts.answer.logs.stdout).toEqual(['hi ts\n']);
  });

  it('answers the code’s error with its name, message and traceback, for the model to read', async () => {
    const { status, answer } = await runCode('print("before")\n1 / 0', 'python');
    expect(status).toBe('success');
    expect(answer.logs.stdout).toEqual(['before\n']);
    expect(answer.error).toMatchObject({ name: 'ZeroDivisionError', value: 'division by zero' });
    expect(answer.error.traceback).toContain('ZeroDivisionError');
  });

  it('has no network, and nothing of one run is seen by the next', async () => {
    const site = http.createServer((_req, res) => res.end('reached'));
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    const { port } = site.address() as AddressInfo;
    try {
      const { answer } = await runCode(
        `import urllib.request\nurllib.request.urlopen("http://127.0.0.1:${port}/", timeout=5).read()`,
        'python',
      );
      expect(answer.error?.name).toBe('URLError');
    } finally {
      site.close();
    }
    await runCode('open("/tmp/left-behind", "w").write("x")', 'python');
    const { answer } = await runCode('import os\nos.path.exists("/tmp/left-behind")', 'python');
    expect(answer.results).toEqual(['False']);
  });

  it('refuses a language the host cannot run, saying how to run it', async () => {
    const { status, text } = await runCode('print(1)', 'r');
    expect(status).toBe('error');
    expect(text).toBe(
      'run_code cannot run r in the local sandbox (python, js and ts only): set E2B_API_KEY to run it on E2B',
    );
  });
});

/** With E2B_API_KEY, E2B's own SDK runs every language, against a server that speaks E2B's API. */
describe('run_code on E2B', () => {
  let e2b: E2BServer;
  const env: Record<string, string> = {};
  const saved = { ...process.env };
  beforeAll(async () => {
    e2b = await startE2BServer();
    // The SDK reads where E2B is from the environment, as it does for a self-hosted E2B.
    Object.assign(process.env, e2b.env);
    env.E2B_API_KEY = e2b.apiKey;
  });
  afterAll(async () => {
    process.env = saved;
    await e2b?.close();
  });
  const h = useAgentServer('openai', env);

  it('runs the code in a fresh sandbox per call, killed after it, and answers as Letta does', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', tools: ['run_code'] });
    h.stub.enqueue(
      {
        toolCalls: [
          { name: 'run_code', arguments: { code: 'console.log("on e2b"); 6 * 7', language: 'js' } },
        ],
      },
      {
        toolCalls: [
          { name: 'run_code', arguments: { code: 'raise ValueError("nope")', language: 'python' } },
        ],
      },
      { text: 'done' },
    );
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'run it' }],
    });
    const answers = toolReturnsOf(response.messages).map((m) => JSON.parse(String(m.tool_return)));
    expect(answers[0]).toEqual({ results: ['42'], logs: { stdout: ['on e2b\n'], stderr: [] } });
    expect(answers[1].error).toMatchObject({ name: 'ValueError', value: 'nope' });
    const created = e2b.requests.filter((r) => r.method === 'POST' && r.path === '/v2/sandboxes');
    const executed = e2b.requests.filter((r) => r.path === '/execute').map((r) => r.body);
    expect(created).toHaveLength(2);
    expect(executed).toEqual([
      expect.objectContaining({ code: 'console.log("on e2b"); 6 * 7', language: 'js' }),
      expect.objectContaining({ code: 'raise ValueError("nope")' }),
    ]);
    expect(e2b.liveSandboxes()).toBe(0);
  });
});
