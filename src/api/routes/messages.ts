import { Router, type Response } from 'express';
import { setTimeout as sleep } from 'node:timers/promises';
import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import type { ApiContext } from '../context';
import { HttpError, notFound } from '../errors';
import { parseBody, parseQuery } from '../validation';
import { CancelSchema, LettaRequestSchema, type LettaRequest } from '../schemas/messages';
import { pageQuery } from '../schemas/common';
import { lettaMessages, runShape, usageShape } from '../letta-shapes';
import { getAgentRow } from '../../db/agents';
import { listMessages, runMessagesAfter } from '../../db/messages';
import { getRun, listRuns } from '../../db/runs';
import type { MessageRow, RunRow } from '../../db/rows';
import { contentText } from '../../agent/context';
import { lettaDate } from '../../agent/time';
import { startAgentStep, workflowIdFor } from '../../agent/steps';
import type { agentStep } from '../../../workflows/agent-step';
import type { AgentStepError, AgentStepResult } from '../../../workflows/messages';

/** What a step produced for the caller: the model's and the tools' messages, not the input echoed back. */
const isOutput = (row: MessageRow) => row.role === 'assistant' || row.role === 'tool';

function outputMessages(rows: MessageRow[], types?: string[] | null) {
  return rows
    .filter(isOutput)
    .flatMap(lettaMessages)
    .filter((m) => !types?.length || types.includes(m.message_type));
}

function stopReasonShape(stopReason: string) {
  return { message_type: 'stop_reason', stop_reason: stopReason };
}

function userMessages(body: LettaRequest) {
  if (body.input !== undefined && body.input !== null) {
    return [{ role: 'user' as const, text: contentText(body.input) }];
  }
  const messages = body.messages ?? [];
  if (messages.some((m) => m.type !== 'message')) {
    // Approvals answer a paused step; this server does not pause steps yet.
    throw new HttpError(
      400,
      'Cannot process approval response: No tool call is currently awaiting approval. Please send a regular message to interact with the agent.',
    );
  }
  return messages.flatMap((m) =>
    m.type === 'message' ? [{ role: m.role, text: contentText(m.content), name: m.name, otid: m.otid }] : [],
  );
}

/** Streams a run's messages as the workflow stores them, in Letta's SSE framing. */
async function streamRun(
  ctx: ApiContext,
  res: Response,
  run: RunRow,
  handle: WorkflowHandle<typeof agentStep>,
  body: LettaRequest,
): Promise<void> {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
  const ping = () =>
    send({ id: `ping-${randomUUID()}`, date: lettaDate(new Date()), message_type: 'ping', run_id: run.id });
  if (body.include_pings) ping();
  const keepalive = body.include_pings ? setInterval(ping, ctx.config.STREAM_KEEPALIVE_MS) : undefined;
  let closed = false;
  res.on('close', () => (closed = true));

  let lastSeq = 0;
  const flush = async () => {
    for (const row of await runMessagesAfter(ctx.db, run.id, lastSeq)) {
      lastSeq = row.seq;
      for (const message of outputMessages([row], body.include_return_message_types)) send(message);
    }
  };
  let outcome: { result?: AgentStepResult; error?: unknown } | undefined;
  const done = handle.result().then(
    (result) => (outcome = { result }),
    (error) => (outcome = { error }),
  );
  try {
    while (!outcome && !closed) {
      await Promise.race([sleep(ctx.config.STREAM_POLL_INTERVAL_MS), done]);
      await flush();
    }
    if (closed) return;
    await flush();
    const result = outcome?.result;
    const failure: AgentStepError | undefined = result
      ? result.error
      : { type: 'internal_error', message: `The agent step failed: ${String(outcome?.error)}` };
    send(stopReasonShape(result?.stopReason ?? 'error'));
    if (failure) {
      // Letta's error-aware stream: the stop reason, then a named error event the client raises.
      const error = {
        message_type: 'error_message',
        run_id: run.id,
        error_type: failure.type,
        message: failure.message,
      };
      res.write(`event: error\ndata: ${JSON.stringify(error)}\n\n`);
    } else {
      send(usageShape((await getRun(ctx.db, run.id))?.usage));
    }
    res.write('data: [DONE]\n\n');
  } finally {
    clearInterval(keepalive);
    res.end();
  }
}

export function messagesRouter(ctx: ApiContext): Router {
  const router = Router();

  const requireAgent = async (agentId: string) => {
    if (!(await getAgentRow(ctx.db, agentId))) throw notFound(`Agent ${agentId}`);
  };

  const start = async (agentId: string, body: LettaRequest, runType: string, background: boolean) => {
    await requireAgent(agentId);
    return startAgentStep(ctx, {
      agentId,
      userMessages: userMessages(body),
      clientTools: (body.client_tools ?? []).map((t) => ({
        name: t.name,
        description: t.description,
        parameters: t.parameters,
      })),
      maxSteps: body.max_steps,
      background,
      runType,
    });
  };

  const send = async (agentId: string, body: LettaRequest, res: Response, streaming: boolean) => {
    if (!streaming && (body.stream_tokens || !body.include_pings || body.background)) {
      throw new HttpError(422, 'stream_tokens, include_pings=false and background need streaming=true');
    }
    const { run, handle } = await start(
      agentId,
      body,
      streaming ? 'send_message_streaming' : 'send_message',
      false,
    );
    if (streaming) return streamRun(ctx, res, run, handle, body);
    const result = await handle.result();
    const finished = await getRun(ctx.db, run.id);
    res.json({
      messages: outputMessages(await runMessagesAfter(ctx.db, run.id, 0), body.include_return_message_types),
      stop_reason: stopReasonShape(result.stopReason),
      usage: usageShape(finished?.usage),
      logprobs: null,
      turns: null,
    });
  };

  router.post('/v1/agents/:agentId/messages', async (req, res) => {
    const body = parseBody(LettaRequestSchema, req);
    await send(req.params.agentId, body, res, body.streaming);
  });

  router.post('/v1/agents/:agentId/messages/stream', async (req, res) => {
    await send(req.params.agentId, parseBody(LettaRequestSchema, req), res, true);
  });

  router.post('/v1/agents/:agentId/messages/async', async (req, res) => {
    const { run } = await start(
      req.params.agentId,
      parseBody(LettaRequestSchema, req),
      'send_message_async',
      true,
    );
    res.json(runShape(run));
  });

  router.get('/v1/agents/:agentId/messages', async (req, res) => {
    await requireAgent(req.params.agentId);
    const page = parseQuery(pageQuery(100, 'desc'), req);
    const rows = await listMessages(ctx.db, { agentId: req.params.agentId }, page);
    res.json(rows.flatMap(lettaMessages));
  });

  router.post('/v1/agents/:agentId/messages/cancel', async (req, res) => {
    const agentId = req.params.agentId;
    await requireAgent(agentId);
    const body = parseBody(CancelSchema, req);
    const runs = body.run_ids?.length
      ? (await Promise.all(body.run_ids.map((id) => getRun(ctx.db, id)))).filter(
          (r): r is RunRow => r?.agent_id === agentId && (r.status === 'created' || r.status === 'running'),
        )
      : await listRuns(ctx.db, { agentId, active: true }, { limit: 100, order: 'desc' });
    if (runs.length === 0) throw new HttpError(409, 'No active runs to cancel');
    const outcome: Record<string, string> = {};
    for (const run of runs) {
      try {
        await ctx.temporal.workflow.getHandle(workflowIdFor(agentId, run.id)).cancel();
        outcome[run.id] = 'cancelled';
      } catch (error) {
        ctx.log.warn({ runId: run.id, error: String(error) }, 'could not cancel run');
        outcome[run.id] = 'failed';
      }
    }
    res.json(outcome);
  });

  return router;
}
