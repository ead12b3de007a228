/**
 * A Python tool's JSON schema, derived from its source as Letta derives it, without running the code:
 * python3's own `ast` module reads it in a subprocess (src/tools/python/tool_schema.py, standard
 * library only).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '../paths';

const SCRIPT = path.join(projectRoot, 'src', 'tools', 'python', 'tool_schema.py');

export interface ToolJsonSchema {
  name: string;
  description: string;
  parameters: { type: 'object'; properties: Record<string, unknown>; required: string[] };
}

/** The source does not make a tool; the message is Letta's, for a 400. */
export class ToolSchemaError extends Error {
  override name = 'ToolSchemaError';
}

export interface PythonSchemaOptions {
  python: string;
  timeoutMs: number;
}

export async function schemaFromPython(
  source: string,
  options: PythonSchemaOptions,
  name?: string,
): Promise<ToolJsonSchema> {
  return (await askPython<{ schema: ToolJsonSchema }>({ source, name }, options)).schema;
}

/** The last function's name and docstring (cleaned), without deriving a schema from its signature. */
export async function pythonSignature(
  source: string,
  options: PythonSchemaOptions,
): Promise<{ name: string; docstring: string | null }> {
  return (
    await askPython<{ signature: { name: string; docstring: string | null } }>(
      { source, mode: 'signature' },
      options,
    )
  ).signature;
}

async function askPython<T>(request: object, options: PythonSchemaOptions): Promise<T> {
  const output = await runPython(JSON.stringify(request), options);
  let result: T & { error?: string };
  try {
    result = JSON.parse(output);
  } catch {
    throw new Error(`the schema generator answered something else than JSON: ${output.slice(0, 200)}`);
  }
  if (result.error) throw new ToolSchemaError(`Failed to derive json schema: ${result.error}`);
  return result;
}

function runPython(input: string, { python, timeoutMs }: PythonSchemaOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, [SCRIPT], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH },
    });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`cannot run ${python} to read the tool's source: ${error.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (signal === 'SIGKILL')
        return reject(
          new ToolSchemaError(
            `Failed to derive json schema: reading the source took longer than ${timeoutMs} ms`,
          ),
        );
      if (code !== 0)
        return reject(new Error(`the schema generator failed (exit ${code}): ${stderr.slice(-500)}`));
      resolve(stdout);
    });
    child.stdin.end(input);
  });
}
