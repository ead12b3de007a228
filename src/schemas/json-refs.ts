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

export function inlineRefs<T>(schema: T): T {
  if (!isObject(schema)) return schema;
  const { $defs, definitions, ...rest } = schema;
  const defs: Record<string, Record<string, unknown>> = {
    $defs: isObject($defs) ? $defs : {},
    definitions: isObject(definitions) ? definitions : {},
  };
  let keptRecursive = false;
  const walk = (node: unknown, seen: readonly string[]): unknown => {
    if (Array.isArray(node)) return node.map((item) => walk(item, seen));
    if (!isObject(node)) return node;
    const match = typeof node.$ref === 'string' ? LOCAL_REF.exec(node.$ref) : null;
    if (match) {
      const target = defs[match[1]][decodeURIComponent(match[2])];
      if (!isObject(target)) return node;
      if (seen.includes(node.$ref as string)) {
        keptRecursive = true;
        return node;
      }
      const { $ref: _ref, ...siblings } = node;
      return walk({ ...target, ...siblings }, [...seen, node.$ref as string]);
    }
    return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, walk(value, seen)]));
  };
  const inlined = walk(rest, []) as Schema;
  if (keptRecursive) {
    if (isObject($defs)) inlined.$defs = $defs;
    if (isObject(definitions)) inlined.definitions = definitions;
  }
  return inlined as T;
}
