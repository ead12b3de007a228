import express from 'express';
import type { NativeConnection } from '@temporalio/worker';
import { accessControl, corsGrant } from './access';
import { tokenVerifier } from './scoped-access';
import type { ApiContext } from './context';
import { inputGuard } from './input-guard';
import { httpMetrics } from './http-metrics';
import { errorHandler, unknownRoute } from './errors';
import { methodNotAllowed } from './route-book';
import { healthRouter } from './health';
import { apiReference } from './api-reference';
import { approvalPage } from './approval-page';
import { agUiPage } from './ag-ui-page';
import { agentsRouter } from './routes/agents';
import { agentFilesRouter } from './routes/agent-files';
import { agentFoldersRouter } from './routes/agent-folders';
import { messagesRouter } from './routes/messages';
import { runsRouter } from './routes/runs';
import { sandboxConfigsRouter } from './routes/sandbox-configs';
import { mcpServersRouter } from './routes/mcp-servers';
import { mcpConnectRouter } from './routes/mcp-connect';
import { modelsRouter } from './routes/models';
import { conversationsRouter } from './routes/conversations';
import { toolsRouter } from './routes/tools';
import { archivesRouter } from './routes/archives';
import { blocksRouter } from './routes/blocks';
import { stepsRouter } from './routes/steps';
import { identitiesRouter } from './routes/identities';
import { schedulesRouter } from './routes/schedules';
import { foldersRouter } from './routes/folders';
import { accessTokensRouter } from './routes/access-tokens';
import { approvalsRouter } from './routes/approvals';
import { agUiRouter } from './routes/ag-ui';
import { approvalLinkRouter } from './approval-links';
import { mcpOauthRouter } from './routes/mcp-oauth';
import { keepingContext, traceRequests } from '../observability/http';

export interface ApiDependencies extends ApiContext {
  connection: NativeConnection;
}

/** Letta's API, a router per resource (src/api/routes). */
const ROUTERS = [
  agentFilesRouter,
  agentFoldersRouter,
  agentsRouter,
  messagesRouter,
  runsRouter,
  toolsRouter,
  sandboxConfigsRouter,
  mcpServersRouter,
  mcpConnectRouter,
  modelsRouter,
  conversationsRouter,
  archivesRouter,
  blocksRouter,
  stepsRouter,
  identitiesRouter,
  foldersRouter,
  schedulesRouter,
  accessTokensRouter,
  approvalsRouter,
  agUiRouter,
];

export function createApp(deps: ApiDependencies): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(httpMetrics);
  const { config } = deps;
  const access = {
    password: config.LETTA_SERVER_PASSWORD,
    bindHost: config.HOST,
    allowedHosts: config.ALLOWED_HOSTS,
    corsOrigins: config.CORS_ORIGINS,
    failureLimit: config.AUTH_FAILURE_LIMIT,
    failureWindowMs: config.AUTH_FAILURE_WINDOW_MS,
    verifyToken: tokenVerifier(deps.db, config.AGENT_MESSAGE_MAX_DEPTH),
  };
  const health = healthRouter({
    db: deps.db,
    temporal: deps.connection,
    timeoutMs: config.HEALTH_CHECK_TIMEOUT_MS,
    stopping: deps.stopping,
  });
  const routers = ROUTERS.map((routes) => routes(deps));
  app.use(traceRequests(deps.log));
  app.use(corsGrant(access));
  app.use(health.router);
  // The API's description is no secret: a browser opens the reference without the password, which its
  // "try it" requests then carry.
  const page = approvalPage();
  const chatPage = agUiPage();
  const links = approvalLinkRouter(deps);
  const mcpOauth = mcpOauthRouter(deps);
  const documented = [health, page, links, ...routers, chatPage, mcpOauth];
  const reference = apiReference(documented.flatMap((r) => r.routes));
  app.use(reference.router);
  // The pages hold no data: they ask for the password or a token, which their API calls carry.
  app.use(page.router);
  app.use(chatPage.router);
  // A signed link is its own credential: a chat bot or an e-mail acts on a pause without the password.
  app.use(links.router);
  // An MCP server's OAuth callback is a browser's redirect: its state is the credential.
  app.use(mcpOauth.router);
  app.use(accessControl(access));
  app.use(keepingContext(express.json({ limit: config.MAX_REQUEST_BODY_BYTES })));
  app.use(inputGuard({ maxJsonDepth: config.MAX_JSON_DEPTH }));
  // Before the routes: a method the document does not list for a path never reaches a route of a
  // neighbouring path (DELETE …/archival-memory/search is not a delete of the memory named "search").
  app.use(methodNotAllowed([...documented, reference].flatMap((r) => r.routes)));
  for (const routes of routers) app.use(routes.router);
  app.use(unknownRoute);
  app.use(errorHandler(deps.log));
  return app;
}
