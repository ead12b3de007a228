/**
 * The configuration: every area's settings (`src/<area>/settings.ts`, each the schema of its own
 * variables) merged into one schema, read from the environment once at start-up by `loadConfig`. Wiring
 * only (src/main.ts, src/server.ts, src/check.ts, src/banner.ts, scripts, tests, bench): every other
 * module receives its area's settings as a value.
 */
import path from 'node:path';
import { z } from 'zod';
import { folderSettings, triggerSettings, turnSettings } from './agent/settings';
import { apiSettings } from './api/settings';
import { databaseSettings } from './db/settings';
import { llmSettings } from './llm/settings';
import { mcpSettings } from './mcp/settings';
import { netSettings } from './net/settings';
import { observabilitySettings, traceSettings } from './observability/settings';
import { processSettings, shutdownProblem } from './process-settings';
import {
  e2bSettings,
  localSandboxSettings,
  modalSettings,
  sandboxProblem,
  sandboxSettings,
} from './sandbox/settings';
import type { SettingsArea } from './settings-fields';
import { TemporalSettingsError, temporalTarget, type TemporalTarget } from './temporal/env-config';
import { temporalConnectionSettings, temporalSettings } from './temporal/settings';
import { toolsSettings, webToolSettings } from './tools/settings';

/** The areas in the order docs/configuration.md shows them (scripts/config-doc.ts). */
export const SETTINGS_AREAS: SettingsArea[] = [
  { schema: processSettings },
  { schema: apiSettings },
  { schema: observabilitySettings, parts: [traceSettings] },
  { schema: databaseSettings },
  { schema: temporalSettings, parts: [temporalConnectionSettings] },
  { schema: turnSettings },
  { schema: llmSettings },
  { schema: folderSettings },
  { schema: toolsSettings, parts: [webToolSettings] },
  { schema: sandboxSettings, parts: [localSandboxSettings, e2bSettings, modalSettings] },
  { schema: mcpSettings },
  { schema: netSettings },
  { schema: triggerSettings },
];

export const ConfigSchema = z.object({
  ...processSettings.shape,
  ...apiSettings.shape,
  ...observabilitySettings.shape,
  ...databaseSettings.shape,
  ...temporalSettings.shape,
  ...turnSettings.shape,
  ...llmSettings.shape,
  ...folderSettings.shape,
  ...toolsSettings.shape,
  ...sandboxSettings.shape,
  ...mcpSettings.shape,
  ...netSettings.shape,
  ...triggerSettings.shape,
});

export type Config = z.infer<typeof ConfigSchema> & {
  /** DATA_DIR, resolved. */
  dataDir: string;
  /**
   * The external Temporal and how to connect to it (TLS, API key), from the environment and a
   * temporal.toml profile; unset for the embedded dev server. TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE
   * then hold the effective address and namespace, wherever they came from.
   */
  temporal?: TemporalTarget;
};

/** Settings whose value a configuration error must not repeat: keys, passwords, URLs with credentials. */
const isHidden = (name: string) => /KEY|PASSWORD|SECRET|TOKEN|DATABASE_URL/.test(name);

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const invalid = (problem: string) => new ConfigError(`Invalid configuration: ${problem}`);

/** Parses the environment; throws one ConfigError whose message names every bad variable on one line. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = ConfigSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const name = String(issue.path[0]);
      const value = isHidden(name) ? '(hidden)' : JSON.stringify(env[name] ?? '');
      return `${name}=${value}: ${issue.message}`;
    });
    throw invalid(problems.join('; '));
  }
  const problem = shutdownProblem(parsed.data) ?? sandboxProblem(parsed.data);
  if (problem) throw invalid(problem);
  const temporal = temporalTargetOf(env);
  return {
    ...parsed.data,
    dataDir: path.resolve(parsed.data.DATA_DIR),
    ...(temporal && { temporal, TEMPORAL_ADDRESS: temporal.address, TEMPORAL_NAMESPACE: temporal.namespace }),
  };
}

/** The external Temporal the environment and its temporal.toml profile name, if any. */
function temporalTargetOf(env: NodeJS.ProcessEnv): TemporalTarget | undefined {
  try {
    return temporalTarget(env);
  } catch (error) {
    if (error instanceof TemporalSettingsError) throw invalid(error.message);
    throw error;
  }
}
