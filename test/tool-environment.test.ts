import { toolEnvironment } from '../src/sandbox/environment';

describe('toolEnvironment', () => {
  it('layers sandbox vars < agent secrets < LETTA_AGENT_ID / LETTA_TOOL_ID', () => {
    expect(
      toolEnvironment({
        sandboxVars: { SHARED: 'sandbox', ONLY_SANDBOX: 's', LETTA_AGENT_ID: 'spoofed' },
        agentSecrets: { SHARED: 'agent', ONLY_AGENT: 'a', LETTA_TOOL_ID: 'spoofed' },
        agentId: 'agent-1',
        toolId: 'tool-1',
      }),
    ).toEqual({
      SHARED: 'agent',
      ONLY_SANDBOX: 's',
      ONLY_AGENT: 'a',
      LETTA_AGENT_ID: 'agent-1',
      LETTA_TOOL_ID: 'tool-1',
    });
  });

  it('gives a call in a turn its id, LETTA_TOOL_CALL_ID, which neither a variable nor a secret overrides', () => {
    expect(
      toolEnvironment({
        sandboxVars: { LETTA_TOOL_CALL_ID: 'spoofed' },
        agentSecrets: { LETTA_TOOL_CALL_ID: 'spoofed' },
        agentId: 'agent-1',
        toolId: 'tool-1',
        toolCallId: 'call_1',
      }),
    ).toEqual({ LETTA_AGENT_ID: 'agent-1', LETTA_TOOL_ID: 'tool-1', LETTA_TOOL_CALL_ID: 'call_1' });
  });

  it("never passes on the server's own environment", () => {
    process.env.DATABASE_URL ??= 'postgres://server-only@db/letta';
    const env = toolEnvironment({ sandboxVars: {}, agentSecrets: { A: '1' }, agentId: 'agent-1' });
    expect(env).toEqual({ A: '1', LETTA_AGENT_ID: 'agent-1' });
    expect(env).not.toHaveProperty('DATABASE_URL');
    expect(env).not.toHaveProperty('PATH');
  });
});
