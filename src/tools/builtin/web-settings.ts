import type { NetSettings } from '../../net/settings';
import type { ToolsSettings } from '../settings';
import type { WebSettings } from '.';

/** The web tools' limits and Exa's endpoint, from the server's configuration. */
export function webSettings(config: ToolsSettings & NetSettings): WebSettings {
  return {
    policy: {
      timeoutMs: config.FETCH_WEBPAGE_TIMEOUT_MS,
      maxBytes: config.FETCH_WEBPAGE_MAX_BYTES,
      maxRedirects: config.FETCH_WEBPAGE_MAX_REDIRECTS,
      allow: config.OUTBOUND_ALLOW_PRIVATE,
    },
    exa: { apiKey: config.EXA_API_KEY, baseUrl: config.EXA_BASE_URL, timeoutMs: config.EXA_TIMEOUT_MS },
  };
}
