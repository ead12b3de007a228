import express from 'express';
import type { NativeConnection } from '@temporalio/worker';
import type { ApiContext } from './context';
import { errorHandler, unknownRoute } from './errors';
import { healthRouter } from './health';
import { agentsRouter } from './routes/agents';
import { messagesRouter } from './routes/messages';
import { runsRouter } from './routes/runs';
import { sandboxConfigsRouter } from './routes/sandbox-configs';
import { mcpServersRouter } from './routes/mcp-servers';
import { toolsRouter } from './routes/tools';

export interface ApiDependencies extends ApiContext {
  connection: NativeConnection;
}

export function createApp(deps: ApiDependencies): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(express.json({ limit: deps.config.MAX_REQUEST_BODY_BYTES }));
  app.use(
    healthRouter({ db: deps.db, temporal: deps.connection, timeoutMs: deps.config.HEALTH_CHECK_TIMEOUT_MS }),
  );
  app.use(agentsRouter(deps));
  app.use(messagesRouter(deps));
  app.use(runsRouter(deps));
  app.use(toolsRouter(deps));
  app.use(sandboxConfigsRouter(deps));
  app.use(mcpServersRouter(deps));
  app.use(unknownRoute);
  app.use(errorHandler(deps.log));
  return app;
}
