import { z } from 'zod';
import { SANDBOX_TYPES, sandboxConfigBody, type SandboxType } from '../../schemas/sandbox-config';
import { idOf, pageQuery } from './common';

export const SandboxConfigParams = z.object({ sandboxConfigId: idOf('sandbox') });
export const EnvVarParams = z.object({ envVarId: idOf('sandbox-env') });

/** Letta's SandboxConfigCreate: `{config}`, a local, E2B or Modal config told apart by its fields. */
export const SandboxConfigCreateSchema = z.object({ config: sandboxConfigBody('local') });

/** Letta's SandboxConfigUpdate, for a config of `type`: a body of another type is refused by the route. */
export const sandboxConfigUpdateSchema = (type: SandboxType) =>
  z.object({ config: sandboxConfigBody(type).nullish() });

export const ListSandboxConfigsQuery = pageQuery(1000, 'asc').extend({
  sandbox_type: z.enum(SANDBOX_TYPES).optional(),
});

export const ListEnvVarsQuery = pageQuery(1000, 'asc');

/** Letta's SandboxEnvironmentVariableCreate. */
export const EnvVarCreateSchema = z.object({
  key: z.string().min(1),
  value: z.string(),
  description: z.string().nullish(),
});

/** Letta's SandboxEnvironmentVariableUpdate: nulls change nothing. */
export const EnvVarUpdateSchema = z.object({
  key: z.string().min(1).nullish(),
  value: z.string().nullish(),
  description: z.string().nullish(),
});
