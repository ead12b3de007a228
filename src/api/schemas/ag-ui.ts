/**
 * AG-UI's RunAgentInput as the API reference shows it: AG-UI's own schema (`RunAgentInputSchema` of
 * @ag-ui/core, which requests are parsed with) as JSON Schema, with what this server asks beyond it
 * (src/api/routes/ag-ui.ts): ids it can keep, a frontend tool's parameters as a JSON Schema object.
 * AG-UI's zod schema has transforms, which the document generator cannot state; its input form can.
 */
import { z } from 'zod';
import { RunAgentInputSchema } from '@ag-ui/core/schemas';

/** The longest thread or run id kept. */
export const MAX_AG_UI_ID_LENGTH = 256;

/** The parts of a JSON Schema this file reaches into. */
type JsonSchema = { properties?: Record<string, JsonSchema>; items?: JsonSchema } & Record<string, unknown>;

function documentedInput(): z.ZodType {
  const { $schema: _dialect, ...schema } = z.toJSONSchema(RunAgentInputSchema, {
    io: 'input',
    unrepresentable: 'any',
  }) as JsonSchema;
  const id = { minLength: 1, maxLength: MAX_AG_UI_ID_LENGTH };
  const fields = schema.properties!;
  Object.assign(fields.threadId, id, {
    description: "`default`, one of the agent's conversation ids, or any other id: its own conversation",
  });
  Object.assign(fields.runId, id, { description: 'the same id sent again joins that run' });
  fields.tools.items!.properties!.parameters = { type: 'object' };
  return z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
}

export const RunAgentInputDocSchema = documentedInput().meta({ id: 'RunAgentInput' });
