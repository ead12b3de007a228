import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import fs from 'node:fs';
import Module from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import {
  createServer,
  ServerError,
  Status,
  type CallContext,
  type ServerMiddlewareCall,
  type ServiceImplementation,
  type TsProtoServiceDefinition,
} from 'nice-grpc';

/**
 * A local stand-in for Modal's API that the real, unmodified `modal` SDK talks to over gRPC: the control
 * plane (`modal.client.ModalClient`: apps, images, sandboxes, auth tokens) and the task command router
 * that sandbox exec goes through (`modal.task_command_router.TaskCommandRouter`). Execs really run on
 * this host, as the same user, with no isolation, so it is for tests only.
 *
 * The protocol is the SDK's own: the service definitions compiled into its bundle (see `modalProtocol`),
 * so the fake follows the wire format of the installed SDK version. The SDK is pointed here with
 * `MODAL_SERVER_URL=http://127.0.0.1:<port>` (`env` below). For such a localhost URL the SDK dials the
 * command router without TLS too, so one plaintext server on one port serves both services, and the
 * router's URL is `https://127.0.0.1:<port>` (the SDK insists on https, then dials it insecurely).
 *
 * What it follows of Modal: the SDK's default (V2) sandboxes and the older V1 calls (`MODAL_SANDBOX_V2=0`,
 * or GPUs); images built once per distinct definition and reused after; an exec killed by its timeout
 * ends by SIGKILL, so `wait()` gives 137 (as Modal's own SDK tests expect); a terminated or expired
 * sandbox answers the router with NOT_FOUND; its `wait()` gives 137 once terminated, 124 once timed out.
 *
 * Not served (UNIMPLEMENTED): everything else, notably a sandbox's entrypoint `command` and its own
 * stdio, PTYs, volumes, tunnels, snapshots, the filesystem API, and streaming stdin. Images are recorded,
 * never built: an exec runs with the host's python3, whatever the image would have installed.
 */

/** An app, as `apps.fromName(name, { createIfMissing: true })` made it. */
export interface ModalAppRecord {
  appId: string;
  name: string;
  environmentName: string;
}

/** One distinct image definition (an image layer, as the SDK builds them one at a time). */
export interface ModalImageRecord {
  imageId: string;
  /** The registry image it starts from (`python:3.12-slim`), its base layer's for a layer on another. */
  registryTag: string;
  /** The layer it is built on, '' for a layer straight from a registry image. */
  baseImageId: string;
  /** Its Dockerfile commands after the `FROM` line, e.g. `RUN python -m pip install x`. */
  commands: string[];
  /** How many times it was asked for (ImageGetOrCreate), the first build included. */
  requests: number;
  /** How many times it was built: once, then reused, unless a build failed or one was forced. */
  builds: number;
  status: 'built' | 'failed';
  /** Why its last build failed (see `failImageBuilds`). */
  exception?: string;
}

/** A sandbox and how it was created. The record is live: `state` changes as the sandbox stops. */
export interface ModalSandboxRecord {
  sandboxId: string;
  taskId: string;
  appId: string;
  imageId: string;
  /** Which of Modal's sandbox APIs created it: the SDK uses V2 unless told otherwise. */
  api: 'v1' | 'v2';
  timeoutSecs: number;
  idleTimeoutSecs: number | undefined;
  workdir: string | undefined;
  /** Its environment as its processes see it: `env` and the secrets it was created with. */
  env: Record<string, string>;
  /** The folder on this host standing for its filesystem; removed when the sandbox stops. */
  dir: string;
  state: 'running' | 'terminated' | 'timed out';
}

export type ModalExitStatus = { code: number } | { signal: number };

/** An exec, as the router received it. The record is live: `stdin` and `exit` fill in as it runs. */
export interface ModalExecRecord {
  sandboxId: string;
  execId: string;
  argv: string[];
  /** Its own environment (`env` and secrets of the exec), without the sandbox's. */
  env: Record<string, string>;
  workdir: string | undefined;
  timeoutSecs: number | undefined;
  /** What it was given on stdin so far. */
  stdin: string;
  /** How it ended; undefined while it runs. */
  exit: ModalExitStatus | undefined;
  /** Whether its timeout killed it. */
  timedOut: boolean;
}

export interface ModalServer {
  /** The control plane's URL, for `MODAL_SERVER_URL`. */
  url: string;
  /** The only credentials accepted; others get UNAUTHENTICATED, as from Modal. */
  tokenId: string;
  tokenSecret: string;
  /**
   * Environment variables that point a `new ModalClient()` here with these credentials, and
   * `MODAL_CONFIG_PATH` at a file that does not exist, so no ~/.modal.toml is read. The SDK reads the
   * file when it is loaded and the variables when a client is constructed: set them before both.
   */
  env: Record<string, string>;
  /** The gRPC methods called (`AppGetOrCreate`, `TaskExecStart`...), in arrival order. */
  calls: string[];
  apps: ModalAppRecord[];
  images: ModalImageRecord[];
  sandboxes: ModalSandboxRecord[];
  execs: ModalExecRecord[];
  liveSandboxes(): ModalSandboxRecord[];
  /**
   * Makes the next `times` calls of `method` (a gRPC method name) fail with `code`. A V1 name also
   * covers its V2 twin (`SandboxCreate` covers `SandboxCreateV2`), since the SDK uses V2 by default. The
   * SDK retries transient codes (UNAVAILABLE, INTERNAL, ...) a few times, so with `times` = 1 a create
   * still succeeds; a code such as RESOURCE_EXHAUSTED fails it outright.
   */
  failNext(method: string, code?: Status, times?: number): void;
  /** Makes every later build of an image whose Dockerfile commands match `pattern` fail. */
  failImageBuilds(pattern: RegExp, exception?: string): void;
  /** Ends a sandbox as its timeout does (`wait()` gives 124), as if the time had come. */
  expireSandbox(sandboxId: string): void;
  /** Kills every exec, removes every sandbox folder, and stops the server. */
  close(): Promise<void>;
}

export interface ModalServerOptions {
  /** The credentials to accept; random ones by default. */
  tokenId?: string;
  tokenSecret?: string;
  /** Named secrets, for `modal.secrets.fromName(name)`. */
  secrets?: Record<string, Record<string, string>>;
}

// Enum values of Modal's protocol (modal_proto/api.proto, task_command_router.proto).
const GENERIC_STATUS = { SUCCESS: 1, FAILURE: 2, TERMINATED: 3, TIMEOUT: 4 } as const;
const OBJECT_CREATION_TYPE = { CREATE_IF_MISSING: 1, EPHEMERAL: 5 } as const;
const STDIO_CONFIG_PIPE = 1;
const TASK_EXEC_STDIO_STDERR = 1;

const IMAGE_BUILDER_VERSION = '2025.06';
/** SandboxWait answers after at most this long, as Modal's long polls do. */
const MAX_POLL_SECS = 55;
/** Output is streamed in pieces of at most this size. */
const MAX_OUTPUT_CHUNK = 1024 * 1024;
/** The PATH of every exec: the host's system folders, so `python3` is the system one. */
const EXEC_PATH = '/usr/local/bin:/usr/bin:/bin';

// ---------------------------------------------------------------------------------------------------
// The protocol, from the SDK's bundle

interface ModalProtocol {
  ModalClientDefinition: TsProtoServiceDefinition;
  TaskCommandRouterDefinition: TsProtoServiceDefinition;
}

let loadedProtocol: ModalProtocol | undefined;

/**
 * The SDK's bundle (dist/index.cjs) has the ts-proto service definitions and message codecs compiled
 * in, but does not export them. So the bundle is compiled once more as a CommonJS module, with one line
 * added that exports the two definitions; its own `require`s resolve from its folder.
 */
function modalProtocol(): ModalProtocol {
  if (loadedProtocol) return loadedProtocol;
  const bundle = path.join(path.dirname(require.resolve('modal')), 'index.cjs');
  let source = fs.readFileSync(bundle, 'utf8');
  for (const name of ['ModalClientDefinition', 'TaskCommandRouterDefinition']) {
    if (!new RegExp(`^var ${name} = \\{`, 'm').test(source)) {
      throw new Error(
        `${bundle} defines no ${name}: the modal SDK changed, see test/helpers/modal-server.ts`,
      );
    }
  }
  source += '\nmodule.exports.__definitions = { ModalClientDefinition, TaskCommandRouterDefinition };\n';
  const internals = Module as unknown as { _nodeModulePaths(dir: string): string[] };
  const bundleModule = new Module(bundle) as Module & { _compile(source: string, filename: string): void };
  bundleModule.filename = bundle;
  bundleModule.paths = internals._nodeModulePaths(path.dirname(bundle));
  bundleModule._compile(source, bundle);
  loadedProtocol = (bundleModule.exports as { __definitions: ModalProtocol }).__definitions;
  return loadedProtocol;
}

// ---------------------------------------------------------------------------------------------------
// The requests read here: only the fields used (the SDK's index.d.ts has the full types, unexported)

interface SecretSource {
  secretId?: string;
  env?: { contents: Record<string, string> };
}

interface SandboxDefinition {
  imageId: string;
  entrypointArgs: string[];
  timeoutSecs: number;
  idleTimeoutSecs?: number;
  workdir?: string;
  secretIds: string[];
}

interface SandboxCreateRequest {
  appId: string;
  definition?: SandboxDefinition;
  /** V2 only: `env` and secrets from `secrets.fromObject`, sent as values rather than as secrets. */
  secretSources?: SecretSource[];
}

interface ImageGetOrCreateRequest {
  image?: {
    dockerfileCommands: string[];
    baseImages: { dockerTag: string; imageId: string }[];
    secretIds: string[];
  };
  builderVersion: string;
  forceBuild: boolean;
}

interface SecretGetOrCreateRequest {
  deploymentName: string;
  objectCreationType: number;
  envDict: Record<string, string>;
  requiredKeys: string[];
}

interface TaskExecStartRequest {
  taskId: string;
  execId: string;
  commandArgs: string[];
  stdoutConfig: number;
  stderrConfig: number;
  timeoutSecs?: number;
  workdir?: string;
  secretIds: string[];
  secretSources: SecretSource[];
  env: Record<string, string>;
  ptyInfo?: unknown;
}

interface ExecRequest {
  taskId: string;
  execId: string;
}

interface GenericResult {
  status: number;
  exception?: string;
}

// ---------------------------------------------------------------------------------------------------
// Sandboxes and their execs

/**
 * What an exec wrote to stdout or stderr, kept whole: the SDK reads from an offset, and after a failed
 * read it reads again from where it got to.
 */
class OutputBuffer {
  private data = Buffer.alloc(0);
  private ended = false;
  private readonly changed = new EventEmitter();

  append(chunk: Buffer): void {
    this.data = Buffer.concat([this.data, chunk]);
    this.changed.emit('change');
  }

  end(): void {
    this.ended = true;
    this.changed.emit('change');
  }

  /** Everything from `offset` on, as it comes, until the stream ends or `signal` is aborted. */
  async *readFrom(offset: number, signal: AbortSignal): AsyncGenerator<Buffer> {
    while (!signal.aborted) {
      if (offset < this.data.length) {
        const chunk = this.data.subarray(offset, offset + MAX_OUTPUT_CHUNK);
        offset += chunk.length;
        yield chunk;
      } else if (this.ended) {
        return;
      } else {
        await once(this.changed, 'change', { signal }).catch(() => undefined);
      }
    }
  }
}

/** An exec: a real process on this host, in its own process group so that what it starts dies with it. */
class FakeExec {
  readonly stdout = new OutputBuffer();
  readonly stderr = new OutputBuffer();
  readonly exited: Promise<ModalExitStatus>;
  private readonly child: ChildProcess;
  private timer: NodeJS.Timeout | undefined;
  /** Bytes of stdin taken so far: the SDK writes at offsets, and a retried write must not repeat. */
  private stdinOffset = 0;

  constructor(
    readonly record: ModalExecRecord,
    options: { cwd: string; env: Record<string, string>; pipeStdout: boolean; pipeStderr: boolean },
  ) {
    const [command, ...args] = record.argv;
    this.child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ['pipe', options.pipeStdout ? 'pipe' : 'ignore', options.pipeStderr ? 'pipe' : 'ignore'],
      detached: true,
    });
    this.child.stdin?.on('error', () => undefined); // EPIPE once it exited: what it did not read is lost
    collect(this.child.stdout, this.stdout);
    collect(this.child.stderr, this.stderr);
    this.exited = new Promise((resolve) => {
      const settle = (status: ModalExitStatus) => {
        if (this.record.exit) return;
        clearTimeout(this.timer);
        this.record.exit = status;
        resolve(status);
      };
      this.child.on('exit', (code, signal) =>
        settle(code === null ? { signal: os.constants.signals[signal ?? 'SIGKILL'] } : { code }),
      );
      // It could not start (no such command): answered as a shell would, 127 and why on stderr.
      this.child.on('error', (error) => {
        this.stderr.append(Buffer.from(`${command}: ${error.message}\n`));
        this.stdout.end();
        this.stderr.end();
        settle({ code: 127 });
      });
    });
    if (record.timeoutSecs) {
      this.timer = setTimeout(() => {
        record.timedOut = true;
        this.kill();
      }, record.timeoutSecs * 1000);
    }
  }

  writeStdin(offset: number, data: Uint8Array, eof: boolean): void {
    if (offset > this.stdinOffset) {
      throw new ServerError(Status.OUT_OF_RANGE, `stdin offset ${offset} is past ${this.stdinOffset}`);
    }
    const fresh = Buffer.from(data).subarray(this.stdinOffset - offset);
    if (fresh.length > 0) {
      this.child.stdin?.write(fresh);
      this.record.stdin += fresh.toString();
      this.stdinOffset += fresh.length;
    }
    if (eof) this.child.stdin?.end();
  }

  /** Kills its whole process group, what it left running in the background included. */
  kill(): void {
    clearTimeout(this.timer);
    if (this.child.pid === undefined) return;
    try {
      process.kill(-this.child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

function collect(stream: NodeJS.ReadableStream | null, buffer: OutputBuffer): void {
  if (!stream) return buffer.end();
  stream.on('data', (chunk: Buffer) => buffer.append(chunk));
  stream.on('end', () => buffer.end());
}

class FakeSandbox {
  readonly execs = new Map<string, FakeExec>();
  /** The exit of a stopped sandbox, as SandboxWait reports it. */
  result: GenericResult | undefined;
  private readonly stopped = new AbortController();
  private readonly lifetime: NodeJS.Timeout;
  private idleTimer: NodeJS.Timeout | undefined;

  constructor(readonly record: ModalSandboxRecord) {
    this.lifetime = setTimeout(() => this.timeOut(), record.timeoutSecs * 1000);
    this.lifetime.unref();
    this.armIdleTimer();
  }

  get running(): boolean {
    return this.record.state === 'running';
  }

  startExec(record: ModalExecRecord, options: ConstructorParameters<typeof FakeExec>[1]): FakeExec {
    clearTimeout(this.idleTimer);
    const exec = new FakeExec(record, options);
    this.execs.set(record.execId, exec);
    void exec.exited.then(() => this.armIdleTimer());
    return exec;
  }

  timeOut(): void {
    this.stop('timed out', { status: GENERIC_STATUS.TIMEOUT });
  }

  terminate(): void {
    this.stop('terminated', { status: GENERIC_STATUS.TERMINATED });
  }

  /** Resolves once it stops, after at most `ms` or when `signal` is aborted. */
  async untilStopped(ms: number, signal: AbortSignal): Promise<void> {
    const either = AbortSignal.any([signal, this.stopped.signal]);
    await delay(ms, undefined, { signal: either, ref: false }).catch(() => undefined);
  }

  private stop(state: ModalSandboxRecord['state'], result: GenericResult): void {
    if (!this.running) return;
    this.record.state = state;
    this.result = result;
    clearTimeout(this.lifetime);
    clearTimeout(this.idleTimer);
    for (const exec of this.execs.values()) exec.kill();
    fs.rmSync(this.record.dir, { recursive: true, force: true, maxRetries: 3 });
    this.stopped.abort();
  }

  /**
   * Idle, to this fake, means no exec running; once idle for `idleTimeoutSecs` the sandbox stops as
   * if timed out (what counts as activity on Modal is not known here).
   */
  private armIdleTimer(): void {
    const idleSecs = this.record.idleTimeoutSecs;
    if (!idleSecs || !this.running) return;
    if ([...this.execs.values()].some((exec) => !exec.record.exit)) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.timeOut(), idleSecs * 1000);
    this.idleTimer.unref();
  }
}

// ---------------------------------------------------------------------------------------------------
// The server's state, and what both services share

interface InjectedFailure {
  method: string;
  code: Status;
  remaining: number;
}

class FakeModal {
  readonly calls: string[] = [];
  readonly apps: ModalAppRecord[] = [];
  readonly images: ModalImageRecord[] = [];
  readonly sandboxes: ModalSandboxRecord[] = [];
  readonly execs: ModalExecRecord[] = [];
  readonly environmentId = modalId('en');
  /** The live side of each sandbox record, by sandbox id and by task id. */
  readonly bySandboxId = new Map<string, FakeSandbox>();
  readonly byTaskId = new Map<string, FakeSandbox>();
  /** Images by their definition's fingerprint, so that one definition is built once. */
  readonly imagesByDefinition = new Map<string, ModalImageRecord>();
  /** Secrets by id: named ones from the options, ephemeral ones as the SDK makes them. */
  readonly secrets = new Map<string, Record<string, string>>();
  readonly secretIdsByName = new Map<string, string>();
  readonly failures: InjectedFailure[] = [];
  readonly buildFailures: { pattern: RegExp; exception: string }[] = [];
  /** Tokens handed out: AuthTokenGet's for the control plane, each task's for its command router. */
  readonly authTokens = new Set<string>();
  readonly routerTokens = new Map<string, string>();

  constructor(
    readonly tokenId: string,
    readonly tokenSecret: string,
    readonly root: string,
    readonly routerUrl: () => string,
  ) {}

  sandbox(sandboxId: string): FakeSandbox {
    const sandbox = this.bySandboxId.get(sandboxId);
    if (!sandbox) throw new ServerError(Status.NOT_FOUND, `Sandbox ${sandboxId} not found`);
    return sandbox;
  }

  /** The router's access for a task: its URL, and a token for that task only. */
  routerAccess(sandbox: FakeSandbox): { url: string; jwt: string } {
    if (!sandbox.running) {
      throw new ServerError(Status.NOT_FOUND, `Sandbox ${sandbox.record.sandboxId} has finished`);
    }
    const jwt = fakeJwt({ sub: sandbox.record.taskId });
    this.routerTokens.set(jwt, sandbox.record.taskId);
    return { url: this.routerUrl(), jwt };
  }

  /** The environment that secret ids and sources stand for, in order (later ones win). */
  resolveEnv(secretIds: string[], sources: SecretSource[] = []): Record<string, string> {
    const env: Record<string, string> = {};
    const fromIds: SecretSource[] = secretIds.map((secretId) => ({ secretId }));
    for (const source of [...fromIds, ...sources]) {
      if (source.env) Object.assign(env, source.env.contents);
      if (source.secretId) {
        const secret = this.secrets.get(source.secretId);
        if (!secret) throw new ServerError(Status.NOT_FOUND, `Secret ${source.secretId} not found`);
        Object.assign(env, secret);
      }
    }
    return env;
  }

  takeFailure(method: string): InjectedFailure | undefined {
    const index = this.failures.findIndex(
      (failure) => failure.method === method || failure.method === method.replace(/V2$/, ''),
    );
    if (index === -1) return undefined;
    const failure = this.failures[index];
    if (--failure.remaining <= 0) this.failures.splice(index, 1);
    return failure;
  }
}

/** A Modal-style object id: a type prefix and 22 alphanumerics (`sb-...`, `im-...`). */
function modalId(prefix: string, length = 22): string {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  return `${prefix}-${Array.from(randomBytes(length), (byte) => alphabet[byte % alphabet.length]).join('')}`;
}

/**
 * An unsigned token shaped like a JWT, valid for an hour: the SDK reads its `exp` to know when to ask
 * for a new one, and nothing else. The payload is base64 rather than base64url because the SDK decodes
 * the auth token with `atob`, which rejects base64url's `-` and `_`.
 */
function fakeJwt(claims: Record<string, unknown>): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64').replace(/=+$/, '');
  const payload = {
    ...claims,
    exp: Math.floor(Date.now() / 1000) + 3600,
    jti: randomBytes(8).toString('hex'),
  };
  return `${encode({ alg: 'none', typ: 'JWT' })}.${encode(payload)}.${randomBytes(16).toString('hex')}`;
}

// ---------------------------------------------------------------------------------------------------
// The control plane: modal.client.ModalClient

function controlPlane(modal: FakeModal) {
  const createSandbox = (request: SandboxCreateRequest, api: 'v1' | 'v2'): FakeSandbox => {
    const definition = request.definition;
    if (!definition) throw new ServerError(Status.INVALID_ARGUMENT, 'Sandbox definition is missing');
    if (definition.entrypointArgs.length > 0) {
      throw new ServerError(Status.UNIMPLEMENTED, 'This fake runs no sandbox entrypoint: use exec');
    }
    if (!modal.images.some((image) => image.imageId === definition.imageId && image.status === 'built')) {
      throw new ServerError(Status.NOT_FOUND, `Image ${definition.imageId} not found`);
    }
    // The SDK tells the APIs apart by the id: `sb-` and exactly 22 alphanumerics is V1.
    const sandboxId = api === 'v1' ? modalId('sb') : modalId('sb', 32);
    const record: ModalSandboxRecord = {
      sandboxId,
      taskId: modalId('ta'),
      appId: request.appId,
      imageId: definition.imageId,
      api,
      timeoutSecs: definition.timeoutSecs,
      idleTimeoutSecs: definition.idleTimeoutSecs,
      workdir: definition.workdir,
      env: modal.resolveEnv(definition.secretIds, request.secretSources),
      dir: fs.mkdtempSync(path.join(modal.root, `${sandboxId}-`)),
      state: 'running',
    };
    const sandbox = new FakeSandbox(record);
    modal.sandboxes.push(record);
    modal.bySandboxId.set(sandboxId, sandbox);
    modal.byTaskId.set(record.taskId, sandbox);
    return sandbox;
  };

  const getTaskId = ({ sandboxId }: { sandboxId: string }) => {
    const sandbox = modal.sandbox(sandboxId);
    return sandbox.running ? { taskId: sandbox.record.taskId } : { taskResult: sandbox.result };
  };

  const wait = async (
    { sandboxId, timeout }: { sandboxId: string; timeout: number },
    context: CallContext,
  ) => {
    const sandbox = modal.sandbox(sandboxId);
    if (sandbox.running && timeout > 0) {
      await sandbox.untilStopped(Math.min(timeout, MAX_POLL_SECS) * 1000, context.signal);
    }
    return { result: sandbox.result, metadata: { appId: sandbox.record.appId, result: sandbox.result } };
  };

  const terminate = ({ sandboxId }: { sandboxId: string }) => {
    const sandbox = modal.sandbox(sandboxId);
    const existingResult = sandbox.result;
    sandbox.terminate();
    return { existingResult };
  };

  return {
    authTokenGet: () => {
      const token = fakeJwt({ sub: modal.tokenId });
      modal.authTokens.add(token);
      return { token };
    },

    appGetOrCreate: (request: { appName: string; environmentName: string; objectCreationType: number }) => {
      const { appName: name, environmentName } = request;
      let app = modal.apps.find((a) => a.name === name && a.environmentName === environmentName);
      if (!app) {
        if (request.objectCreationType !== OBJECT_CREATION_TYPE.CREATE_IF_MISSING) {
          throw new ServerError(Status.NOT_FOUND, `App '${name}' not found`);
        }
        app = { appId: modalId('ap'), name, environmentName };
        modal.apps.push(app);
      }
      return { appId: app.appId };
    },

    // The SDK asks for the environment's image builder version before it builds an image.
    environmentGetOrCreate: (request: { deploymentName: string }) => ({
      environmentId: modal.environmentId,
      metadata: {
        name: request.deploymentName || 'main',
        settings: { imageBuilderVersion: IMAGE_BUILDER_VERSION, webhookSuffix: 'modal.run' },
      },
    }),

    secretGetOrCreate: (request: SecretGetOrCreateRequest) => {
      if (request.objectCreationType === OBJECT_CREATION_TYPE.EPHEMERAL) {
        const secretId = modalId('st');
        modal.secrets.set(secretId, { ...request.envDict });
        return { secretId };
      }
      const secretId = modal.secretIdsByName.get(request.deploymentName);
      if (!secretId) throw new ServerError(Status.NOT_FOUND, `Secret '${request.deploymentName}' not found`);
      const secret = modal.secrets.get(secretId) ?? {};
      const missing = request.requiredKeys.filter((key) => !(key in secret));
      if (missing.length > 0) {
        throw new ServerError(Status.FAILED_PRECONDITION, `Secret is missing key(s): ${missing.join(', ')}`);
      }
      return { secretId };
    },

    imageGetOrCreate: (request: ImageGetOrCreateRequest) => getOrBuildImage(modal, request),

    // Answered only for a build in progress, which here has already ended: one message, its result.
    imageJoinStreaming: async function* (request: { imageId: string }) {
      const image = modal.images.find((i) => i.imageId === request.imageId);
      if (!image) throw new ServerError(Status.NOT_FOUND, `Image ${request.imageId} not found`);
      yield { result: buildResult(image), entryId: '1', eof: true };
    },

    sandboxCreate: (request: SandboxCreateRequest) => ({
      sandboxId: createSandbox(request, 'v1').record.sandboxId,
    }),
    // V2 hands over the task and its router access with the sandbox, sparing the SDK two calls.
    sandboxCreateV2: (request: SandboxCreateRequest) => {
      const sandbox = createSandbox(request, 'v2');
      const { sandboxId, taskId } = sandbox.record;
      return { sandboxId, taskId, commandRouterAccess: modal.routerAccess(sandbox) };
    },
    sandboxGetTaskId: getTaskId,
    sandboxGetTaskIdV2: getTaskId,
    sandboxWait: wait,
    sandboxWaitV2: wait,
    sandboxTerminate: terminate,
    sandboxTerminateV2: terminate,
    taskGetCommandRouterAccess: ({ taskId }: { taskId: string }) => {
      const sandbox = modal.byTaskId.get(taskId);
      if (!sandbox) throw new ServerError(Status.NOT_FOUND, `Task ${taskId} not found`);
      return modal.routerAccess(sandbox);
    },
    sandboxGetCommandRouterAccess: ({ sandboxId }: { sandboxId?: string }) =>
      modal.routerAccess(modal.sandbox(sandboxId ?? '')),
  };
}

/**
 * One layer of an image (the SDK sends one request per `dockerfileCommands` call). A definition seen
 * before is reused with its result, so the SDK does not wait; a new one is "built" (recorded, and
 * failed if a `failImageBuilds` pattern matches) and answered without a result, so the SDK joins the
 * build with ImageJoinStreaming, as it does with Modal.
 */
function getOrBuildImage(modal: FakeModal, request: ImageGetOrCreateRequest) {
  const image = request.image;
  if (!image) throw new ServerError(Status.INVALID_ARGUMENT, 'Image definition is missing');
  const [from = '', ...commands] = image.dockerfileCommands;
  const fingerprint = JSON.stringify([image.dockerfileCommands, image.baseImages, image.secretIds]);
  let record = modal.imagesByDefinition.get(fingerprint);
  if (record) {
    record.requests++;
    if (record.status === 'built' && !request.forceBuild) {
      return { imageId: record.imageId, result: buildResult(record) };
    }
  } else {
    const baseImageId = image.baseImages.find((base) => base.dockerTag === 'base')?.imageId ?? '';
    const baseImage = modal.images.find((i) => i.imageId === baseImageId);
    record = {
      imageId: `im-${createHash('sha256').update(fingerprint).digest('hex').slice(0, 22)}`,
      registryTag: baseImage ? baseImage.registryTag : from.replace(/^FROM\s+/i, ''),
      baseImageId,
      commands,
      requests: 1,
      builds: 0,
      status: 'built',
    };
    modal.imagesByDefinition.set(fingerprint, record);
    modal.images.push(record);
  }
  record.builds++;
  const dockerfile = image.dockerfileCommands.join('\n');
  const failure = modal.buildFailures.find(({ pattern }) => pattern.test(dockerfile));
  record.status = failure ? 'failed' : 'built';
  record.exception = failure?.exception;
  return { imageId: record.imageId };
}

function buildResult(image: ModalImageRecord): GenericResult {
  return image.status === 'built'
    ? { status: GENERIC_STATUS.SUCCESS }
    : { status: GENERIC_STATUS.FAILURE, exception: image.exception };
}

// ---------------------------------------------------------------------------------------------------
// The command router: modal.task_command_router.TaskCommandRouter

function commandRouter(modal: FakeModal) {
  /**
   * The running sandbox of a task, for a caller holding that task's token (the SDK sends it as
   * `authorization: Bearer <jwt>`, and asks for a new one on UNAUTHENTICATED). A stopped sandbox's
   * router is gone: NOT_FOUND, on which the SDK gives up rather than retrying.
   */
  const runningTask = (taskId: string, context: CallContext): FakeSandbox => {
    const token = /^Bearer (.+)$/.exec(context.metadata.get('authorization') ?? '')?.[1];
    if (!token || modal.routerTokens.get(token) !== taskId) {
      throw new ServerError(Status.UNAUTHENTICATED, `No valid token for task ${taskId}`);
    }
    const sandbox = modal.byTaskId.get(taskId);
    if (!sandbox?.running) throw new ServerError(Status.NOT_FOUND, `Task ${taskId} not found`);
    return sandbox;
  };

  const execOf = ({ taskId, execId }: ExecRequest, context: CallContext): FakeExec => {
    const exec = runningTask(taskId, context).execs.get(execId);
    if (!exec) throw new ServerError(Status.NOT_FOUND, `Exec ${execId} not found`);
    return exec;
  };

  return {
    taskExecStart: (request: TaskExecStartRequest, context: CallContext) => {
      const sandbox = runningTask(request.taskId, context);
      if (sandbox.execs.has(request.execId)) return {}; // a retried start: it runs already
      if (request.ptyInfo) throw new ServerError(Status.UNIMPLEMENTED, 'This fake has no PTYs');
      const record: ModalExecRecord = {
        sandboxId: sandbox.record.sandboxId,
        execId: request.execId,
        argv: request.commandArgs,
        env: { ...request.env, ...modal.resolveEnv(request.secretIds, request.secretSources) },
        workdir: request.workdir,
        timeoutSecs: request.timeoutSecs,
        stdin: '',
        exit: undefined,
        timedOut: false,
      };
      modal.execs.push(record);
      sandbox.startExec(record, {
        cwd: workingDirectory(sandbox.record, request.workdir),
        // Nothing of this host's environment but a PATH, and a HOME inside the sandbox.
        env: { PATH: EXEC_PATH, HOME: sandbox.record.dir, ...sandbox.record.env, ...record.env },
        pipeStdout: request.stdoutConfig === STDIO_CONFIG_PIPE,
        pipeStderr: request.stderrConfig === STDIO_CONFIG_PIPE,
      });
      return {};
    },

    taskExecStdinWrite: (
      request: ExecRequest & { offset: number; data: Uint8Array; eof: boolean },
      context: CallContext,
    ) => {
      execOf(request, context).writeStdin(request.offset, request.data, request.eof);
      return {};
    },

    taskExecStdioRead: async function* (
      request: ExecRequest & { offset: number; fileDescriptor: number },
      context: CallContext,
    ) {
      const exec = execOf(request, context);
      const output = request.fileDescriptor === TASK_EXEC_STDIO_STDERR ? exec.stderr : exec.stdout;
      for await (const data of output.readFrom(request.offset, context.signal)) yield { data };
    },

    // Answered when it exits; the SDK gives up after a minute and asks again.
    taskExecWait: (request: ExecRequest, context: CallContext) => execOf(request, context).exited,

    taskExecPoll: (request: ExecRequest, context: CallContext) => execOf(request, context).record.exit ?? {},
  };
}

/** An exec's working directory: its `workdir`, or the sandbox's, taken inside the sandbox's folder. */
function workingDirectory(sandbox: ModalSandboxRecord, workdir: string | undefined): string {
  const dir = path.join(sandbox.dir, workdir ?? sandbox.workdir ?? '/');
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

// ---------------------------------------------------------------------------------------------------
// Middleware: every call is recorded, may fail on request, and must carry the credentials

function methodName(call: ServerMiddlewareCall<unknown, unknown>): string {
  return call.method.path.slice(call.method.path.lastIndexOf('/') + 1);
}

function recordAndInjectFailures(modal: FakeModal) {
  return async function* <Request, Response>(
    call: ServerMiddlewareCall<Request, Response>,
    context: CallContext,
  ) {
    const method = methodName(call);
    modal.calls.push(method);
    const failure = modal.takeFailure(method);
    if (failure) throw new ServerError(failure.code, `Injected failure of ${method}`);
    return yield* call.next(call.request, context);
  };
}

/**
 * The control plane's credentials, as the SDK sends them on every call: the token id and secret, and,
 * on all but AuthTokenGet, the token that AuthTokenGet returned (`x-modal-auth-token`).
 */
function checkCredentials(modal: FakeModal) {
  return async function* <Request, Response>(
    call: ServerMiddlewareCall<Request, Response>,
    context: CallContext,
  ) {
    const { metadata } = context;
    if (
      metadata.get('x-modal-token-id') !== modal.tokenId ||
      metadata.get('x-modal-token-secret') !== modal.tokenSecret
    ) {
      throw new ServerError(Status.UNAUTHENTICATED, 'Invalid token id or token secret');
    }
    if (
      methodName(call) !== 'AuthTokenGet' &&
      !modal.authTokens.has(metadata.get('x-modal-auth-token') ?? '')
    ) {
      throw new ServerError(Status.UNAUTHENTICATED, 'Missing or invalid x-modal-auth-token');
    }
    return yield* call.next(call.request, context);
  };
}

/**
 * An implementation of every method of `definition`: the handler of that name, or one answering
 * UNIMPLEMENTED (nice-grpc wants a function for each method; a throw is answered as its status).
 */
function implementationOf(definition: TsProtoServiceDefinition, handlers: object) {
  const implementation: Record<string, unknown> = {};
  for (const [key, method] of Object.entries(definition.methods)) {
    implementation[key] =
      (handlers as Record<string, unknown>)[key] ??
      (() => {
        throw new ServerError(Status.UNIMPLEMENTED, `${method.name} is not implemented by this fake`);
      });
  }
  return implementation as ServiceImplementation<TsProtoServiceDefinition>;
}

// ---------------------------------------------------------------------------------------------------

/** Starts the fake on a free port of 127.0.0.1. Call `close()` when done: it kills what still runs. */
export async function startModalServer(options: ModalServerOptions = {}): Promise<ModalServer> {
  const { ModalClientDefinition, TaskCommandRouterDefinition } = modalProtocol();
  const tokenId = options.tokenId ?? modalId('ak');
  const tokenSecret = options.tokenSecret ?? modalId('as');
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'fake-modal-'));
  let port = 0;
  const modal = new FakeModal(tokenId, tokenSecret, root, () => `https://127.0.0.1:${port}`);
  for (const [name, env] of Object.entries(options.secrets ?? {})) {
    const secretId = modalId('st');
    modal.secrets.set(secretId, env);
    modal.secretIdsByName.set(name, secretId);
  }

  const knownMethods = new Set(
    [ModalClientDefinition, TaskCommandRouterDefinition].flatMap((d) =>
      Object.values(d.methods).map((m) => m.name),
    ),
  );
  const server = createServer().use(recordAndInjectFailures(modal));
  server
    .with(checkCredentials(modal))
    .add(ModalClientDefinition, implementationOf(ModalClientDefinition, controlPlane(modal)));
  server.add(
    TaskCommandRouterDefinition,
    implementationOf(TaskCommandRouterDefinition, commandRouter(modal)),
  );
  port = await server.listen('127.0.0.1:0');
  const url = `http://127.0.0.1:${port}`;

  return {
    url,
    tokenId,
    tokenSecret,
    env: {
      MODAL_SERVER_URL: url,
      MODAL_TOKEN_ID: tokenId,
      MODAL_TOKEN_SECRET: tokenSecret,
      MODAL_CONFIG_PATH: path.join(root, 'no-modal.toml'),
    },
    calls: modal.calls,
    apps: modal.apps,
    images: modal.images,
    sandboxes: modal.sandboxes,
    execs: modal.execs,
    liveSandboxes: () => modal.sandboxes.filter((sandbox) => sandbox.state === 'running'),
    failNext(method, code = Status.UNAVAILABLE, times = 1) {
      if (!knownMethods.has(method)) throw new Error(`Modal's API has no method ${method}`);
      modal.failures.push({ method, code, remaining: times });
    },
    failImageBuilds(pattern, exception = 'Image build failed') {
      modal.buildFailures.push({ pattern, exception });
    },
    expireSandbox(sandboxId) {
      modal.sandbox(sandboxId).timeOut();
    },
    async close() {
      for (const sandbox of modal.bySandboxId.values()) sandbox.terminate();
      server.forceShutdown();
      fs.rmSync(root, { recursive: true, force: true, maxRetries: 3 });
    },
  };
}

/**
 * For a describe block: before its tests, a Modal server with the SDK pointed at it (the SDK reads
 * MODAL_SERVER_URL when a client is made); after them, the environment restored and the server closed.
 */
export function useModalServer(): { modal: ModalServer } {
  const harness = {} as { modal: ModalServer };
  const saved = { ...process.env };
  beforeAll(async () => {
    harness.modal = await startModalServer();
    Object.assign(process.env, harness.modal.env);
  });
  afterAll(async () => {
    process.env = saved;
    await harness.modal?.close();
  });
  return harness;
}
