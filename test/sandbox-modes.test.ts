import { useAgentServer } from './helpers/agent-server';

const runTool = async (url: string, body: string) => {
  const res = await fetch(`${url}/v1/tools/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      source_code: `import json, os\n\ndef probe():\n    """Probes."""\n    ${body}\n`,
      args: {},
    }),
  });
  return (await res.json()) as { status: string; tool_return: string };
};

/** The sandbox is what the operator chose: refused when bubblewrap cannot work, unisolated only on request. */
describe('a host where bubblewrap does not work', () => {
  const h = useAgentServer('openai', { SANDBOX_BWRAP_PATH: '/nonexistent/bwrap' });

  it('refuses custom tools with what is wrong and what to do', async () => {
    const result = await runTool(h.server.url, 'return 1');
    expect(result.status).toBe('error');
    expect(result.tool_return).toMatch(
      /^Error executing function probe: SandboxUnavailableError: the local sandbox \(bubblewrap\) does not work on this host \(.*\/nonexistent\/bwrap.*\)\. .*SANDBOX_TYPE=local-unsafe/,
    );
  });
});

describe('SANDBOX_TYPE=local-unsafe', () => {
  const h = useAgentServer('openai', {
    SANDBOX_TYPE: 'local-unsafe',
    SANDBOX_MEMORY_BYTES: String(256 * 1024 * 1024),
  });

  it('runs tools in a plain subprocess, still with a cleared environment, a non-root uid and limits', async () => {
    const result = await runTool(
      h.server.url,
      'return json.dumps({"uid": os.getuid(), "env": sorted(os.environ)})',
    );
    expect(result).toMatchObject({ status: 'success' });
    const { uid, env } = JSON.parse(result.tool_return) as { uid: number; env: string[] };
    if (process.getuid?.() === 0) expect(uid).toBe(65534);
    expect(env).not.toContain('DATABASE_URL');
    expect(env).not.toContain('OPENAI_API_KEY');
    const memory = await runTool(h.server.url, 'return len(bytearray(2 * 1024 ** 3))');
    expect(memory.tool_return).toBe('Error executing function probe: MemoryError: ');
  });
});
