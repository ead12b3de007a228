import type { Response } from 'express';

/** Starts an answer of server-sent events; the signal aborts when the client goes. */
export function openEventStream(res: Response): AbortSignal {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  const gone = new AbortController();
  res.on('close', () => gone.abort());
  return gone.signal;
}
