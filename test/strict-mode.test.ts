import schemas from '../src/tools/builtin/schemas.json';
import { strictParameters, stripOptionalNulls } from '../src/schemas/strict-mode';

describe("strict mode (Letta's convert_to_structured_output)", () => {
  it('makes every property required, typed as declared, and closes the object', () => {
    const original = schemas.memory_insert.parameters;
    const strict = strictParameters(original);
    expect(strict.required).toEqual(['label', 'new_string', 'insert_line']);
    expect(strict.additionalProperties).toBe(false);
    expect((strict.properties as Record<string, { type: unknown }>).insert_line.type).toBe('integer');
    expect((strict.properties as Record<string, { type: unknown }>).label.type).toBe('string');
    expect(original.required).toEqual(['label', 'new_string']); // the stored schema is untouched
  });

  it('recurses into nested objects, array items and anyOf, and leaves $ref and untyped properties be', () => {
    const strict = strictParameters({
      type: 'object',
      properties: {
        point: {
          type: 'object',
          properties: { x: { type: 'number' }, y: { type: 'number' } },
          required: ['x'],
        },
        tags: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' } } } },
        either: { anyOf: [{ type: 'string' }, { type: 'integer' }] },
        ref: { $ref: '#/$defs/Thing' },
        anything: {},
        maybe: { type: ['string', 'null'] },
      },
      required: ['point', 'tags'],
    });
    const props = strict.properties as Record<string, Record<string, unknown>>;
    expect(props.point).toEqual({
      type: 'object',
      properties: { x: { type: 'number' }, y: { type: 'number' } },
      additionalProperties: false,
      required: ['x', 'y'],
    });
    expect(props.tags.items).toEqual({
      type: 'object',
      properties: { name: { type: 'string' } },
      additionalProperties: false,
      required: ['name'],
    });
    expect(props.either.anyOf).toEqual([{ type: 'string' }, { type: 'integer' }]);
    expect(props.ref).toEqual({ $ref: '#/$defs/Thing' });
    expect(props.anything).toEqual({});
    expect(props.maybe).toEqual({ type: ['string', 'null'] });
  });

  it('gives a tool without parameters an empty closed object', () => {
    expect(JSON.stringify(strictParameters({}))).toBe(
      JSON.stringify({ type: 'object', properties: {}, additionalProperties: false, required: [] }),
    );
  });

  it('strips nulls the model sent for optional arguments, and keeps required ones', () => {
    const parameters = schemas.memory_insert.parameters;
    expect(stripOptionalNulls({ label: 'human', new_string: 'x', insert_line: null }, parameters)).toEqual({
      label: 'human',
      new_string: 'x',
    });
    expect(stripOptionalNulls({ label: null, new_string: 'x' }, parameters)).toEqual({
      label: null,
      new_string: 'x',
    });
  });
});
