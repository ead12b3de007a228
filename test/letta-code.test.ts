import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
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

  /** `letta -p <prompt> --new-agent` with stream-json output: its lines, and the final result. */
  async function lettaCode(prompt: string) {
    const { stdout } = await run(
      'node',
      [letta, '-p', prompt, '--new-agent', '-m', 'openai/gpt-4o-mini', '--output-format', 'stream-json'],
      {
        cwd,
        timeout: 120_000,
        env: {
          PATH: process.env.PATH,
          HOME: home,
          LETTA_BASE_URL: h.server.url,
          LETTA_API_KEY: 'unused',
          // No telemetry to Letta's cloud, no self-update from the registry.
          LETTA_CODE_TELEM: '0',
          DISABLE_AUTOUPDATER: '1',
        },
      },
    );
    const lines = stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; message_type?: string });
    return { lines, result: lines.find((line) => line.type === 'result') as ResultLine | undefined };
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

  it('runs a client-side tool of its own to the end of the step', async () => {
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
    // The call paused the step; letta-code ran the command on its machine and sent the return back.
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
});
