// One real tool call in a real E2B sandbox, through the server's own backend as SANDBOX_TYPE=e2b
// selects it (`npm run test:e2b-live`). Not part of `npm test`: it needs E2B_API_KEY, the network and
// E2B credit. The sandbox is killed after the call (E2B_SANDBOX_REUSE=false).
import process from 'node:process';
import { loadConfig } from '../dist/src/config.js';
import { sandboxFor } from '../dist/src/sandbox/index.js';

const say = (line) => process.stdout.write(`${line}\n`);

if (!process.env.E2B_API_KEY) {
  process.stderr.write('test:e2b-live: E2B_API_KEY is not set, so nothing was run (nothing was checked).\n');
  process.exit(1);
}

const config = loadConfig({ ...process.env, SANDBOX_TYPE: 'e2b', E2B_SANDBOX_REUSE: 'false' });
const source = `import os, platform

def live_check(text: str):
    """Echoes text with what the sandbox is."""
    print("hello from", platform.node())
    return {"echo": text, "python": platform.python_version(), "secret": os.environ.get("LIVE_CHECK_SECRET")}
`;
say(`E2B template ${config.E2B_TEMPLATE}: running one tool call...`);
const started = Date.now();
const job = { name: 'live_check', source, args: { text: 'ping' }, env: { LIVE_CHECK_SECRET: 'seen' } };
const result = await sandboxFor(config)
  .run({ ...job, timeoutMs: 60_000 })
  .catch((error) => {
    // E2B unreachable, key refused, no credit: the server would fail the activity and retry.
    say(`FAIL: ${error.message}`);
    process.exit(1);
  });
say(JSON.stringify(result, null, 2));
const value = result.funcReturn;
const ok = result.status === 'success' && value?.echo === 'ping' && value?.secret === 'seen';
say(`${ok ? 'PASS' : 'FAIL'} in ${Date.now() - started} ms`);
process.exit(ok ? 0 : 1);
