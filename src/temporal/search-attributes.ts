import { temporal } from '@temporalio/proto';
import type { NativeConnection } from '@temporalio/worker';
import { customSearchAttributes } from '../../workflows/search-attributes';

const { IndexedValueType } = temporal.api.enums.v1;

/**
 * Registers the custom search attributes the namespace lacks. Idempotent: run at every start-up,
 * because the dev server ignores `--search-attribute` once its database file exists.
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
  return missing.map((key) => key.name);
}
