/**
 * A JSON schema with its local references (`#/$defs/…`, `#/definitions/…`, as Pydantic and zod write
 * nested models) replaced by what they name: the form every provider takes (Gemini takes no `$ref`;
 * OpenAI's strict transform and the health check read each type in place). A reference that leads
 * back into itself cannot be inlined: it stays, with the definitions it needs, for the providers that
 * follow it (OpenAI, Anthropic).
 */
type Schema = Record<string, unknown>;

const isObject = (value: unknown): value is Schema =>
  Boolean(value) && typeof value === 'object' && !Array.isArray(value);

const LOCAL_REF = /^#\/(\$defs|definitions)\/(.+)$/;

/**
 * Most references one schema is inlined with: definitions that each name another several times would
 * otherwise grow the schema exponentially. Past it, references stay as they are, with their definitions.
 */
const MAX_INLINED = 10_000;

export function inlineRefs<T>(schema: T): T {
  // Without definitions no reference resolves: the schema is taken as it is (every model call's tools).
  if (!isObject(schema) || (schema.$defs === undefined && schema.definitions === undefined)) return schema;
  const { $defs, definitions, ...rest } = schema;
  const defs: Record<string, Record<string, unknown>> = {
    $defs: isObject($defs) ? $defs : {},
    definitions: isObject(definitions) ? definitions : {},
  };
  let keptRefs = false;
  let inlinedCount = 0;
  const walk = (node: unknown, seen: readonly string[]): unknown => {
    if (Array.isArray(node)) return node.map((item) => walk(item, seen));
    if (!isObject(node)) return node;
    const match = typeof node.$ref === 'string' ? LOCAL_REF.exec(node.$ref) : null;
    if (match) {
      const target = defs[match[1]][decodeURIComponent(match[2])];
      if (!isObject(target)) return node;
      if (seen.includes(node.$ref as string) || ++inlinedCount > MAX_INLINED) {
        keptRefs = true;
        return node;
      }
      const { $ref: _ref, ...siblings } = node;
      return walk({ ...target, ...siblings }, [...seen, node.$ref as string]);
    }
    return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, walk(value, seen)]));
  };
  const inlined = walk(rest, []) as Schema;
  if (keptRefs) {
    if (isObject($defs)) inlined.$defs = $defs;
    if (isObject(definitions)) inlined.definitions = definitions;
  }
  return inlined as T;
}
