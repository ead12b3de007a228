import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { useAgentServer } from './helpers/agent-server';
import { writeSimpleIndex, writeWheel } from './helpers/wheels';

/**
 * The end-to-end case: a Python tool with a pip requirement, created through the API and
 * attached to an agent, runs in the local sandbox when the model calls it, its requirement installed
 * from a local package index.
 */
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'sandbox-requirements-'));
fs.chmodSync(work, 0o755); // the sandbox's uid (nobody) reads the venvs in it
const index = writeSimpleIndex(path.join(work, 'index'), [
  writeWheel(path.join(work, 'wheels'), { name: 'tinyslug', version: '1.2.0' }),
]);

describe('a custom tool with pip requirements, called by the model', () => {
  const h = useAgentServer('openai', {
    PIP_INDEX_URL: index,
    SANDBOX_ENV_DIR: path.join(work, 'envs'),
  });
  afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

  const source = [
    'import tinyslug',
    '',
    'def slug_version(fail: bool) -> str:',
    '    """Reports the version of tinyslug.',
    '',
    '    Args:',
    '        fail: Whether to fail.',
    '    """',
    '    print("tinyslug is here")',
    '    if fail:',
    '        raise RuntimeError("asked to fail")',
    '    return "tinyslug " + tinyslug.VERSION',
    '',
  ].join('\n');

  it('installs the requirement, shows what the tool printed, and turns its exception into an error return', async () => {
    const tool = await h.client.tools.create({
      source_code: source,
      pip_requirements: [{ name: 'tinyslug', version: '1.2.0' }],
    });
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini' });
    await h.client.agents.tools.attach(tool.id, { agent_id: agent.id });
    h.stub.enqueue(
      { toolCalls: [{ name: 'slug_version', arguments: { fail: false } }] },
      { toolCalls: [{ name: 'slug_version', arguments: { fail: true } }] },
      { text: 'Done.' },
    );
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Which tinyslug?' }],
    });
    const returns = response.messages.filter((m) => m.message_type === 'tool_return_message');
    expect(returns[0]).toMatchObject({
      status: 'success',
      tool_return: 'tinyslug 1.2.0',
      stdout: ['tinyslug is here\n'],
    });
    expect(returns[1]).toMatchObject({
      status: 'error',
      tool_return: 'Error executing function slug_version: RuntimeError: asked to fail',
    });
    // The model saw the error as the tool's return.
    const toolMessages = h.stub.requests.at(-1)!.messages.filter((m) => m.role === 'tool');
    expect(toolMessages.at(-1)!.content).toContain('RuntimeError: asked to fail');
  });
  it("installs the local sandbox config's requirements for every tool", async () => {
    const res = await fetch(`${h.server.url}/v1/sandbox-config/local`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ pip_requirements: [{ name: 'tinyslug' }] }),
    });
    expect(res.status).toBe(200);
    const tool = await h.client.tools.create({
      source_code: 'import tinyslug\n\ndef which() -> str:\n    """Which."""\n    return tinyslug.VERSION\n',
    });
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [tool.id] });
    expect(await h.client.agents.tools.run('which', { agent_id: agent.id, args: {} })).toMatchObject({
      status: 'success',
      func_return: '1.2.0',
    });
  });
  it('says why a tool run through the API did not start when its requirement does not install', async () => {
    const tool = await h.client.tools.create({
      source_code: 'def absent() -> str:\n    """Absent."""\n    return "never"\n',
      pip_requirements: [{ name: 'not-in-the-index' }],
    });
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [tool.id] });
    const result = await h.client.agents.tools.run('absent', { agent_id: agent.id, args: {} });
    // Letta leaves a failed run's return out: stderr says what went wrong.
    expect(result).toMatchObject({ status: 'error', func_return: null });
    expect(result.stderr).toEqual([
      expect.stringMatching(/^ToolEnvironmentError: cannot install not-in-the-index/),
    ]);
  });
});
