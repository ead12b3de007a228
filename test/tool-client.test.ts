/**
 * Letta's `client` in a sandboxed Python tool: the official client (`letta_client` from PyPI, installed
 * as the tool's pip requirement) built from LETTA_API_KEY and LETTA_BASE_URL, as Letta's sandbox
 * preamble builds it; None when the environment has no key. Here the key and the URL come from the
 * local sandbox config's variables, with its network allowed, as a self-hosted Letta user sets them.
 */
import Letta from '@letta-ai/letta-client';
import { useAgentServer } from './helpers/agent-server';

describe("a custom tool's Letta client", () => {
  const h = useAgentServer('openai');
  const sandboxConfig = async (body: Record<string, unknown>) => {
    const res = await fetch(`${h.server.url}/v1/sandbox-config/local`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as { id: string };
  };
  /** Runs `check` with the local sandbox's network allowed and LETTA_API_KEY and LETTA_BASE_URL set. */
  const withApiAccess = async (check: () => Promise<void>) => {
    const config = await sandboxConfig({ allow_network: true });
    const variables: string[] = [];
    try {
      // This server has no password: any key passes.
      for (const [key, value] of [
        ['LETTA_API_KEY', 'any key'],
        ['LETTA_BASE_URL', h.server.url],
      ]) {
        const res = await fetch(`${h.server.url}/v1/sandbox-config/${config.id}/environment-variable`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ key, value }),
        });
        expect(res.status).toBe(200);
        variables.push(((await res.json()) as { id: string }).id);
      }
      await check();
    } finally {
      for (const id of variables)
        await fetch(`${h.server.url}/v1/sandbox-config/environment-variable/${id}`, { method: 'DELETE' });
      await sandboxConfig({ allow_network: false });
    }
  };

  it('is None without LETTA_API_KEY, and edits its own agent through the API with one', async () => {
    const tool = await h.client.tools.create({
      source_code:
        'import os\n\ndef remember(fact: str) -> str:\n    """Remembers a fact.\n\n    Args:\n        fact: What to remember.\n    """\n    if client is None:\n        return "no client"\n    client.agents.blocks.update("human", agent_id=os.environ["LETTA_AGENT_ID"], value=fact)\n    return "remembered"\n',
      pip_requirements: [{ name: 'letta-client' }],
    });
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Nothing yet' }],
      tool_ids: [tool.id],
    });
    const remember = (fact: string) =>
      h.client.agents.tools.run('remember', { agent_id: agent.id, args: { fact } });

    expect(await remember('Likes tea')).toMatchObject({ status: 'success', func_return: 'no client' });

    await withApiAccess(async () => {
      expect(await remember('Likes tea')).toMatchObject({ status: 'success', func_return: 'remembered' });
      expect((await h.client.agents.blocks.retrieve('human', { agent_id: agent.id })).value).toBe(
        'Likes tea',
      );
    });
  }, 120_000);

  it("is the official TypeScript client in a TypeScript tool, which lists its own agent's tools", async () => {
    const tool = await h.client.tools.create({
      source_code:
        "export async function my_tools(): Promise<string> {\n  if (client === null) return 'no client';\n  const page = await client.agents.tools.list(process.env.LETTA_AGENT_ID);\n  return page.getPaginatedItems().map((t) => t.name).sort().join(',');\n}\n",
      source_type: 'typescript',
      json_schema: {
        name: 'my_tools',
        description: "Lists the agent's tools.",
        parameters: { type: 'object', properties: {}, required: [] },
      },
      npm_requirements: [{ name: '@letta-ai/letta-client' }],
    });
    const agent = await h.client.agents.create({
      model: 'openai/gpt-4o-mini',
      tools: ['memory_insert'],
      tool_ids: [tool.id],
    });
    const myTools = () => h.client.agents.tools.run('my_tools', { agent_id: agent.id, args: {} });
    await withApiAccess(async () => {
      const result = await myTools();
      expect(result.status).toBe('success');
      // The agent's tools as the API lists them: its defaults, memory_insert and this tool.
      expect(String(result.func_return).split(',')).toEqual(
        expect.arrayContaining(['memory_insert', 'my_tools']),
      );
    });
  }, 180_000);
});

describe("a sandboxed tool's own access token", () => {
  const PASSWORD = 'the server password tools never see';
  const h = useAgentServer('openai', { LETTA_SERVER_PASSWORD: PASSWORD });

  it('reaches its own agent through the injected client, not another agent, and ends with the call', async () => {
    const admin = new Letta({ baseURL: h.server.url, apiKey: PASSWORD, maxRetries: 0 });
    const allowNetwork = (allow: boolean) =>
      fetch(`${h.server.url}/v1/sandbox-config/local`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${PASSWORD}` },
        body: JSON.stringify({ allow_network: allow }),
      });
    const tool = await admin.tools.create({
      source_code:
        'import os\n\ndef poke(other_id: str) -> str:\n    """Edits its own memory and pokes another agent.\n\n    Args:\n        other_id: Another agent.\n    """\n    client.agents.blocks.update("human", agent_id=os.environ["LETTA_AGENT_ID"], value="Set by my own tool")\n    try:\n        client.agents.retrieve(other_id)\n        other = "reached"\n    except Exception as error:\n        other = str(getattr(error, "status_code", error))\n    try:\n        client.agents.messages.create(os.environ["LETTA_AGENT_ID"], messages=[{"role": "user", "content": "hi"}])\n        own = "sent"\n    except Exception as error:\n        own = str(getattr(error, "status_code", error))\n    return f"{other} {own} {os.environ[\'LETTA_API_KEY\']}"\n',
      pip_requirements: [{ name: 'letta-client' }],
    });
    const own = await admin.agents.create({
      model: 'openai/gpt-4o-mini',
      memory_blocks: [{ label: 'human', value: 'Nothing yet' }],
      tool_ids: [tool.id],
    });
    const other = await admin.agents.create({ model: 'openai/gpt-4o-mini' });
    expect((await allowNetwork(true)).status).toBe(200);
    try {
      h.stub.enqueue({ toolCalls: [{ name: 'poke', arguments: { other_id: other.id } }] }, { text: 'Done.' });
      const response = await admin.agents.messages.create(own.id, {
        messages: [{ role: 'user', content: 'Poke.' }],
      });
      const returned = response.messages.find((m) => m.message_type === 'tool_return_message') as {
        status: string;
        tool_return: string;
      };
      expect(returned.status).toBe('success');
      const [, otherStatus, ownMessage, token] = /^(\S+) (\S+) (\S+)$/.exec(returned.tool_return) ?? [];
      expect(otherStatus).toBe('403');
      // A message to its own agent would wait behind the turn that waits for the call: refused.
      expect(ownMessage).toBe('403');
      expect(token).toMatch(/^lct-/);
      expect((await admin.agents.blocks.retrieve('human', { agent_id: own.id })).value).toBe(
        'Set by my own tool',
      );
      // The call's token ended with the call.
      const afterwards = new Letta({ baseURL: h.server.url, apiKey: token, maxRetries: 0 });
      await expect(afterwards.agents.retrieve(own.id)).rejects.toMatchObject({ status: 401 });
    } finally {
      await allowNetwork(false);
    }
  }, 120_000);
});
