import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { projectRoot } from '../src/paths';
import { temporalServerSettings } from '../src/temporal/settings';
import { customSearchAttributes } from '../contracts/search-attributes';

// The script builds Temporal's server with Go (minutes): these checks read what it would start the
// server with; bench/scale-out.ts and `CHAOS_TEMPORAL=production npm run chaos` run the server itself.
const script = path.join(projectRoot, 'scripts/temporal-production.sh');
const configOf = (env: Record<string, string> = {}) =>
  parse(execFileSync('bash', [script, 'config'], { encoding: 'utf8', env: { ...process.env, ...env } })) as {
    persistence: {
      defaultStore: string;
      visibilityStore: string;
      numHistoryShards: number;
      datastores: Record<string, { sql: { pluginName: string; databaseName: string } }>;
    };
    services: Record<string, { rpc: { grpcPort: number; membershipPort: number; httpPort?: number } }>;
    dynamicConfigClient: { filepath: string };
  };

describe('scripts/temporal-production.sh', () => {
  it('puts history and visibility on PostgreSQL, in the databases it sets up with temporal-sql-tool', () => {
    const { persistence } = configOf();
    const store = (name: string) => persistence.datastores[name].sql;
    expect(store(persistence.defaultStore)).toMatchObject({
      pluginName: 'postgres12',
      databaseName: 'temporal',
    });
    expect(store(persistence.visibilityStore)).toMatchObject({
      pluginName: 'postgres12',
      databaseName: 'temporal_visibility',
    });
    expect(persistence.numHistoryShards).toBe(4);
    expect(configOf({ TEMPORAL_NUM_HISTORY_SHARDS: '16' }).persistence.numHistoryShards).toBe(16);
  });

  it("listens on ports of its own: not the dev server's, not Linux's ephemeral range", () => {
    const defaults = temporalServerSettings.parse({});
    for (const env of [{}, { TEMPORAL_PRODUCTION_PORT: '9100' }] as Record<string, string>[]) {
      const ports = Object.values(configOf(env).services).flatMap(({ rpc }) =>
        [rpc.grpcPort, rpc.membershipPort, rpc.httpPort].filter((port) => port !== undefined),
      );
      expect(new Set(ports).size).toBe(ports.length);
      expect(ports).not.toContain(defaults.TEMPORAL_PORT);
      expect(ports).not.toContain(defaults.TEMPORAL_UI_PORT);
      for (const port of ports) expect(port).toBeLessThan(32768);
    }
  });

  it("reads the compose server's dynamic config, which enables what the dev server gets by flag", () => {
    const file = configOf().dynamicConfigClient.filepath;
    expect(file).toBe(path.join(projectRoot, 'deploy/temporal/dynamicconfig/dynamic.yaml'));
    const dynamic = parse(fs.readFileSync(file, 'utf8')) as Record<string, { value: unknown }[]>;
    for (const key of [
      'system.enableActivityEagerExecution',
      'system.enableEagerWorkflowStart',
      'frontend.enableExecuteMultiOperation',
      'frontend.enableUpdateWorkflowExecution',
    ])
      expect(dynamic[key]?.[0]?.value).toBe(true);
  });

  it("registers the project's search attributes, each a Keyword", () => {
    const listed = /^search_attributes=\(([^)]*)\)$/m.exec(fs.readFileSync(script, 'utf8'))![1].split(' ');
    expect(listed).toEqual(customSearchAttributes.map((key) => key.name));
    expect(new Set(customSearchAttributes.map((key) => key.type))).toEqual(new Set(['KEYWORD']));
  });
});
