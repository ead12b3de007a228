// One real tool call in a real Modal sandbox, through the server's own backend as a tool that asks for
// Modal reaches it (`npm run test:modal-live`). Not part of `npm test`: it needs Modal credentials, the
// network, Node 22 or later and Modal credit. The sandbox is terminated after the call.
import process from 'node:process';
import { loadConfig } from '../dist/src/config.js';
import { modalSandboxFor } from '../dist/src/sandbox/index.js';
import { modalUnsupportedReason } from '../dist/src/sandbox/modal-support.js';

const say = (line) => process.stdout.write(`${line}\n`);
const refuse = (why) => {
  process.stderr.write(`test:modal-live: ${why}, so nothing was run (nothing was checked).\n`);
  process.exit(1);
};

if (!process.env.MODAL_TOKEN_ID || !process.env.MODAL_TOKEN_SECRET)
  refuse('MODAL_TOKEN_ID and MODAL_TOKEN_SECRET are not set');
const unsupported = modalUnsupportedReason();
if (unsupported) refuse(unsupported);

// One sandbox for this call, terminated after it.
const config = loadConfig({ ...process.env, MODAL_SANDBOX_REUSE: 'false' });
const sandbox = modalSandboxFor(config);
const source = `import os, platform

def live_check(text: str):
    """Echoes text with what the sandbox is."""
    print("hello from", platform.node())
    return {"echo": text, "python": platform.python_version(), "secret": os.environ.get("LIVE_CHECK_SECRET")}
`;
say(`Modal app ${config.MODAL_APP_NAME}, image ${config.MODAL_PYTHON_IMAGE}: running one tool call...`);
const started = Date.now();
const job = { name: 'live_check', source, args: { text: 'ping' }, env: { LIVE_CHECK_SECRET: 'seen' } };
const result = await sandbox.run({ ...job, timeoutMs: 120_000, returnCharLimit: 10_000 }).catch((error) => {
  // Modal unreachable, credentials refused, no credit: the server would fall back to E2B or local.
  say(`FAIL: ${error.message}`);
  return null;
});
await sandbox.close();
if (!result) process.exit(1);
say(JSON.stringify(result, null, 2));
const value = result.funcReturn;
const ok = result.status === 'success' && value?.echo === 'ping' && value?.secret === 'seen';
say(`${ok ? 'PASS' : 'FAIL'} in ${Date.now() - started} ms`);
process.exit(ok ? 0 : 1);
