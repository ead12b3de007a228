#!/usr/bin/env node
/**
 * The MCP conformance suite's client command (scripts/mcp-conformance.sh): the suite starts a test MCP
 * server per scenario and runs `node scripts/mcp-conformance-client.mjs <its URL>` with the scenario's
 * name in MCP_CONFORMANCE_SCENARIO. The client under test is this server's (src/mcp/connection.ts), so
 * the adapter only drives it through the REST API of the server at LETTA_URL: it registers the test
 * server (which connects, initializes and lists its tools), runs what the scenario calls directly
 * (POST /v1/mcp-servers/{id}/tools/{tool}/run: the same callMcpTool, src/mcp/tool-call.ts, as an
 * agent's step, without a model; its elicitations answered as the request's `elicitation_response` says),
 * then deletes the registration. It exits non-zero when a step fails, so the suite's log says which.
 * An auth/* scenario's server asks for OAuth: the registration answers the authorization URL, which
 * the adapter follows as a browser would (the suite's authorization server redirects straight back to
 * this server's callback, which completes it), as it does for an authorization asked again (a scope
 * step-up) when a tool run is refused.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';

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

/** Authorizations followed at most, as a client that stops a loop of step-ups (auth/scope-retry-limit). */
const MAX_AUTHORIZATIONS = 3;
let authorizations = 0;

/** Follows the server's pending authorization URL, if it has one; whether it had. */
async function authorize(serverId) {
  const server = await api('GET', `/v1/mcp-servers/${serverId}`);
  const url = server.oauth_status?.authorization_url;
  if (!url || authorizations === MAX_AUTHORIZATIONS) return false;
  authorizations += 1;
  const response = await fetch(url, { redirect: 'follow' });
  say(`authorization ${authorizations}: ${response.status} ${await response.text()}`);
  return true;
}

/** A request to the API; refused while the server waits for an authorization, that is given first. */
async function authorized(serverId, request) {
  for (;;) {
    try {
      return await request();
    } catch (error) {
      if (!(await authorize(serverId))) throw error;
    }
  }
}

/** Runs a tool of the registered server; a call that errors is a failed step. */
async function run(serverId, tools, name, args, extra = {}) {
  const tool = tools.find((t) => t.name === name);
  if (!tool) throw new Error(`the server listed no tool '${name}' (it listed ${tools.map((t) => t.name)})`);
  const path = `/v1/mcp-servers/${serverId}/tools/${tool.id}/run`;
  const result = await authorized(serverId, () => api('POST', path, { args, ...extra }));
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
  // Tools whose x-mcp-header annotations are invalid are not taken; the valid one is called.
  'http-invalid-tool-headers': (id, tools) => run(id, tools, 'valid_tool', { region: 'us-west1' }),
  // Input-required results (SEP-2322): the two tools that ask are answered, confirming; the call
  // between them and the one whose result says no resultType ask nothing.
  'sep-2322-client-request-state': async (id, tools) => {
    const confirm = { elicitation_response: { action: 'accept', content: { confirmed: true } } };
    await run(id, tools, 'test_mrtr_echo_state', {}, confirm);
    await run(id, tools, 'test_mrtr_unrelated', {});
    await run(id, tools, 'test_mrtr_no_state', {}, confirm);
    await run(id, tools, 'test_mrtr_no_result_type', {});
  },
  // Accepted with no content: the requested schema's defaults are the answer (SEP-1034).
  'elicitation-sep1034-client-defaults': (id, tools) =>
    run(id, tools, 'test_client_elicitation_defaults', {}, { elicitation_response: { action: 'accept' } }),
  // The schema as this server kept it from tools/list (the tool's metadata; models get a normalized
  // form), echoed back: keywords dropped on the way are what the scenario looks for.
  'json-schema-2020-12-preservation': (id, tools) => {
    const focal = tools.find((t) => t.name === 'json_schema_2020_12_tool');
    if (!focal) throw new Error('the server listed no json_schema_2020_12_tool');
    return run(id, tools, 'json_schema_echo', { schema: focal.metadata_.mcp.input_schema });
  },
};
// The calls a scenario asks for in its context (MCP_CONFORMANCE_CONTEXT), if it names any.
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || '{}');
const askedCalls = async (id, tools) => {
  for (const call of context.toolCalls ?? []) await run(id, tools, call.name, call.arguments ?? {});
};
// Every auth/* scenario: a protected server whose one tool is `test-tool`. A scenario with no step of
// its own is registration (connect, initialize, list the tools) and the calls its context names.
const step = scenario.startsWith('auth/')
  ? (id, tools) => run(id, tools, 'test-tool', {})
  : (scenarios[scenario] ?? askedCalls);

/**
 * The OAuth config a scenario's context asks for: a pre-registered client's credentials, a secret or
 * a private key (with the client credentials grant in auth/client-credentials-*); auth/basic-cimd
 * expects the client ID metadata document at the URL it names.
 */
function oauthConfig() {
  const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}');
  if (scenario === 'auth/basic-cimd')
    return { client_metadata_url: 'https://conformance-test.local/client-metadata.json' };
  if (!context.client_id) return undefined;
  // auth/wif-jwt-bearer: a workload's JWT for the authorization server, with no user.
  if (context.valid_jwt)
    return { grant_type: 'jwt_bearer', client_id: context.client_id, assertion: context.valid_jwt };
  // auth/enterprise-managed-authorization: the user's ID token, exchanged at the IdP for an ID-JAG.
  if (context.idp_id_token) {
    const { client_id, client_secret, idp_client_id, idp_issuer, idp_token_endpoint } = context;
    const idp = { idp_client_id, idp_issuer, idp_token_endpoint };
    return { grant_type: 'id_jag', client_id, client_secret, assertion: context.idp_id_token, ...idp };
  }
  const { client_id, client_secret, private_key_pem, signing_algorithm, issuer } = context;
  const grant = scenario.startsWith('auth/client-credentials-') ? { grant_type: 'client_credentials' } : {};
  const key = { private_key_pem, signing_algorithm };
  return { client_id, client_secret, ...key, ...(issuer ? { issuer } : {}), ...grant };
}

/**
 * The suite runs its scenarios at once, and every auth/* server's one tool is `test-tool`: tool names
 * are unique here (as in Letta), so a second registration would store none. Those scenarios take turns
 * through a lock file that holds its owner's pid (one left by a killed adapter is taken over).
 */
async function takeTurn() {
  const id = crypto.createHash('sha256').update(letta).digest('hex').slice(0, 12);
  const lock = path.join(os.tmpdir(), `letta-mcp-conformance-${id}.lock`);
  for (;;) {
    try {
      fs.writeFileSync(lock, String(process.pid), { flag: 'wx' });
      return () => fs.rmSync(lock, { force: true });
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
      if (!alive(ownerOf(lock))) fs.rmSync(lock, { force: true });
      else await sleep(50);
    }
  }
}

/** The pid in the lock file; 0 while its owner writes it, and when it has just been let go. */
function ownerOf(lock) {
  try {
    return Number(fs.readFileSync(lock, 'utf8'));
  } catch (error) {
    if (error.code === 'ENOENT') return 0;
    throw error;
  }
}

function alive(pid) {
  if (!pid) return true; // being written or let go: look again
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

const endTurn = scenario.startsWith('auth/') ? await takeTurn() : () => undefined;
const server = await api('POST', '/v1/mcp-servers/', {
  server_name: `conformance-${scenario.replace(/[^A-Za-z0-9_.-]/g, '-')}-${process.pid}`,
  config: { mcp_server_type: 'streamable_http', server_url: serverUrl, oauth: oauthConfig() },
});
say(`registered ${server.id}`);
try {
  // Again while the callback's listing of the tools asks for another (a step-up).
  while (await authorize(server.id)) say('authorized');
  const tools = await api('GET', `/v1/mcp-servers/${server.id}/tools`);
  say(`tools: ${tools.map((t) => t.name).join(', ')}`);
  await step(server.id, tools);
} finally {
  await api('DELETE', `/v1/mcp-servers/${server.id}`);
  endTurn();
}
