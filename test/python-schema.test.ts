import fs from 'node:fs';
import path from 'node:path';
import { schemaFromPython, ToolSchemaError } from '../src/tools/python-schema';

const FIXTURES = path.join(__dirname, 'fixtures', 'tools');
const options = { python: 'python3', timeoutMs: 10_000 };
const TYPE_MAP =
  "{<class 'int'>: 'integer', <class 'str'>: 'string', <class 'bool'>: 'boolean', <class 'float'>: 'number', None: 'null'}";

describe('schemas from Python source, as Letta derives them (golden files in test/fixtures/tools)', () => {
  const goldens = fs.readdirSync(FIXTURES).filter((f) => f.endsWith('.py'));

  it.each(goldens)('%s gives its golden schema, key for key and in order', async (file) => {
    const source = fs.readFileSync(path.join(FIXTURES, file), 'utf8');
    const expected = JSON.parse(fs.readFileSync(path.join(FIXTURES, file.replace(/\.py$/, '.json')), 'utf8'));
    const schema = await schemaFromPython(source, options);
    expect(JSON.stringify(schema, null, 2)).toBe(JSON.stringify(expected, null, 2));
  });

  const tool = (signature: string, args = '        x: The x.') =>
    `def f(${signature}) -> str:\n    """Does f.\n\n    Args:\n${args}\n    """\n    return ""\n`;
  const failed = (reason: string) => `Failed to derive json schema: Schema generation failed: ${reason}`;
  const unsupported = (type: string) =>
    failed(
      `Value error in schema generation: Python type ${type} has no corresponding JSON schema type - full map: ${TYPE_MAP}`,
    );

  it.each([
    ['no docstring', 'def f(x: int) -> int:\n    return x\n', failed('Function f missing docstring')],
    ['no function', 'x = 1\n', failed('No functions found in source code')],
    [
      'a syntax error',
      'def f(:\n    pass\n',
      failed('Failed to parse source code: invalid syntax (<unknown>, line 1)'),
    ],
    [
      'an undocumented parameter',
      tool('x: int, y: int'),
      failed(
        "Value error in schema generation: Parameter 'y' in function 'f' lacks a description in the docstring",
      ),
    ],
    [
      'a parameter without a type',
      tool('x'),
      failed("Type error in schema generation: Parameter 'x' in function 'f' lacks a type annotation"),
    ],
    [
      'a Dict with type arguments',
      `from typing import Dict\n${tool('x: Dict[str, int]')}`,
      unsupported('typing.Dict[(str, int)]'),
    ],
    ['a union written with |', tool('x: str | None'), unsupported('str | None')],
    ['Any', `from typing import Any\n${tool('x: Any')}`, unsupported('Any')],
    ['a Tuple', `from typing import Tuple\n${tool('x: Tuple[int, int]')}`, unsupported('Tuple[(int, int)]')],
    [
      'a model field without a description',
      `from pydantic import BaseModel\n\nclass Point(BaseModel):\n    x: int\n\n${tool('x: Point')}`,
      failed(
        "Value error in schema generation: Property {'title': 'X', 'type': 'integer'} lacks a 'description' key",
      ),
    ],
  ])('refuses %s with Letta’s message', async (_what, source, message) => {
    const attempt = schemaFromPython(source, options);
    await expect(attempt).rejects.toBeInstanceOf(ToolSchemaError);
    await expect(attempt).rejects.toThrow(message);
  });

  it('leaves out the reserved parameters self and agent_state, even without a type', async () => {
    const schema = await schemaFromPython(tool('self, agent_state, x: str'), options);
    expect(Object.keys(schema.parameters.properties)).toEqual(['x']);
  });
});
