/**
 * An MCP tool's input schema made usable as Letta makes it (schema_generator.py, normalize_mcp_schema
 * and generate_tool_schema_for_mcp): Python servers built on Pydantic emit `$defs` / `$ref`, type
 * lists and `anyOf`. Missing pieces are filled in, objects closed, `$ref`s inlined (10 levels deep at
 * most), type lists written as `anyOf`, and repeated `anyOf` options folded.
 */
type Schema = Record<string, unknown>;

const isObject = (value: unknown): value is Schema =>
  Boolean(value) && typeof value === 'object' && !Array.isArray(value);

const MAX_REF_DEPTH = 10;

const defName = (ref: unknown) =>
  typeof ref === 'string' && ref.startsWith('#/$defs/') ? ref.slice('#/$defs/'.length) : undefined;

/** `type: ['string', 'number']` as `anyOf`, which strict mode and the health check read. */
function typeListAsAnyOf(node: Schema): Schema {
  if (!Array.isArray(node.type)) return node;
  const { type, ...rest } = node;
  const types = type as unknown[];
  if (types.length === 1) return { ...rest, type: types[0] };
  return { ...rest, anyOf: types.map((t) => ({ type: t })) };
}

/** Letta's deduplicate_anyof: exact repeats go; of one type, the option with a `format` stays. */
function foldAnyOf(options: unknown[]): unknown[] {
  const kept: unknown[] = [];
  for (const option of options) {
    if (!isObject(option)) {
      if (!kept.some((k) => JSON.stringify(k) === JSON.stringify(option))) kept.push(option);
      continue;
    }
    const twin = kept.findIndex(
      (k) =>
        isObject(k) &&
        (JSON.stringify(k) === JSON.stringify(option) || (option.type && k.type === option.type)),
    );
    if (twin < 0) {
      kept.push(option);
      continue;
    }
    const other = kept[twin] as Schema;
    const better =
      JSON.stringify(other) === JSON.stringify(option)
        ? other
        : option.format && !other.format
          ? option
          : other.format && !option.format
            ? other
            : Object.keys(option).length >= Object.keys(other).length
              ? option
              : other;
    kept[twin] = better;
  }
  return kept;
}

/** The node with its `$ref`s replaced by their definitions, recursively, and objects closed. */
function normalized(node: unknown, defs: Schema, depth = 0): unknown {
  if (!isObject(node) || depth > MAX_REF_DEPTH) return node;
  let out: Schema = typeListAsAnyOf({ ...node });
  const name = defName(out.$ref);
  if (name && isObject(defs[name])) {
    const { $ref: _ref, ...rest } = out;
    // The definition fills in what the referring node does not say itself.
    out = normalized({ ...(defs[name] as Schema), ...rest }, defs, depth + 1) as Schema;
  }
  if (isObject(out.properties))
    out.properties = Object.fromEntries(
      Object.entries(out.properties).map(([key, value]) => [key, normalized(value, defs, depth + 1)]),
    );
  if (out.items !== undefined) out.items = normalized(out.items, defs, depth + 1);
  if (Array.isArray(out.anyOf))
    out.anyOf = foldAnyOf(out.anyOf.map((option) => normalized(option, defs, depth + 1)));
  if (out.type === 'object' && out.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}

export function normalizeMcpSchema(inputSchema: Schema): Schema {
  const { $defs, ...schema } = inputSchema;
  const defs = isObject($defs) ? $defs : {};
  const root = normalized({ type: 'object', properties: {}, ...schema }, defs) as Schema;
  return { ...root, required: Array.isArray(root.required) ? root.required : [] };
}
