import type { Request, Response } from 'express';
import { z } from 'zod';
import type { ApiContext } from '../context';
import { HttpError, notFound } from '../errors';
import { parseBody, parseParams, parseQuery } from '../validation';
import {
  EnvVarCreateSchema,
  EnvVarParams,
  EnvVarUpdateSchema,
  ListEnvVarsQuery,
  ListSandboxConfigsQuery,
  SandboxConfigCreateSchema,
  SandboxConfigParams,
  sandboxConfigUpdateSchema,
} from '../schemas/sandbox-configs';
import { sandboxConfigShape, sandboxEnvVarShape } from '../letta-shapes';
import { documentedRouter, type DocumentedRouter, routeTable, type RouteDoc } from '../route-book';
import { SandboxConfigSchema, SandboxEnvVarSchema } from '../schemas/responses';
import * as repo from '../../db/sandbox-configs';
import { isUniqueViolation } from '../../db/sql';
import { unmaskSecret } from '../../masking';
import { modalUnsupportedReason } from '../../sandbox/modal-support';
import { LocalSandboxConfigSchema, sandboxConfigOf, type SandboxType } from '../../schemas/sandbox-config';

const BASE = '/v1/sandbox-config';

/**
 * The update body as documented: the route parses with the schema for the stored config's type, which
 * reads the same JSON for each type (only which type a body of unstated type is taken for differs).
 */
const SandboxConfigUpdateBody = sandboxConfigUpdateSchema('local');

const TYPE_NAMES: Record<SandboxType, string> = { local: 'local', e2b: 'E2B', modal: 'Modal' };

/** The types Letta's router has a `POST /{type}/default` for: there is none for Modal. */
const DEFAULT_ROUTE_TYPES = ['local', 'e2b'] as const satisfies readonly SandboxType[];

/**
 * A config of `type` may be created or changed here: not a Modal one where Modal's SDK cannot run
 * (400, naming the Node versions). Reading and deleting one work everywhere.
 */
function assertWritable(type: SandboxType): void {
  if (type !== 'modal') return;
  const reason = modalUnsupportedReason();
  if (reason) throw new HttpError(400, reason);
}

/**
 * Letta's sandbox configs and their environment variables. There is one config per type: creating one
 * of a type that exists replaces its fields, and setting a key a config has replaces its value, as
 * Letta's create-or-update does.
 */
export function sandboxConfigsRouter(ctx: ApiContext): DocumentedRouter {
  const router = documentedRouter('Sandbox configs', {
    params: SandboxConfigParams.extend(EnvVarParams.shape),
  });
  const on = routeTable(router, sandboxConfigsContext(ctx));
  on.post(BASE, createSandboxConfigDoc, createSandboxConfig);
  on.post(`${BASE}/local`, createCustomLocalSandboxConfigDoc, createCustomLocalSandboxConfig);

  for (const type of DEFAULT_ROUTE_TYPES)
    on.post(`${BASE}/${type}/default`, defaultConfigDoc(type), createDefaultConfig(type));
  on.post(`${BASE}/local/recreate-venv`, forceRecreateLocalSandboxVenvDoc, forceRecreateLocalSandboxVenv);
  on.patch(`${BASE}/:sandboxConfigId`, updateSandboxConfigDoc, updateSandboxConfig);
  on.delete(`${BASE}/:sandboxConfigId`, deleteSandboxConfigDoc, deleteSandboxConfig);
  on.get(BASE, listSandboxConfigsDoc, listSandboxConfigs);
  on.post(`${BASE}/:sandboxConfigId/environment-variable`, createSandboxEnvVarDoc, createSandboxEnvVar);
  on.get(`${BASE}/:sandboxConfigId/environment-variable`, listSandboxEnvVarsDoc, listSandboxEnvVars);
  on.patch(`${BASE}/environment-variable/:envVarId`, updateSandboxEnvVarDoc, updateSandboxEnvVar);
  on.delete(`${BASE}/environment-variable/:envVarId`, deleteSandboxEnvVarDoc, deleteSandboxEnvVar);

  return router;
}

/** What the routes of sandboxConfigsRouter share. */
function sandboxConfigsContext(ctx: ApiContext) {
  const loadConfig = async (req: Request) => {
    const { sandboxConfigId } = parseParams(SandboxConfigParams, req);
    const config = await repo.getSandboxConfig(ctx.db, sandboxConfigId);
    if (!config) throw notFound(`Sandbox config ${sandboxConfigId}`);
    return config;
  };

  const loadEnvVar = async (req: Request) => {
    const { envVarId } = parseParams(EnvVarParams, req);
    const envVar = await repo.getSandboxEnvVar(ctx.db, envVarId);
    if (!envVar) throw notFound(`Sandbox environment variable ${envVarId}`);
    return envVar;
  };

  const defaultConfig = (type: SandboxType) => repo.ensureSandboxConfig(ctx.db, sandboxConfigOf(type, {}));
  return { ctx, loadConfig, loadEnvVar, defaultConfig };
}

type SandboxConfigsContext = ReturnType<typeof sandboxConfigsContext>;

const defaultConfigDoc = (type: (typeof DEFAULT_ROUTE_TYPES)[number]): RouteDoc => ({
  summary: `Create default ${TYPE_NAMES[type]} sandbox config`,
  description: `The ${TYPE_NAMES[type]} sandbox config, made with the default fields if there is none.`,
  response: SandboxConfigSchema,
});

/** The sandbox config of `type`, made with the default fields if there is none. */
function createDefaultConfig(type: (typeof DEFAULT_ROUTE_TYPES)[number]) {
  return async function createDefaultConfigRoute(
    { defaultConfig }: SandboxConfigsContext,
    _req: Request,
    res: Response,
  ) {
    res.json(sandboxConfigShape(await defaultConfig(type)));
  };
}

const createSandboxConfigDoc: RouteDoc = {
  summary: 'Create sandbox config',
  description:
    'The config’s type (local, E2B or Modal) is told from its fields, as Letta’s union types it. ' +
    'A Modal config is refused (400) on a Node older than Modal’s SDK needs (22).',
  body: SandboxConfigCreateSchema,
  response: SandboxConfigSchema,
};

async function createSandboxConfig({ ctx }: SandboxConfigsContext, req: Request, res: Response) {
  const { config } = parseBody(SandboxConfigCreateSchema, req);
  assertWritable(config.type);
  res.json(sandboxConfigShape(await repo.upsertSandboxConfig(ctx.db, config)));
}

const createCustomLocalSandboxConfigDoc: RouteDoc = {
  summary: 'Create custom local sandbox config',
  body: LocalSandboxConfigSchema,
  response: SandboxConfigSchema,
};

async function createCustomLocalSandboxConfig({ ctx }: SandboxConfigsContext, req: Request, res: Response) {
  const config = sandboxConfigOf('local', parseBody(LocalSandboxConfigSchema, req));
  res.json(sandboxConfigShape(await repo.upsertSandboxConfig(ctx.db, config)));
}

// Letta deletes and rebuilds the venv here. This server installs tools' dependencies into a venv per
// requirements hash, built when a call first needs it and never changed after, so there is nothing
// to rebuild: the config is returned.
const forceRecreateLocalSandboxVenvDoc: RouteDoc = {
  summary: 'Force recreate local sandbox venv',
  description:
    'Letta rebuilds the venv here. This server keeps a venv per set of requirements, built once and ' +
    'never changed, so there is nothing to rebuild: answers with the local sandbox config (made with ' +
    'the default fields if there is none).',
  response: SandboxConfigSchema,
};

async function forceRecreateLocalSandboxVenv(
  { defaultConfig }: SandboxConfigsContext,
  _req: Request,
  res: Response,
) {
  res.json(sandboxConfigShape(await defaultConfig('local')));
}

const updateSandboxConfigDoc: RouteDoc = {
  summary: 'Update sandbox config',
  description:
    'The config given must be of the stored config’s type; its fields given replace the stored ones. ' +
    'A Modal config cannot be changed on a Node older than Modal’s SDK needs (22): 400.',
  body: SandboxConfigUpdateBody,
  response: SandboxConfigSchema,
};

async function updateSandboxConfig(
  { ctx, loadConfig }: SandboxConfigsContext,
  req: Request<{ sandboxConfigId: string }>,
  res: Response,
) {
  const stored = await loadConfig(req);
  const { config } = parseBody(sandboxConfigUpdateSchema(stored.type), req);
  assertWritable(stored.type);
  if (!config) return res.json(sandboxConfigShape(stored));
  if (config.type !== stored.type) {
    throw new HttpError(
      400,
      `Mismatched type for sandbox config update: tried to update sandbox_config of type ${stored.type} ` +
        `with config of type ${config.type}`,
    );
  }
  const merged = sandboxConfigOf(stored.type, { ...stored.config, ...config.given });
  res.json(sandboxConfigShape(await repo.updateSandboxConfig(ctx.db, stored.id, merged.config)));
}

const deleteSandboxConfigDoc: RouteDoc = { summary: 'Delete sandbox config', noContent: true };

async function deleteSandboxConfig(
  { ctx, loadConfig }: SandboxConfigsContext,
  req: Request<{ sandboxConfigId: string }>,
  res: Response,
) {
  await repo.deleteSandboxConfig(ctx.db, (await loadConfig(req)).id);
  res.status(204).end();
}

const listSandboxConfigsDoc: RouteDoc = {
  summary: 'List sandbox configs',
  query: ListSandboxConfigsQuery,
  response: z.array(SandboxConfigSchema),
};

async function listSandboxConfigs({ ctx }: SandboxConfigsContext, req: Request, res: Response) {
  const query = parseQuery(ListSandboxConfigsQuery, req);
  const configs = await repo.listSandboxConfigs(ctx.db, { type: query.sandbox_type }, query);
  res.json(configs.map(sandboxConfigShape));
}

const createSandboxEnvVarDoc: RouteDoc = {
  summary: 'Create sandbox env var',
  description:
    'Setting a key the config has replaces its value (a masked value sent back keeps the stored one).',
  body: EnvVarCreateSchema,
  response: SandboxEnvVarSchema,
};

async function createSandboxEnvVar(
  { ctx, loadConfig }: SandboxConfigsContext,
  req: Request<{ sandboxConfigId: string }>,
  res: Response,
) {
  const config = await loadConfig(req);
  const body = parseBody(EnvVarCreateSchema, req);
  const stored = (await repo.listSandboxEnvVars(ctx.db, config.id)).find((v) => v.key === body.key);
  const value = unmaskSecret(body.value, stored?.value);
  const envVar = await repo.upsertSandboxEnvVar(ctx.db, config.id, { ...body, value });
  res.json(sandboxEnvVarShape(envVar));
}

const listSandboxEnvVarsDoc: RouteDoc = {
  summary: 'List sandbox env vars',
  query: ListEnvVarsQuery,
  response: z.array(SandboxEnvVarSchema),
};

async function listSandboxEnvVars(
  { ctx, loadConfig }: SandboxConfigsContext,
  req: Request<{ sandboxConfigId: string }>,
  res: Response,
) {
  const config = await loadConfig(req);
  const envVars = await repo.listSandboxEnvVars(ctx.db, config.id, parseQuery(ListEnvVarsQuery, req));
  res.json(envVars.map(sandboxEnvVarShape));
}

const updateSandboxEnvVarDoc: RouteDoc = {
  summary: 'Update sandbox env var',
  body: EnvVarUpdateSchema,
  response: SandboxEnvVarSchema,
};

async function updateSandboxEnvVar(
  { ctx, loadEnvVar }: SandboxConfigsContext,
  req: Request<{ envVarId: string }>,
  res: Response,
) {
  const envVar = await loadEnvVar(req);
  const patch = parseBody(EnvVarUpdateSchema, req);
  try {
    const updated = await repo.updateSandboxEnvVar(ctx.db, envVar.id, {
      key: patch.key ?? undefined,
      value:
        patch.value === undefined || patch.value === null
          ? undefined
          : unmaskSecret(patch.value, envVar.value),
      description: patch.description ?? undefined,
    });
    res.json(sandboxEnvVarShape(updated));
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    throw new HttpError(
      409,
      `Sandbox config ${envVar.sandbox_config_id} already has an environment variable ${patch.key}`,
    );
  }
}

const deleteSandboxEnvVarDoc: RouteDoc = { summary: 'Delete sandbox env var', noContent: true };

async function deleteSandboxEnvVar(
  { ctx, loadEnvVar }: SandboxConfigsContext,
  req: Request<{ envVarId: string }>,
  res: Response,
) {
  await repo.deleteSandboxEnvVar(ctx.db, (await loadEnvVar(req)).id);
  res.status(204).end();
}
