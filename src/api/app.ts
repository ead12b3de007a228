import express from 'express';
import type { Logger } from '../logger';
import { errorHandler, unknownRoute } from './errors';
import { healthRouter, type HealthDependencies } from './health';

export interface ApiDependencies extends HealthDependencies {
  log: Logger;
  bodyLimitBytes: number;
}

export function createApp(deps: ApiDependencies): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(express.json({ limit: deps.bodyLimitBytes }));
  app.use(healthRouter(deps));
  app.use(unknownRoute);
  app.use(errorHandler(deps.log));
  return app;
}
