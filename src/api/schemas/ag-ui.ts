/**
 * AG-UI's RunAgentInput as the API reference shows it. Requests are parsed with AG-UI's own schema
 * (`RunAgentInputSchema` of @ag-ui/core, src/api/routes/ag-ui.ts); this one only documents its fields,
 * since AG-UI's has transforms and custom types that JSON Schema cannot state.
 */
import { z } from 'zod';

const Message = z
  .looseObject({
    id: z.string(),
    role: z.enum(['developer', 'system', 'assistant', 'user', 'tool', 'reasoning', 'activity']),
    content: z.unknown().optional(),
    toolCalls: z.array(z.looseObject({})).optional(),
    toolCallId: z.string().optional(),
  })
  .describe(
    "An AG-UI message: the thread's history as the frontend holds it; only what the thread lacks is new",
  );

export const RunAgentInputDocSchema = z
  .looseObject({
    threadId: z
      .string()
      .describe("`default`, one of the agent's conversation ids, or any other id: its own conversation"),
    runId: z.string().describe('the same id sent again joins that run'),
    parentRunId: z.string().optional(),
    protocolVersion: z.string().optional(),
    state: z.unknown().optional().describe('ignored: the agent’s memory is the state'),
    messages: z.array(Message),
    tools: z
      .array(z.looseObject({ name: z.string(), description: z.string(), parameters: z.unknown().optional() }))
      .optional()
      .describe("frontend tools: the request's client tools"),
    context: z
      .array(z.looseObject({ description: z.string(), value: z.string() }))
      .optional()
      .describe("shown to the model in this run's system message"),
    forwardedProps: z.unknown().optional().describe('`max_steps` is honoured; anything else is ignored'),
    resume: z
      .array(
        z.looseObject({
          interruptId: z.string(),
          status: z.enum(['resolved', 'cancelled']),
          payload: z.unknown().optional(),
        }),
      )
      .optional()
      .describe('answers to the interrupts the last run ended with'),
  })
  .meta({ id: 'RunAgentInput' });
