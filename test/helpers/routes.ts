import type express from 'express';
import { createApp, type ApiDependencies } from '../../src/api/app';
import { silentLogger, testConfig } from './env';

export interface RegisteredRoute {
  method: string;
  /** Express's form: `/v1/agents/:agentId`. */
  path: string;
}

/**
 * Every route the app registers, from its routers' layers. No request is made: the app is built
 * without a database or Temporal, which only the handlers would use.
 */
export function registeredRoutes(): RegisteredRoute[] {
  const app: express.Express = createApp({
    config: testConfig({}),
    log: silentLogger(),
  } as unknown as ApiDependencies);
  type Layer = { route?: { path: string; methods: Record<string, boolean> }; handle?: { stack?: unknown } };
  const walk = (stack: Layer[]): RegisteredRoute[] =>
    stack.flatMap((layer) =>
      layer.route
        ? Object.keys(layer.route.methods).map((method) => ({ method, path: layer.route!.path }))
        : Array.isArray(layer.handle?.stack)
          ? walk(layer.handle.stack as Layer[])
          : [],
    );
  return walk((app as unknown as { router: { stack: Layer[] } }).router.stack);
}
