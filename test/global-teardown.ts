import fs from 'node:fs';

export default async function globalTeardown(): Promise<void> {
  const temporal = globalThis.testTemporal;
  if (!temporal) return;
  await temporal.server.stop();
  fs.rmSync(temporal.dataDir, { recursive: true, force: true });
}
