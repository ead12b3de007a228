/**
 * Request bodies for property-based tests, generated from the routes' own zod schemas: mostly the shape
 * a route expects, so that requests get past the first check and reach the database, with hostile values
 * in the leaves (NUL bytes, lone surrogates, huge numbers, unknown ids, deep nesting, wrong types).
 */
import fc from 'fast-check';
import { z } from 'zod';

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: JsonSchema | boolean;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
};

/** Strings a database, a parser or a log line may choke on. */
export const hostileString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.constantFrom(
    '\u0000',
    'a\u0000b',
    '\ud800',
    'x\udfffy',
    '\ud83d',
    '\uffff',
    "'; DROP TABLE agents; --",
    '%00',
    '../../etc/passwd',
    '${jndi:ldap://x}',
    '{{7*7}}',
    '<script>alert(1)</script>',
    '\u202e',
    ' ',
    '',
    'agent-00000000-0000-4000-8000-000000000000',
    'tool-00000000-0000-4000-8000-000000000000',
    'block-00000000-0000-4000-8000-000000000000',
  ),
  fc.nat({ max: 200_000 }).map((n) => 'x'.repeat(n)),
);

export const hostileNumber = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -1, 2 ** 31, 2 ** 31 - 1, 2 ** 53 + 2, -(2 ** 63), 1e308, -1e308, 5e-324, 0.5),
);

/** Any JSON value, nested a little. */
const anyJson: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileString,
    hostileNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(hostileString, tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** An array nested `depth` levels: parsers and validators that recurse run out of stack. */
export const deeplyNested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

function fromSchema(schema: JsonSchema, depth: number): fc.Arbitrary<unknown> {
  if (depth > 6) return anyJson;
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants) return fc.oneof(...variants.map((v) => fromSchema(v, depth + 1)));
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  if (types.length > 1) return fc.oneof(...types.map((type) => fromSchema({ ...schema, type }, depth)));
  switch (types[0]) {
    case 'string':
      return hostileString;
    case 'integer':
    case 'number':
      return hostileNumber;
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(schema.items ? fromSchema(schema.items, depth + 1) : anyJson, { maxLength: 4 });
    case 'object':
      return objectOf(schema, depth);
    default:
      return anyJson;
  }
}

function objectOf(schema: JsonSchema, depth: number): fc.Arbitrary<unknown> {
  const properties = Object.fromEntries(
    Object.entries(schema.properties ?? {}).map(([key, value]) => [key, fromSchema(value, depth + 1)]),
  );
  const extra =
    schema.additionalProperties && typeof schema.additionalProperties === 'object'
      ? fromSchema(schema.additionalProperties, depth + 1)
      : anyJson;
  return fc
    .tuple(
      fc.record(properties, { requiredKeys: schema.required ?? [] }),
      fc.dictionary(hostileString, extra, { maxKeys: schema.properties ? 1 : 4 }),
    )
    .map(([known, unknown]) => ({ ...unknown, ...known }));
}

/** Bodies for `schema`: mostly of its shape, sometimes anything at all. */
export function bodyFor(schema: z.ZodType): fc.Arbitrary<unknown> {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  return fc.oneof({ weight: 9, arbitrary: fromSchema(json, 0) }, { weight: 1, arbitrary: anyJson });
}
