/**
 * Letta's `enable_strict_mode` (letta/helpers/tool_execution_helper.py): the schema OpenAI's strict
 * function calling accepts. Every property becomes required, the formerly optional ones nullable,
 * and every object closed. The model then sends null for an argument it means to leave out, so
 * `stripOptionalNulls` removes those before the tool runs.
 */
type Schema = Record<string, unknown>;

const isObject = (value: unknown): value is Schema =>
  Boolean(value) && typeof value === 'object' && !Array.isArray(value);

function nullable(property: Schema): Schema {
  if (Array.isArray(property.anyOf)) {
    const hasNull = property.anyOf.some((option) => isObject(option) && option.type === 'null');
    return hasNull ? property : { ...property, anyOf: [...property.anyOf, { type: 'null' }] };
  }
  if (typeof property.$ref === 'string') {
    const { $ref, ...rest } = property;
    return { ...rest, anyOf: [{ $ref }, { type: 'null' }] };
  }
  if (property.type === undefined) return { ...property, type: 'null' };
  const types = Array.isArray(property.type) ? property.type : [property.type];
  return types.includes('null') ? property : { ...property, type: [...types, 'null'] };
}

function strictNode(node: unknown): unknown {
  if (!isObject(node)) return node;
  const out: Schema = { ...node };
  if (isObject(node.properties)) {
    const required = new Set(Array.isArray(node.required) ? node.required : []);
    out.properties = Object.fromEntries(
      Object.entries(node.properties).map(([name, property]) => {
        const strict = strictNode(property) as Schema;
        return [name, required.has(name) ? strict : nullable(strict)];
      }),
    );
    out.required = Object.keys(node.properties);
  }
  if (node.type === 'object' || isObject(node.properties)) out.additionalProperties = false;
  if (node.items !== undefined) out.items = strictNode(node.items);
  if (Array.isArray(node.anyOf)) out.anyOf = node.anyOf.map(strictNode);
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
