import { temporal } from '@temporalio/proto';
import type { NativeConnection } from '@temporalio/worker';
import { customSearchAttributes } from '../../contracts/search-attributes';

const { IndexedValueType } = temporal.api.enums.v1;

/**
 * Registers the custom search attributes the namespace lacks, and returns once turns can set them.
 * Idempotent: run at every start-up, because the dev server ignores `--search-attribute` once its
 * database file exists, and a cluster's namespace may lack them.
 */
export async function registerSearchAttributes(
  connection: NativeConnection,
  namespace: string,
  keys: readonly (typeof customSearchAttributes)[number][] = customSearchAttributes,
): Promise<string[]> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const missing = keys.filter((key) => !(key.name in (customAttributes ?? {})));
  if (missing.length === 0) return [];
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(
      missing.map((key) => [
        key.name,
        IndexedValueType[`INDEXED_VALUE_TYPE_${key.type}` as keyof typeof IndexedValueType],
      ]),
    ),
  });
  await untilUsable(connection, namespace, missing);
  return missing.map((key) => key.name);
}

/** Attributes just added reach the namespace's cache at its next refresh (seconds): wait for it. */
async function untilUsable(
  connection: NativeConnection,
  namespace: string,
  keys: readonly (typeof customSearchAttributes)[number][],
  timeoutMs = 60_000,
): Promise<void> {
  const query = keys.map((key) => `${key.name} = ''`).join(' AND ');
  for (const deadline = Date.now() + timeoutMs; ;) {
    try {
      await connection.workflowService.countWorkflowExecutions({ namespace, query });
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}
