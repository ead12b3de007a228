/**
 * Runs one TypeScript tool call (already transpiled to an ES module) with Letta's execution contract.
 * Reads the job as JSON on stdin: {source, name, args, param_order?, return_char_limit, tool_file?,
 * marker?}; calls the module's export `name` with the arguments by position (in `param_order`, else as
 * given), awaits it, and writes {status, func_return, func_return_chars?, agent_state: null} as JSON
 * apart from the tool's own stdout and stderr: on fd 3, or, where only stdout exists (Modal), framed on
 * stdout as runner.py frames it (result-frame.ts). No dependencies.
 */
import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

// Locally in /tmp (the only writable folder), so that the tool's imports resolve from /node_modules,
// where its npm requirements are; remote sandboxes name one in the call's own folder (the working one).
const DEFAULT_TOOL_FILE = '/tmp/tool.mjs';

/** The return as JSON can carry it: itself when it can, else its String(). */
function portable(value) {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? null : JSON.parse(text);
  } catch {
    return String(value);
  }
}

/** The return as the server writes it (stringifyReturn in tool-returns.ts): None, strings as they are, else JSON. */
function returnText(value) {
  if (value === null || value === undefined) return 'None';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * Letta's result, the return cut to the tool's return_char_limit with its whole length: only that many
 * characters leave the sandbox (the server adds Letta's truncation note).
 */
function outcome(status, value, limit) {
  const text = returnText(value);
  if (text.length <= limit) return { status, func_return: value, agent_state: null };
  return { status, func_return: text.slice(0, limit), func_return_chars: text.length, agent_state: null };
}

/**
 * Letta's `client` for the tool, a global it reads by name: the official client
 * (`@letta-ai/letta-client`, when the tool's npm requirements have it, resolved from the tool's file)
 * built from LETTA_API_KEY, with LETTA_BASE_URL when set; null without either.
 */
async function lettaClient(file) {
  const apiKey = process.env.LETTA_API_KEY;
  if (!apiKey) return null;
  let resolved;
  try {
    resolved = createRequire(file).resolve('@letta-ai/letta-client');
  } catch {
    return null;
  }
  const library = await import(pathToFileURL(resolved).href);
  const Letta = library.Letta ?? library.default?.Letta ?? library.default;
  const baseURL = process.env.LETTA_BASE_URL;
  return new Letta({ apiKey, ...(baseURL ? { baseURL } : {}) });
}

async function call(job) {
  const file = path.resolve(job.tool_file ?? DEFAULT_TOOL_FILE);
  fs.writeFileSync(file, job.source);
  globalThis.client = await lettaClient(file);
  const tool = (await import(pathToFileURL(file).href))[job.name];
  if (typeof tool !== 'function') throw new TypeError(`${job.name} is not a function`);
  const order = job.param_order ?? Object.keys(job.args);
  return tool(...order.map((key) => job.args[key]));
}

async function run(job) {
  try {
    return outcome('success', portable(await call(job)), job.return_char_limit);
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    const kind = error instanceof Error ? error.name : 'Error';
    const message = error instanceof Error ? error.message : String(error);
    return outcome(
      'error',
      `Error executing function ${job.name}: ${kind}: ${message}`,
      job.return_char_limit,
    );
  }
}

async function send(result, marker) {
  const payload = Buffer.from(JSON.stringify(result));
  if (!marker) return fs.writeSync(3, payload);
  const digest = createHash('md5').update(payload).digest('hex');
  const length = payload.length.toString(16).padStart(8, '0');
  // Through process.stdout, after what the tool printed, and written out before the exit below.
  const frame = Buffer.concat([Buffer.from(`${marker}${length}${digest}`), payload]);
  await new Promise((resolve) => process.stdout.write(frame, resolve));
}

/**
 * The job, stdin read to its end. Not with a read of fd 0 at once: where stdin does not block (an
 * exec's in Modal's sandboxes, say), that fails with EAGAIN whenever the job has not arrived yet.
 */
async function readJob() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

const job = await readJob();
await send(await run(job), job.marker);
// Timers or sockets the tool left open must not keep it running once it has answered.
process.exit(0);
