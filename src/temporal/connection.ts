import { NativeConnection } from '@temporalio/worker';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Connects to a Temporal frontend, retrying until `timeoutMs` passes: in a compose deployment the
 * server often comes up after us. One NativeConnection serves both the worker and the client, which
 * is what eager workflow start needs.
 */
export async function connectTemporal(address: string, timeoutMs: number): Promise<NativeConnection> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 100; ; delay = Math.min(delay * 2, 2_000)) {
    let connection: NativeConnection | undefined;
    try {
      connection = await NativeConnection.connect({ address });
      await connection.workflowService.getSystemInfo({});
      return connection;
    } catch (error) {
      await connection?.close().catch(() => {});
      if (Date.now() + delay > deadline) {
        throw new Error(`Temporal at ${address} is not reachable after ${timeoutMs} ms: ${errorText(error)}`);
      }
      await sleep(delay);
    }
  }
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
