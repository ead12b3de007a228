import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startOpenAiStub, type OpenAiStub } from '../test/helpers/openai-stub';
import { createTestSchema, type TestSchema } from '../test/helpers/postgres';
import { startCountingMcpServer } from '../test/helpers/mcp-servers';
import { startTemporalServer } from '../test/helpers/temporal-server';
import { startProductionTemporal } from '../test/helpers/temporal-production';

/** Which Temporal server a bench of the split server runs on. */
export type TemporalKind = 'dev' | 'production';

/**
 * What a bench of the split server (API and worker processes) runs on: a data folder, a Temporal server
 * (a dev server of its own, or Temporal's production server: scripts/temporal-production.sh), a
 * PostgreSQL schema of its own, the OpenAI model stub (the bench scripts it) and a counting MCP server.
 */
export interface Infra {
  dataDir: string;
  temporal: { address: string; pid: number; stop(): Promise<void> };
  schema: TestSchema;
  stub: OpenAiStub;
  mcp: Awaited<ReturnType<typeof startCountingMcpServer>>;
  stop(): Promise<void>;
}

/** A Temporal server of `kind`: a dev server keeping its data in `dataDir`, or the production server. */
export const startTemporalOf = async (kind: TemporalKind, dataDir: string) =>
  kind === 'production' ? startProductionTemporal() : (await startTemporalServer(dataDir)).server;

export async function startInfra(name: string, kind: TemporalKind): Promise<Infra> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `letta-${name}-`));
  fs.chmodSync(dataDir, 0o755);
  const temporal = await startTemporalOf(kind, dataDir);
  const schema = await createTestSchema();
  const stub = await startOpenAiStub();
  const mcp = await startCountingMcpServer();
  return {
    dataDir,
    temporal,
    schema,
    stub,
    mcp,
    async stop() {
      await mcp.close();
      await stub.close();
      await temporal.stop();
      await schema.drop();
    },
  };
}
