#!/usr/bin/env node
/**
 * The MCP conformance suite's client command (scripts/mcp-conformance.sh): the suite starts a test MCP
 * server per scenario and runs `node scripts/mcp-conformance-client.mjs <its URL>` with the scenario's
 * name in MCP_CONFORMANCE_SCENARIO. The client under test is this server's (src/mcp/connection.ts), so
 * the adapter only drives it through the REST API of the server at LETTA_URL: it registers the test
 * server (which connects, initializes and lists its tools), runs what the scenario calls directly
 * (POST /v1/mcp-servers/{id}/tools/{tool}/run: the same callMcpTool, src/mcp/tool-call.ts, as an
 * agent's step, without a model; its elicitations answered as the request's `elicitation_response` says),
 * then deletes the registration. It exits non-zero when a step fails, so the
 * suite's log says which.
 */
import process from 'node:process';

const { fetch } = globalThis;
const say = (line) => process.stdout.write(`${line}\n`);
const [serverUrl] = process.argv.slice(2);
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
const letta = (process.env.LETTA_URL ?? '').replace(/\/$/, '');
if (!serverUrl || !letta) {
  process.stderr.write(
    'usage: LETTA_URL=<this server> MCP_CONFORMANCE_SCENARIO=<name> mcp-conformance-client.mjs <url>\n',
  );
  process.exit(2);
}

async function api(method, path, body) {
  const response = await fetch(`${letta}${path}`, {
    method,
    headers: body ? { 'content-type': 'application/json' } : {},
    body: body && JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** Runs a tool of the registered server; a call that errors is a failed step. */
async function run(serverId, tools, name, args, extra = {}) {
  const tool = tools.find((t) => t.name === name);
  if (!tool) throw new Error(`the server listed no tool '${name}' (it listed ${tools.map((t) => t.name)})`);
  const result = await api('POST', `/v1/mcp-servers/${serverId}/tools/${tool.id}/run`, { args, ...extra });
  say(`${name}: ${result.status} ${JSON.stringify(result.func_return)}`);
  if (result.status !== 'success') throw new Error(`${name} did not succeed`);
  return result;
}

/** What each scenario needs after registration (which connects, initializes and lists the tools). */
const scenarios = {
  initialize: async () => undefined,
  // The suite's tool adds its two arguments (the reference client's call).
  tools_call: (id, tools) => run(id, tools, tools[0]?.name, { a: 2, b: 3 }),
  // The tool's answer comes on a stream the server closes: the client must come back after `retry`.
  'sse-retry': (id, tools) => run(id, tools, tools[0]?.name, {}),
  // Accepted with no content: the requested schema's defaults are the answer (SEP-1034).
  'elicitation-sep1034-client-defaults': (id, tools) =>
    run(id, tools, 'test_client_elicitation_defaults', {}, { elicitation_response: { action: 'accept' } }),
  // The schema as this server stored and would show it to a model, echoed back: keywords dropped on
  // the way are what the scenario looks for.
  'json-schema-2020-12-preservation': (id, tools) => {
    const focal = tools.find((t) => t.name === 'json_schema_2020_12_tool');
    if (!focal) throw new Error('the server listed no json_schema_2020_12_tool');
    return run(id, tools, 'json_schema_echo', { schema: focal.json_schema.parameters });
  },
};
// Every auth/* scenario: a protected server whose one tool is `test-tool`.
const step = scenario.startsWith('auth/')
  ? (id, tools) => run(id, tools, 'test-tool', {})
  : scenarios[scenario];
if (!step) {
  process.stderr.write(`no step for the scenario '${scenario}'\n`);
  process.exit(1);
}

const server = await api('POST', '/v1/mcp-servers/', {
  server_name: `conformance-${scenario.replace(/[^A-Za-z0-9_.-]/g, '-')}-${process.pid}`,
  config: { mcp_server_type: 'streamable_http', server_url: serverUrl },
});
say(`registered ${server.id}`);
try {
  const tools = await api('GET', `/v1/mcp-servers/${server.id}/tools`);
  say(`tools: ${tools.map((t) => t.name).join(', ')}`);
  await step(server.id, tools);
} finally {
  await api('DELETE', `/v1/mcp-servers/${server.id}`);
}
