import { z } from 'zod';

/** Letta's PipRequirement. */
export const PipRequirementSchema = z.object({ name: z.string().min(1), version: z.string().nullish() });

/**
 * Letta's LocalSandboxConfig. `sandbox_dir` is kept as given (Letta fills in ~/.letta/tool_execution_dir):
 * the local sandbox here runs each call in a fresh private folder.
 */
export const LocalSandboxConfigSchema = z.object({
  sandbox_dir: z.string().nullish(),
  use_venv: z.boolean().default(false),
  venv_name: z.string().min(1).default('venv'),
  pip_requirements: z.array(PipRequirementSchema).default([]),
  /** Not Letta's: tools of the local sandbox get the host's network only when this is set. */
  allow_network: z.boolean().default(false),
});
export type LocalSandboxConfig = z.infer<typeof LocalSandboxConfigSchema>;

/** Letta's E2BSandboxConfig (its pip_requirements are plain strings). */
export const E2BSandboxConfigSchema = z.object({
  timeout: z.number().int().positive().default(300),
  template: z.string().nullish(),
  pip_requirements: z.array(z.string()).nullish(),
});
export type E2BSandboxConfig = z.infer<typeof E2BSandboxConfigSchema>;

/**
 * Letta's ModalSandboxConfig, its descriptions Letta's: requirements are plain strings, as E2B's. A
 * config of this type is refused where Modal's SDK cannot run (src/sandbox/modal-support.ts).
 */
export const ModalSandboxConfigSchema = z.object({
  // At most a day, Modal's own longest sandbox (and within what a timer can wait).
  timeout: z
    .number()
    .int()
    .positive()
    .max(86_400)
    .default(60)
    .describe('Time limit for the sandbox (in seconds).'),
  pip_requirements: z
    .array(z.string())
    .nullish()
    .describe('A list of pip packages to install in the Modal sandbox'),
  npm_requirements: z
    .array(z.string())
    .nullish()
    .describe('A list of npm packages to install in the Modal sandbox'),
  language: z.enum(['python', 'typescript']).default('python'),
});
export type ModalSandboxConfig = z.infer<typeof ModalSandboxConfigSchema>;

/** In Letta's order, which breaks ties of the smart union below (after the type preferred). */
export const SANDBOX_TYPES = ['local', 'e2b', 'modal'] as const;
export type SandboxType = (typeof SANDBOX_TYPES)[number];

const SCHEMAS = {
  local: LocalSandboxConfigSchema,
  e2b: E2BSandboxConfigSchema,
  modal: ModalSandboxConfigSchema,
};

/** A sandbox config as stored: its type and its fields, with Letta's defaults and without nulls. */
export const TypedSandboxConfigSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('local'), config: LocalSandboxConfigSchema }),
  z.object({ type: z.literal('e2b'), config: E2BSandboxConfigSchema }),
  z.object({ type: z.literal('modal'), config: ModalSandboxConfigSchema }),
]);
export type TypedSandboxConfig = z.infer<typeof TypedSandboxConfigSchema>;

/** Letta stores `model_dump(exclude_none=True)`. */
const withoutNulls = <T extends object>(fields: T): T =>
  Object.fromEntries(
    Object.entries(fields).filter(([, value]) => value !== null && value !== undefined),
  ) as T;

const typed = (type: SandboxType, fields: object) =>
  ({ type, config: withoutNulls(fields) }) as TypedSandboxConfig;

/** The fields of a config of `type`, validated, defaults filled in. */
export const sandboxConfigOf = (type: SandboxType, fields: Record<string, unknown>): TypedSandboxConfig =>
  typed(type, SCHEMAS[type].parse(fields));

/**
 * A `config` body of unstated type, typed much as pydantic's smart union types Letta's
 * `LocalSandboxConfig | E2BSandboxConfig | ModalSandboxConfig` (unknown fields are ignored): the type
 * whose fields it names most, then the one that accepts it, then `preferred`, then Letta's order (so
 * `{timeout}` is E2B's, and `npm_requirements` or `language` make it Modal's); its errors if that type
 * refuses it. Besides the typed config, `given` holds only the fields the body set.
 */
export const sandboxConfigBody = (preferred: SandboxType) =>
  z.record(z.string(), z.unknown()).transform((fields, ctx) => {
    const order = [preferred, ...SANDBOX_TYPES.filter((type) => type !== preferred)];
    const candidates = order.map((type) => {
      const named = Object.keys(fields).filter((key) => key in SCHEMAS[type].shape);
      return { type, named, parsed: SCHEMAS[type].safeParse(fields) };
    });
    const rank = (c: (typeof candidates)[number]) => c.named.length * 2 + Number(c.parsed.success);
    const [best] = candidates.sort((a, b) => rank(b) - rank(a));
    if (!best.parsed.success) {
      for (const issue of best.parsed.error.issues) {
        ctx.addIssue({ ...issue });
      }
      return z.NEVER;
    }
    const data: Record<string, unknown> = best.parsed.data;
    const given = Object.fromEntries(best.named.map((key) => [key, data[key]]));
    return { ...typed(best.type, data), given };
  });
