/**
 * Exa, the search engine behind Letta's web_search and its fetch_webpage (when a key is set), through
 * Exa's own SDK. The key is the agent's secret `EXA_API_KEY`, else the server's (Letta's precedence).
 */
import Exa from 'exa-js';
import { ToolError } from '../../returns/tool-error';

export interface ExaSettings {
  /** The server's key (EXA_API_KEY); an agent's secret of that name comes first. */
  apiKey?: string;
  baseUrl: string;
  /** How long one request to Exa may take. */
  timeoutMs: number;
}

export const NO_EXA_KEY =
  'EXA_API_KEY is not set in environment or on agent_state tool execution environment variables.';

/** A client with the agent's key or the server's; undefined when neither is set. */
export function exaClient(settings: ExaSettings, agentKey: string | undefined): Exa | undefined {
  const key = agentKey || settings.apiKey;
  return key ? new Exa(key, settings.baseUrl) : undefined;
}

/**
 * `request`, bounded by the timeout and the call's cancellation: the SDK takes no signal, so an
 * abandoned request is left to finish on its own while the call answers.
 */
export function bounded<T>(request: Promise<T>, settings: ExaSettings, signal?: AbortSignal): Promise<T> {
  const limit = AbortSignal.any([AbortSignal.timeout(settings.timeoutMs), ...(signal ? [signal] : [])]);
  return new Promise<T>((resolve, reject) => {
    const stop = () =>
      reject(
        signal?.aborted
          ? signal.reason
          : new ToolError(`Exa did not answer within ${settings.timeoutMs / 1000} seconds`),
      );
    if (limit.aborted) return stop();
    limit.addEventListener('abort', stop, { once: true });
    request.then(resolve, reject).finally(() => limit.removeEventListener('abort', stop));
  });
}
