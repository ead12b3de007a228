import schemas from '../src/tools/builtin/schemas.json';
import { schemaHealth } from '../src/schemas/schema-health';
import { strictParameters } from '../src/schemas/strict-mode';
import { inlineRefs } from '../src/schemas/json-refs';
import { inventoryArgsSchema } from './helpers/pydantic-schemas';

const closed = (properties: Record<string, unknown>, required: string[] = Object.keys(properties)) => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});

describe("schema health (Letta's validate_complete_json_schema)", () => {
  it('finds a closed object with every property required strict-compliant, and an empty one too', () => {
    expect(schemaHealth(closed({ a: { type: 'string' } }))).toEqual({
      status: 'STRICT_COMPLIANT',
      reasons: [],
    });
    expect(schemaHealth(closed({}))).toEqual({ status: 'STRICT_COMPLIANT', reasons: [] });
  });

  it('finds an open object (additionalProperties missing or true) usable only without strict mode', () => {
    const open = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] };
    expect(schemaHealth(open)).toEqual({
      status: 'NON_STRICT_ONLY',
      reasons: ['parameters: additionalProperties is not false'],
    });
    expect(schemaHealth({ ...open, additionalProperties: true }).status).toBe('NON_STRICT_ONLY');
  });

  it('does not hold optional properties against a schema', () => {
    expect(schemaHealth(closed({ a: { type: 'string' }, b: { type: 'integer' } }, ['a'])).status).toBe(
      'STRICT_COMPLIANT',
    );
  });

  it.each([
    [
      'a top level that is not an object',
      { type: 'string' },
      "parameters: the top level must be of type 'object'",
    ],
    [
      'a property without a type',
      closed({ a: { description: 'x' } }),
      "parameters.properties.a: missing 'type'",
    ],
    [
      'properties that are not an object',
      { ...closed({}), properties: [] },
      'parameters: properties is not an object',
    ],
    ['required that is not a list', { ...closed({}), required: 'a' }, 'parameters: required is not a list'],
    [
      'a required property that is not defined',
      closed({ a: { type: 'string' } }, ['a', 'b']),
      "parameters: required property 'b' is not defined",
    ],
    [
      'a required object that may be empty',
      closed({ a: { type: 'object', additionalProperties: false } }),
      'parameters.properties.a: a required object that may be empty',
    ],
    [
      'a required array that may be empty',
      closed({ a: { type: 'array' } }),
      'parameters.properties.a: a required array that may be empty',
    ],
    [
      'an array without items',
      closed({ a: { type: 'array', minItems: 1 } }),
      'parameters.properties.a: an array needs items that are a schema',
    ],
    [
      'an unknown type',
      closed({ a: { type: ['string', 'text'] } }),
      'parameters.properties.a: unknown type "text"',
    ],
    [
      'anyOf that is not a list of schemas',
      closed({ a: { anyOf: { type: 'string' } } }),
      'parameters.properties.a: anyOf must be a list of schemas',
    ],
  ])('finds %s invalid', (_what, parameters, reason) => {
    const health = schemaHealth(parameters);
    expect(health.status).toBe('INVALID');
    expect(health.reasons).toContain(reason);
  });

  it('infers object and array types, and accepts anyOf without a type', () => {
    const inferred = closed({
      point: { properties: { x: { type: 'number' } }, required: ['x'], additionalProperties: false },
      list: { items: { type: 'string' } },
      either: { anyOf: [{ type: 'string' }, { type: 'null' }] },
    });
    expect(schemaHealth(inferred)).toEqual({ status: 'STRICT_COMPLIANT', reasons: [] });
  });

  describe('the strict transform heals what strict mode would refuse', () => {
    it('closes every object, nested ones included', () => {
      const mcpStyle = {
        type: 'object',
        properties: {
          where: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
        required: ['where'],
      };
      expect(schemaHealth(mcpStyle).status).toBe('NON_STRICT_ONLY');
      expect(schemaHealth(strictParameters(mcpStyle))).toEqual({ status: 'STRICT_COMPLIANT', reasons: [] });
    });

    it('makes optional properties required, typed as declared', () => {
      const healed = strictParameters({ type: 'object', properties: { a: { type: 'string' } } });
      expect(healed).toEqual(closed({ a: { type: 'string' } }));
      expect(schemaHealth(healed).status).toBe('STRICT_COMPLIANT');
    });

    it("heals the built-in tools' schemas", () => {
      for (const schema of Object.values(schemas)) {
        expect([schema.name, schemaHealth(schema.parameters).status]).toEqual([
          schema.name,
          'NON_STRICT_ONLY',
        ]);
        expect([schema.name, schemaHealth(strictParameters(schema.parameters)).status]).toEqual([
          schema.name,
          'STRICT_COMPLIANT',
        ]);
      }
    });
  });
});

const inventory = {
  ...inventoryArgsSchema,
  properties: {
    ...inventoryArgsSchema.properties,
    data: { ...inventoryArgsSchema.properties.data, description: 'The entry.' },
  },
};

describe('schemas with $defs and $ref (Pydantic models)', () => {
  it('inlines every reference, keeping what sits beside it, and drops the definitions', () => {
    const inlined = inlineRefs(inventory);
    expect(JSON.stringify(inlined)).not.toContain('$ref');
    expect(inlined).not.toHaveProperty('$defs');
    expect(inlined.properties.data).toEqual({
      ...inventory.$defs.InventoryEntry,
      properties: { ...inventory.$defs.InventoryEntry.properties, item: inventory.$defs.InventoryItem },
      description: 'The entry.',
    });
    expect(inventory.properties.data).toHaveProperty('$ref'); // the input is not changed
  });

  it('keeps a recursive reference, with its definitions, where inlining could not end', () => {
    const tree = {
      $defs: {
        Node: {
          type: 'object',
          properties: { children: { type: 'array', items: { $ref: '#/$defs/Node' } } },
          required: ['children'],
        },
      },
      type: 'object',
      properties: { root: { $ref: '#/$defs/Node' } },
      required: ['root'],
    };
    const inlined = inlineRefs(tree);
    expect(inlined.properties.root).toMatchObject({
      properties: { children: { items: { $ref: '#/$defs/Node' } } },
    });
    expect(inlined.$defs).toEqual(tree.$defs);
    expect(schemaHealth(tree).status).not.toBe('INVALID');
  });

  it("reads a nested model's types through its references: usable, and strict once closed", () => {
    expect(schemaHealth(inventory)).toEqual({
      status: 'NON_STRICT_ONLY',
      reasons: expect.arrayContaining(['parameters.properties.data: additionalProperties is not false']),
    });
    expect(schemaHealth(strictParameters(inlineRefs(inventory))).status).toBe('STRICT_COMPLIANT');
  });
});
