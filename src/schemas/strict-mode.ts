/**
 * Strict function calling as Letta converts a schema for it (`convert_to_structured_output`, whose
 * results are Letta's `*_so.json` schema fixtures): every object closed, and every property required,
 * typed as declared. A parameter the schema lets be null (`["string", "null"]`, an `anyOf` with null)
 * may still be sent as null; `stripOptionalNulls` then drops it when the tool does not require it, so
 * the tool's own default applies.
 */
type Schema = Record<string, unknown>;

const isObject = (value: unknown): value is Schema =>
  Boolean(value) && typeof value === 'object' && !Array.isArray(value);

/** Keys in Letta's order: what the node had, then `additionalProperties`, then `required`. */
function strictNode(node: unknown): unknown {
  if (!isObject(node)) return node;
  const { required, additionalProperties, ...out } = node;
  const properties = isObject(node.properties) ? node.properties : undefined;
  if (properties)
    out.properties = Object.fromEntries(Object.entries(properties).map(([name, p]) => [name, strictNode(p)]));
  if (node.items !== undefined) out.items = strictNode(node.items);
  if (Array.isArray(node.anyOf)) out.anyOf = node.anyOf.map(strictNode);
  if (node.type === 'object' || properties) out.additionalProperties = false;
  else if (additionalProperties !== undefined) out.additionalProperties = additionalProperties;
  if (properties) out.required = Object.keys(properties);
  else if (required !== undefined) out.required = required;
  return out;
}

/** Whether every object of the schema names its properties: a free-form one cannot be strict. */
export function canBeStrict(node: unknown, root = true): boolean {
  if (!isObject(node)) return true;
  if (node.type === 'object' && !isObject(node.properties) && !root) return false;
  const children = [
    ...(isObject(node.properties) ? Object.values(node.properties) : []),
    ...(node.items !== undefined ? [node.items] : []),
    ...(Array.isArray(node.anyOf) ? node.anyOf : []),
  ];
  return children.every((child) => canBeStrict(child, false));
}

/** The parameters schema in strict form; the input is not changed. */
export function strictParameters(parameters: Schema): Schema {
  return strictNode({ type: 'object', properties: {}, ...parameters }) as Schema;
}

/** Drops null arguments the original schema did not require: strict mode's way of saying "absent". */
export function stripOptionalNulls(
  args: Record<string, unknown>,
  parameters: unknown,
): Record<string, unknown> {
  const required = new Set(
    isObject(parameters) && Array.isArray(parameters.required) ? parameters.required : [],
  );
  return Object.fromEntries(
    Object.entries(args).filter(([name, value]) => value !== null || required.has(name)),
  );
}
