/** How the API's HTTP servers (its port and its sandbox socket) start and stop. */
import http from 'node:http';
import type net from 'node:net';

/**
 * An HTTP server for `app`, listening at `at`. An idle keep-alive connection stays open longer than a
 * client keeps it (Node's fetch: 4 s; load balancers: about a minute), so the client closes it first:
 * a server closing it first races the client's next request on it, which then fails with ECONNRESET.
 */
export function listen(
  app: http.RequestListener,
  at: net.ListenOptions,
  keepAliveTimeout: number,
): Promise<http.Server> {
  return new Promise((resolve, reject) => {
    // A request's headers may take as long as an idle connection lasts, and no longer.
    const server = http.createServer({ keepAliveTimeout, headersTimeout: keepAliveTimeout + 1_000 }, app);
    server.once('error', reject);
    server.listen(at, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

/**
 * Stops accepting, ends idle keep-alive connections, and waits for requests in flight: with `cutAfterMs`,
 * at most that long, then their connections are closed.
 */
export function closeServer(server: http.Server, cutAfterMs?: number): Promise<void> {
  return new Promise((resolve) => {
    const cut =
      cutAfterMs === undefined ? undefined : setTimeout(() => server.closeAllConnections(), cutAfterMs);
    server.close(() => {
      clearTimeout(cut);
      resolve();
    });
    server.closeIdleConnections();
  });
}
