/**
 * A hand-written fake of E2B's cloud for the E2B backend (src/sandbox/e2b.ts, its `E2BSdk`): each
 * fake sandbox is a folder standing for its filesystem, and its commands really run on this host
 * (bash, /usr/bin/python3, only the given environment on top of a sandbox's own PATH/HOME), so the
 * real runner.py and the framed stdout result are used end to end. Not isolated: for tests only.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  CommandExitError,
  SandboxNotFoundError,
  TimeoutError,
  type CommandResult,
  type SandboxConnectOpts,
  type SandboxListOpts,
  type SandboxOpts,
} from 'e2b';
import type { E2BInstance, E2BSdk } from '../../src/sandbox/e2b';

export type Command = { sandboxId: string; cmd: string; envs: Record<string, string>; timeoutMs: number };

export class FakeSandbox implements E2BInstance {
  readonly root = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-e2b-'));
  alive = true;
  /** Process groups of the commands it ran. */
  readonly groups: number[] = [];
  private readonly processes = new Set<ChildProcess>();

  constructor(
    readonly sandboxId: string,
    readonly metadata: Record<string, string>,
    private readonly cloud: FakeE2B,
  ) {
    fs.mkdirSync(path.join(this.root, 'tmp'));
    fs.mkdirSync(path.join(this.root, 'home'));
  }

  files = {
    write: async (files: { path: string; data: string }[]) => {
      for (const file of files) {
        const local = path.join(this.root, file.path);
        fs.mkdirSync(path.dirname(local), { recursive: true });
        fs.writeFileSync(local, file.data);
      }
    },
  };

  commands = {
    run: async (cmd: string, opts: { envs: Record<string, string>; timeoutMs: number }) => {
      this.cloud.commands.push({ sandboxId: this.sandboxId, cmd, ...opts });
      if (cmd.startsWith('python3 -m pip install')) return this.settle(await this.cloud.pip(cmd));
      return this.settle(await this.execute(cmd.replaceAll('/tmp/', `${this.root}/tmp/`), opts.envs));
    },
  };

  async kill() {
    this.cloud.calls.push(`kill ${this.sandboxId}`);
    this.alive = false;
    for (const child of this.processes) process.kill(-child.pid!, 'SIGKILL');
    return true;
  }

  /** Files left in the sandbox's /tmp. */
  leftovers(): string[] {
    return fs.readdirSync(path.join(this.root, 'tmp'));
  }

  private execute(cmd: string, envs: Record<string, string>): Promise<CommandResult> {
    const home = path.join(this.root, 'home');
    const child = spawn('/bin/bash', ['-c', cmd], {
      cwd: home,
      env: { PATH: '/usr/bin:/bin', HOME: home, ...envs },
      detached: true,
    });
    this.processes.add(child);
    this.groups.push(child.pid!);
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    return new Promise((resolve, reject) => {
      child.on('close', (code) => {
        this.processes.delete(child);
        if (code === null) return reject(new TimeoutError('The sandbox was killed'));
        const text = (chunks: Buffer[]) => new TextDecoder().decode(Buffer.concat(chunks));
        resolve({ exitCode: code, stdout: text(stdout), stderr: text(stderr) });
      });
    });
  }

  /** As the SDK: a non-zero exit throws. */
  private settle(result: CommandResult): CommandResult {
    if (result.exitCode !== 0) throw new CommandExitError(result);
    return result;
  }
}

export class FakeE2B implements E2BSdk {
  readonly calls: string[] = [];
  readonly commands: Command[] = [];
  readonly sandboxes: FakeSandbox[] = [];
  readonly created: SandboxOpts[] = [];
  /** What E2B answers to every control-plane call, when it refuses them. */
  refuse?: Error;
  /** A sandbox E2B still lists that has ended by the time it is connected to. */
  ghost?: string;
  pip: (cmd: string) => CommandResult | Promise<CommandResult> = () => PIP_OK;

  async create(template: string, opts: SandboxOpts) {
    this.calls.push(`create ${template}`);
    if (this.refuse) throw this.refuse;
    this.created.push(opts);
    const sandbox = new FakeSandbox(`sbx-${this.sandboxes.length + 1}`, opts.metadata ?? {}, this);
    this.sandboxes.push(sandbox);
    return sandbox;
  }

  async connect(sandboxId: string, _opts: SandboxConnectOpts) {
    this.calls.push(`connect ${sandboxId}`);
    const sandbox = this.sandboxes.find((s) => s.sandboxId === sandboxId && s.alive);
    if (!sandbox) throw new SandboxNotFoundError(`Paused sandbox ${sandboxId} not found`);
    return sandbox;
  }

  list(opts: SandboxListOpts) {
    return {
      nextItems: async () => {
        this.calls.push('list');
        if (this.refuse) throw this.refuse;
        if (this.ghost) return [{ sandboxId: this.ghost }];
        const wanted = Object.entries(opts.query?.metadata ?? {});
        return this.sandboxes
          .filter((s) => s.alive && wanted.every(([key, value]) => s.metadata[key] === value))
          .slice(0, opts.limit);
      },
    };
  }

  pipCommands(): string[] {
    return this.commands.filter((c) => c.cmd.includes('pip install')).map((c) => c.cmd);
  }
}

export const PIP_OK: CommandResult = { exitCode: 0, stdout: 'Successfully installed', stderr: '' };
