import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { useAgentServer } from './helpers/agent-server';
import type { ChatRequest } from './helpers/openai-stub';
import { projectRoot } from '../src/paths';

const run = promisify(execFile);

interface ResultLine {
  type: 'result';
  subtype: string;
  result: string;
  agent_id: string;
  conversation_id: string;
}

/**
 * Letta's own CLI, letta-code, unmodified (scripts/install-letta-code.sh fetches it once per machine),
 * run headless against the server as its users run it, with the model behind the server stubbed.
 */
describe('letta-code, Letta’s CLI, against the server', () => {
  const h = useAgentServer('openai');
  let letta: string;
  let home: string;
  let cwd: string;

  beforeAll(() => {
    letta = execFileSync('bash', [path.join(projectRoot, 'scripts/install-letta-code.sh')], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    }).trim();
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-code-home-'));
    cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'letta-code-cwd-'));
  }, 300_000);
  afterAll(() => {
    for (const dir of [home, cwd]) fs.rmSync(dir, { recursive: true, force: true });
  });

  const lettaEnv = (baseUrl: string) => ({
    PATH: process.env.PATH,
    HOME: home,
    LETTA_BASE_URL: baseUrl,
    LETTA_API_KEY: 'unused',
    // No telemetry to Letta's cloud, no self-update from the registry.
    LETTA_CODE_TELEM: '0',
    DISABLE_AUTOUPDATER: '1',
  });
  const newAgentArgs = ['--new-agent', '-m', 'openai/gpt-4o-mini', '--output-format', 'stream-json'];

  const parsedLines = (stdout: string) => {
    const lines = stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; message_type?: string });
    return { lines, result: lines.find((line) => line.type === 'result') as ResultLine | undefined };
  };

  /** `letta -p <prompt> --new-agent` with stream-json output: its lines, and the final result. */
  async function lettaCode(prompt: string) {
    const { stdout } = await run('node', [letta, '-p', prompt, ...newAgentArgs], {
      cwd,
      timeout: 120_000,
      env: lettaEnv(h.server.url),
    });
    return parsedLines(stdout);
  }

  it('creates a new agent and answers a message', async () => {
    h.stub.setDefault(() => ({ text: 'Hello from the model.' }));
    const { result } = await lettaCode('hi there');
    expect(result).toMatchObject({ subtype: 'success', result: 'Hello from the model.' });
    const agent = await h.client.agents.retrieve(result!.agent_id, { include: ['agent.tags'] });
    expect(agent.tags).toContain('origin:letta-code');
    const conversation = await h.client.conversations.retrieve(result!.conversation_id);
    expect(conversation.agent_id).toBe(agent.id);
  }, 180_000);

  it('runs a client-side tool of its own to the end of the turn', async () => {
    const marker = `ran-locally-${process.pid}`;
    const seen: ChatRequest[] = [];
    h.stub.setDefault((request) => {
      seen.push(request);
      const last = request.messages.at(-1)!;
      if (last.role === 'tool')
        return { text: `The shell said: ${JSON.parse(String(last.content)).message}` };
      return { toolCalls: [{ name: 'ShellCommand', arguments: { command: `echo ${marker}` } }] };
    });
    const { lines, result } = await lettaCode('please run the shell');
    // The call paused the turn; letta-code ran the command on its machine and sent the return back.
    expect(seen[0].tools?.map((t) => t.function.name)).toContain('ShellCommand');
    expect(lines.map((line) => line.message_type)).toContain('tool_return_message');
    expect(result).toMatchObject({ subtype: 'success', result: `The shell said: ${marker}` });
    const history = (
      await h.client.conversations.messages.list(result!.conversation_id, { order: 'asc' })
    ).getPaginatedItems();
    expect(history.map((m) => m.message_type)).toEqual([
      'user_message',
      'approval_request_message',
      'approval_response_message',
      'tool_return_message',
      'assistant_message',
    ]);
  }, 180_000);

  it('resumes a stream whose connection dropped, from the last seq_id it had', async () => {
    // Between letta-code and the server: the stream that continues after the tool's return is cut
    // right after its first message, while the model is still thinking about the rest.
    const proxy = await cuttingProxy(
      h.server.url,
      (req, streams) =>
        /^\/v1\/conversations\/[^/]+\/messages/.test(req.url ?? '') && req.method === 'POST' && streams === 2,
    );
    try {
      h.stub.setDefault((request) => {
        const last = request.messages.at(-1)!;
        if (last.role === 'tool') return { text: 'All done after the shell.', delayMs: 1_500 };
        return { toolCalls: [{ name: 'ShellCommand', arguments: { command: 'echo resumed' } }] };
      });
      const child = execFile('node', [letta, '--input-format', 'stream-json', ...newAgentArgs], {
        cwd,
        timeout: 120_000,
        env: lettaEnv(proxy.url),
      });
      let stdout = '';
      child.stdout!.on('data', (chunk: string) => {
        stdout += chunk;
        if (stdout.includes('"type":"result"')) child.stdin!.end();
      });
      child.stdin!.write(
        `${JSON.stringify({ type: 'user', message: { role: 'user', content: 'please run the shell' } })}\n`,
      );
      await new Promise((resolve) => child.on('exit', resolve));
      const { result } = parsedLines(stdout);
      expect(proxy.cut).toBe(1);
      expect(proxy.requests).toContainEqual(expect.stringMatching(/^POST \/v1\/runs\/run-[^/]+\/stream$/));
      expect(result).toMatchObject({ subtype: 'success', result: 'All done after the shell.' });
    } finally {
      await proxy.close();
    }
  }, 180_000);
});

/**
 * A loopback HTTP proxy to `target` that cuts the connection of the responses `cut` picks (given the
 * request and how many requests of that kind came so far) right after their first message with a
 * `seq_id`, as a dropped network would.
 */
async function cuttingProxy(target: string, cut: (req: http.IncomingMessage, streams: number) => boolean) {
  const requests: string[] = [];
  const state = { cut: 0 };
  let streams = 0;
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${(req.url ?? '').split('?')[0]}`);
    if (req.method === 'POST' && /\/messages$/.test((req.url ?? '').split('?')[0])) streams += 1;
    const cutThis = cut(req, streams);
    const upstream = http.request(
      `${target}${req.url}`,
      { method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.on('data', (chunk: Buffer) => {
          res.write(chunk);
          if (cutThis && /"seq_id":\d+/.test(chunk.toString())) {
            state.cut += 1;
            answer.destroy();
            res.socket?.destroy();
          }
        });
        answer.on('end', () => res.end());
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    get cut() {
      return state.cut;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
