/**
 * Letta's `client` in a tool that runs on E2B or Modal: those sandboxes reach the API at
 * LETTA_PUBLIC_URL, so a call there gets it as LETTA_BASE_URL with a scoped token of its own as
 * LETTA_API_KEY (src/access/tool-api-access.ts, src/tools/custom-tools.ts), and nothing without it.
 * The fake E2B cloud (test/helpers/e2b-cloud.ts) and Modal server (test/helpers/modal-server.ts) run
 * the tools' commands on this host, so a tool really reaches the test server at that URL, with its
 * token, while its call lasts. test/tool-client.test.ts checks the same of the local sandbox.
 */
import Letta from '@letta-ai/letta-client';
import fs from 'node:fs';
import { Sandbox } from 'e2b';
import pino from 'pino';
import type { E2BSdk } from '../src/sandbox/e2b';
import { modalUnsupportedReason } from '../src/sandbox/modal-support';
import { useAgentServer } from './helpers/agent-server';
import { FakeE2B } from './helpers/e2b-cloud';
import { freePort } from './helpers/env';
import { useModalServer } from './helpers/modal-server';

const modalSupported = modalUnsupportedReason() === null;

/**
 * For a describe block: every call of the `e2b` SDK's Sandbox class (create, connect, list) goes to
 * a fake E2B cloud. The server builds its E2B sandbox on that class itself (src/sandbox/index.ts), and
 * the fake of E2B's wire protocol (test/helpers/e2b-server.ts) serves the code interpreter alone, not
 * the commands and files an E2B tool call uses.
 */
function useE2BCloud(): FakeE2B {
  const cloud = new FakeE2B();
  const spies: jest.SpyInstance[] = [];
  beforeAll(() => {
    const sdk = Sandbox as unknown as E2BSdk;
    spies.push(
      jest.spyOn(sdk, 'create').mockImplementation((template, opts) => cloud.create(template, opts)),
      jest.spyOn(sdk, 'connect').mockImplementation((id, opts) => cloud.connect(id, opts)),
      jest.spyOn(sdk, 'list').mockImplementation((opts) => cloud.list(opts)),
    );
  });
  afterAll(async () => {
    for (const spy of spies) spy.mockRestore();
    for (const sandbox of cloud.sandboxes) {
      await sandbox.kill();
      fs.rmSync(sandbox.root, { recursive: true, force: true });
    }
  });
  return cloud;
}

/**
 * A tool named `name` that reads its own agent and `other_id` through the API with what it was given,
 * as Letta's client would (the fakes' python3 has no `letta_client`, so urllib does it), and says
 * what it saw: its key as is (the server blots it out of the result) and reversed (which it does not).
 */
const reachTool = (name: string) => `import json, os, urllib.error, urllib.request


def read_agent(agent_id):
    request = urllib.request.Request(
        os.environ["LETTA_BASE_URL"] + "/v1/agents/" + agent_id,
        headers={"Authorization": "Bearer " + os.environ["LETTA_API_KEY"]},
    )
    try:
        return urllib.request.urlopen(request, timeout=10).status
    except urllib.error.HTTPError as error:
        return error.code


def ${name}(other_id: str) -> str:
    """Reads its own agent and another one through the API.

    Args:
        other_id: Another agent.
    """
    key = os.environ.get("LETTA_API_KEY")
    seen = {"base_url": os.environ.get("LETTA_BASE_URL"), "key": key, "client": client is not None}
    if key:
        seen.update(own=read_agent(os.environ["LETTA_AGENT_ID"]), other=read_agent(other_id), reversed_key=key[::-1])
    return json.dumps(seen)
`;

interface Seen {
  base_url: string | null;
  key: string | null;
  client: boolean;
  own?: number;
  other?: number;
  reversed_key?: string;
}

describe("Letta's client in a tool on E2B or Modal", () => {
  const cloud = useE2BCloud();
  const m = useModalServer();
  /** E2B as the operator's sandbox; Modal for the tools that ask for it. */
  const remoteSandboxes = () => ({
    SANDBOX_TYPE: 'e2b',
    E2B_API_KEY: 'e2b_test',
    MODAL_TOKEN_ID: m.modal.tokenId,
    MODAL_TOKEN_SECRET: m.modal.tokenSecret,
  });
  const e2bEnv = () => cloud.commands.at(-1)!.envs;
  const modalEnv = () => m.modal.execs.at(-1)!.env;

  // Its own block: its server stops, closing its Modal sandboxes, before the Modal server does.
  describe('with LETTA_PUBLIC_URL', () => {
    const PASSWORD = 'the server password tools never see';
    const env: Record<string, string> = {};
    // LETTA_PUBLIC_URL is the test server's own address, which the fakes' tools reach on this host.
    let publicUrl: string;
    beforeAll(async () => {
      const port = await freePort();
      publicUrl = `http://127.0.0.1:${port}`;
      Object.assign(env, remoteSandboxes(), {
        PORT: String(port),
        LETTA_PUBLIC_URL: publicUrl,
        LETTA_SERVER_PASSWORD: PASSWORD,
      });
    });
    const h = useAgentServer('openai', env);
    const admin = () => new Letta({ baseURL: h.server.url, apiKey: PASSWORD, maxRetries: 0 });

    /** An agent with the tool `name` (on Modal when `metadata` asks) and another agent. */
    const agentsWith = async (name: string, metadata?: Record<string, unknown>) => {
      const tool = await admin().tools.upsert({
        source_code: reachTool(name),
        ...(metadata && { metadata_: metadata }),
      });
      const own = await admin().agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [tool.id] });
      const other = await admin().agents.create({ model: 'openai/gpt-4o-mini' });
      return { own, other };
    };

    /** Calls tool `name` of `own` in a turn of its; what the tool saw and the return message. */
    const callInTurn = async (name: string, own: { id: string }, other: { id: string }) => {
      h.stub.enqueue({ toolCalls: [{ name, arguments: { other_id: other.id } }] }, { text: 'Done.' });
      const response = await admin().agents.messages.create(own.id, {
        messages: [{ role: 'user', content: 'Reach.' }],
      });
      const returned = response.messages.find((m) => m.message_type === 'tool_return_message') as {
        status: string;
        tool_return: string;
        stderr: string[] | null;
      };
      expect(returned.status).toBe('success');
      return { seen: JSON.parse(returned.tool_return) as Seen, returned };
    };

    /**
     * What a call's tool saw of Letta's client: the public URL, its own agent (200) and no other
     * (403) with its token; the token, which is `lct-…` and never the password, blotted out of the
     * result; and ended with the call (401 afterwards). Returns the token.
     */
    const expectScopedClient = async (seen: Seen, own: { id: string }) => {
      expect(seen).toMatchObject({ base_url: publicUrl, key: '[token]', own: 200, other: 403 });
      const token = [...seen.reversed_key!].reverse().join('');
      expect(token).toMatch(/^lct-/);
      const afterwards = new Letta({ baseURL: h.server.url, apiKey: token, maxRetries: 0 });
      await expect(afterwards.agents.retrieve(own.id)).rejects.toMatchObject({ status: 401 });
      return token;
    };

    it("on E2B, in a turn: reaches its own agent alone at LETTA_PUBLIC_URL with its call's token, which ends with the call", async () => {
      const { own, other } = await agentsWith('reach_from_e2b');
      const { seen } = await callInTurn('reach_from_e2b', own, other);
      const token = await expectScopedClient(seen, own);
      // What E2B was given: the token, not the server's password.
      expect(e2bEnv()).toMatchObject({ LETTA_BASE_URL: publicUrl, LETTA_API_KEY: token });
      expect(JSON.stringify(cloud.commands)).not.toContain(PASSWORD);
    }, 60_000);

    it('on E2B, through the API (tools.run outside a turn): the same', async () => {
      const { own, other } = await agentsWith('reach_from_e2b_api');
      const result = await admin().agents.tools.run('reach_from_e2b_api', {
        agent_id: own.id,
        args: { other_id: other.id },
      });
      expect(result.status).toBe('success');
      const token = await expectScopedClient(JSON.parse(String(result.func_return)) as Seen, own);
      expect(e2bEnv()).toMatchObject({ LETTA_BASE_URL: publicUrl, LETTA_API_KEY: token });
    }, 60_000);

    if (modalSupported) {
      it("on Modal, in a turn: reaches its own agent alone at LETTA_PUBLIC_URL with its call's token, which ends with the call", async () => {
        const { own, other } = await agentsWith('reach_from_modal', { sandbox: 'modal' });
        const execs = m.modal.execs.length;
        const { seen } = await callInTurn('reach_from_modal', own, other);
        expect(m.modal.execs).toHaveLength(execs + 1); // it ran on Modal, not a fallback
        const token = await expectScopedClient(seen, own);
        expect(modalEnv()).toMatchObject({ LETTA_BASE_URL: publicUrl, LETTA_API_KEY: token });
        expect(JSON.stringify(m.modal.execs)).not.toContain(PASSWORD);
      }, 60_000);

      it('on Modal, through the API (tools.run outside a turn): the same, each call in the kept sandbox', async () => {
        const { own, other } = await agentsWith('reach_from_modal_api', { sandbox: 'modal' });
        const sandboxes = m.modal.sandboxes.length;
        const tokens: string[] = [];
        for (let call = 0; call < 2; call++) {
          const result = await admin().agents.tools.run('reach_from_modal_api', {
            agent_id: own.id,
            args: { other_id: other.id },
          });
          expect(result.status).toBe('success');
          tokens.push(await expectScopedClient(JSON.parse(String(result.func_return)) as Seen, own));
          expect(modalEnv()).toMatchObject({ LETTA_BASE_URL: publicUrl, LETTA_API_KEY: tokens[call] });
        }
        // A token of its own per call, yet one sandbox: the per-call token does not decide reuse.
        expect(new Set(tokens).size).toBe(2);
        expect(m.modal.sandboxes).toHaveLength(sandboxes + 1);
      }, 60_000);
    } else {
      it('on Modal, on this Node: falls back to E2B, where its client reaches LETTA_PUBLIC_URL all the same', async () => {
        const { own, other } = await agentsWith('reach_from_modal', { sandbox: 'modal' });
        const { seen, returned } = await callInTurn('reach_from_modal', own, other);
        expect(returned.stderr?.[0]).toMatch(
          /^Modal sandbox unavailable .+: the tool ran in the E2B sandbox instead$/,
        );
        expect(m.modal.execs).toHaveLength(0);
        const token = await expectScopedClient(seen, own);
        expect(e2bEnv()).toMatchObject({ LETTA_BASE_URL: publicUrl, LETTA_API_KEY: token });
      }, 60_000);
    }
  });

  describe('without LETTA_PUBLIC_URL', () => {
    // Every line the server logs, from its start.
    const logged: string[] = [];
    const env: Record<string, string> = {};
    beforeAll(() => Object.assign(env, remoteSandboxes()));
    const h = useAgentServer(
      'openai',
      env,
      'postgres',
      pino({ level: 'info' }, { write: (line: string) => logged.push(line) }),
    );

    /** Runs tool `name` (on Modal when `metadata` asks) for a new agent; what it saw. */
    const run = async (name: string, metadata?: Record<string, unknown>) => {
      const tool = await h.client.tools.upsert({
        source_code: reachTool(name),
        ...(metadata && { metadata_: metadata }),
      });
      const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', tool_ids: [tool.id] });
      const result = await h.client.agents.tools.run(name, {
        agent_id: agent.id,
        args: { other_id: agent.id },
      });
      expect(result.status).toBe('success');
      return JSON.parse(String(result.func_return)) as Seen;
    };

    it('gives a tool on E2B or Modal neither LETTA_BASE_URL nor LETTA_API_KEY: its client is None', async () => {
      const none: Seen = { base_url: null, key: null, client: false };
      expect(await run('no_client_on_e2b')).toEqual(none);
      expect(e2bEnv()).not.toHaveProperty('LETTA_API_KEY');
      expect(e2bEnv()).not.toHaveProperty('LETTA_BASE_URL');
      const execs = m.modal.execs.length;
      expect(await run('no_client_on_modal', { sandbox: 'modal' })).toEqual(none);
      if (modalSupported) {
        expect(m.modal.execs).toHaveLength(execs + 1);
        expect(modalEnv()).not.toHaveProperty('LETTA_API_KEY');
        expect(modalEnv()).not.toHaveProperty('LETTA_BASE_URL');
      }
      // The operator learns why at start-up.
      expect(logged.join('')).toMatch(/tools on E2B or Modal get no Letta client.+LETTA_PUBLIC_URL/);
    }, 60_000);
  });
});
