/**
 * Runs one TypeScript tool call (already transpiled to an ES module) with Letta's execution contract.
 * Reads the job as JSON on stdin: {source, name, args, param_order?, return_char_limit}; calls the
 * module's export `name` with the arguments by position (in `param_order`, else as given), awaits it,
 * and writes {status, func_return, func_return_chars?, agent_state: null} as JSON on fd 3, apart from
 * the tool's own stdout and stderr. No dependencies; runs inside the sandbox, where /tmp is the only writable folder.
 */
import fs from 'node:fs';
import process from 'node:process';

// In /tmp, so that the tool's imports resolve from /node_modules, where its npm requirements are.
const TOOL_FILE = '/tmp/tool.mjs';

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

async function call(job) {
  fs.writeFileSync(TOOL_FILE, job.source);
  const tool = (await import(TOOL_FILE))[job.name];
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

const result = await run(JSON.parse(fs.readFileSync(0, 'utf8')));
fs.writeSync(3, JSON.stringify(result));
// Timers or sockets the tool left open must not keep it running once it has answered.
process.exit(0);
