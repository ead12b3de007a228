/**
 * Letta's schema health (letta/functions/schema_validator.py: validate_complete_json_schema): whether a
 * tool's parameters schema can be used by OpenAI's strict mode as it is (STRICT_COMPLIANT), only
 * without it (NON_STRICT_ONLY, e.g. open objects), or not at all (INVALID). Optional properties are
 * not held against a schema: the strict transform heals them (strict-mode.ts). References to the
 * schema's definitions (`$defs`) are read in place (json-refs.ts), as the model is sent them.
 */
import { inlineRefs } from './json-refs';

export type SchemaHealthStatus = 'STRICT_COMPLIANT' | 'NON_STRICT_ONLY' | 'INVALID';

export interface SchemaHealth {
  status: SchemaHealthStatus;
  reasons: string[];
}

type Node = Record<string, unknown>;

const JSON_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);
const COMBINATORS = ['anyOf', 'oneOf', 'allOf'] as const;

const isNode = (value: unknown): value is Node =>
  Boolean(value) && typeof value === 'object' && !Array.isArray(value);

class Findings {
  invalid: string[] = [];
  nonStrict: string[] = [];
}

/** The node's type, as given or as Letta infers it; undefined when it has none and cannot have one. */
function typeOf(node: Node): unknown {
  if (node.type !== undefined) return node.type;
  if (node.properties !== undefined || node.additionalProperties !== undefined) return 'object';
  if (node.items !== undefined) return 'array';
  return undefined;
}

const allowsEmptyObject = (node: Node) =>
  node.type === 'object' &&
  (!Array.isArray(node.required) || node.required.length === 0) &&
  node.additionalProperties === false &&
  (!isNode(node.properties) || Object.keys(node.properties).length === 0);

const allowsEmptyArray = (node: Node) =>
  node.type === 'array' &&
  node.items === undefined &&
  (typeof node.minItems !== 'number' || node.minItems === 0);

function checkObject(node: Node, at: string, found: Findings): void {
  if (node.additionalProperties !== false) {
    found.nonStrict.push(`${at}: additionalProperties is not false`);
  }
  const properties = node.properties ?? {};
  if (!isNode(properties)) {
    found.invalid.push(`${at}: properties is not an object`);
    return;
  }
  const required = node.required ?? [];
  if (!Array.isArray(required)) {
    found.invalid.push(`${at}: required is not a list`);
    return;
  }
  for (const name of required) {
    if (!(String(name) in properties))
      found.invalid.push(`${at}: required property '${name}' is not defined`);
  }
  for (const [name, property] of Object.entries(properties)) {
    const where = `${at}.properties.${name}`;
    if (!isNode(property)) {
      found.invalid.push(`${where}: is not a schema`);
      continue;
    }
    if (required.includes(name) && allowsEmptyObject(property)) {
      found.invalid.push(`${where}: a required object that may be empty`);
    }
    if (required.includes(name) && allowsEmptyArray(property)) {
      found.invalid.push(`${where}: a required array that may be empty`);
    }
    checkNode(property, where, found);
  }
}

function checkNode(node: Node, at: string, found: Findings): void {
  if (typeof node.$ref === 'string') return; // a recursive model's reference, which stays as it is
  for (const key of COMBINATORS) {
    const options = node[key];
    if (options === undefined) continue;
    if (!Array.isArray(options) || !options.every(isNode)) {
      found.invalid.push(`${at}: ${key} must be a list of schemas`);
      continue;
    }
    options.forEach((option, i) => checkNode(option, `${at}.${key}[${i}]`, found));
  }
  const type = typeOf(node);
  if (type === undefined) {
    if (!COMBINATORS.some((key) => node[key] !== undefined)) found.invalid.push(`${at}: missing 'type'`);
    return;
  }
  const types = Array.isArray(type) ? type : [type];
  const unknown = types.filter((t) => typeof t !== 'string' || !JSON_TYPES.has(t));
  if (unknown.length) {
    found.invalid.push(`${at}: unknown type ${JSON.stringify(unknown.length === 1 ? unknown[0] : unknown)}`);
    return;
  }
  if (types.includes('object')) checkObject(node, at, found);
  if (types.includes('array')) {
    if (!isNode(node.items)) found.invalid.push(`${at}: an array needs items that are a schema`);
    else checkNode(node.items, `${at}.items`, found);
  }
}

/** The health of a tool's parameters schema, with Letta's reasons. */
export function schemaHealth(given: unknown): SchemaHealth {
  const found = new Findings();
  const parameters = inlineRefs(given);
  if (!isNode(parameters) || typeOf(parameters) !== 'object') {
    found.invalid.push("parameters: the top level must be of type 'object'");
  } else {
    checkNode(parameters, 'parameters', found);
  }
  if (found.invalid.length) return { status: 'INVALID', reasons: [...found.invalid, ...found.nonStrict] };
  if (found.nonStrict.length) return { status: 'NON_STRICT_ONLY', reasons: found.nonStrict };
  return { status: 'STRICT_COMPLIANT', reasons: [] };
}
