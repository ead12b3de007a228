/**
 * The local sandbox's bridge (src/sandbox/python/api_bridge.py) on its own: a loopback port forwarded
 * to the API's socket, one connection after another, as a tool's client makes them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './helpers/env';

const BRIDGE = path.join(__dirname, '..', 'src', 'sandbox', 'python', 'api_bridge.py');
const REFUSAL = 'HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\r\n';

let dir: string;
let api: net.Server;
let bridge: ChildProcess;
let port: number;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'api-bridge-'));
  const socket = path.join(dir, 'api.sock');
  // Answers every request at once and closes, as the API does to a request without a token.
  api = net.createServer((conn) => conn.once('data', () => conn.end(REFUSAL)));
  await new Promise<void>((resolve) => api.listen(socket, resolve));
  port = await freePort();
  // A group of its own: `python3` may be a shim (pyenv) whose interpreter outlives a kill of the shim.
  bridge = spawn('python3', ['-I', BRIDGE, socket, String(port), 'sleep', '120'], {
    stdio: 'ignore',
    detached: true,
  });
  await until(() => connects(port));
});

afterAll(async () => {
  process.kill(-bridge.pid!, 'SIGKILL');
  await new Promise<void>((resolve) => api.close(() => resolve()));
  fs.rmSync(dir, { recursive: true, force: true });
});

it('answers every one of many short connections, closed by both ends at once', async () => {
  const answers: string[] = [];
  for (let i = 0; i < 300; i++) answers.push(await request(port));
  expect(answers.filter((answer) => answer !== REFUSAL)).toEqual([]);
}, 60_000);

/** Sends one request and closes as soon as the answer is in; the answer, or the error's code. */
function request(port: number): Promise<string> {
  return new Promise((resolve) => {
    let answer = '';
    const conn = net.connect(port, '127.0.0.1', () => conn.write('GET / HTTP/1.1\r\n\r\n'));
    conn.on('data', (data) => {
      answer += data.toString();
      if (answer.length >= REFUSAL.length) conn.destroy();
    });
    conn.on('close', () => resolve(answer));
    conn.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

const connects = (port: number) =>
  new Promise<boolean>((resolve) => {
    const conn = net.connect(port, '127.0.0.1', () => {
      conn.destroy();
      resolve(true);
    });
    conn.on('error', () => resolve(false));
  });

async function until(check: () => Promise<boolean>) {
  for (let i = 0; i < 100 && !(await check()); i++) await new Promise((r) => setTimeout(r, 50));
}
