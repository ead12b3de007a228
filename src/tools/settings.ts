/** The tools' settings: reading tools' source, what a return may carry, and the web and file built-ins. */
import { z } from 'zod';
import { DEFAULT_IMAGE_MAX_BYTES } from '../returns/return-parts';
import { milliseconds, optional, wholeNumber } from '../settings-fields';

export const toolSettings = z.object({
  PYTHON_PATH: z
    .string()
    .min(1)
    .default('python3')
    .describe("the Python that reads Python tools' source to derive their schemas (standard library only)"),
  SCHEMA_GENERATION_TIMEOUT_MS: milliseconds
    .default(10_000)
    .describe("longest the reading of one tool's source may take"),
  TOOL_RETURN_IMAGE_MAX_BYTES: wholeNumber
    .min(0)
    .default(DEFAULT_IMAGE_MAX_BYTES)
    .describe(
      "largest image a tool's return gives the model (an MCP tool's image content, a client tool's image part); a larger one reaches it as a line saying what it was, since model APIs refuse larger images",
    ),
  GREP_FILES_PAGE_SIZE: wholeNumber
    .min(1)
    .max(1000)
    .default(20)
    .describe("matches `grep_files` shows per call (Letta's page); the model pages with `offset`"),
});

/** `fetch_webpage` and `web_search` (src/tools/builtin/web-settings.ts). */
export const webToolSettings = z
  .object({
    FETCH_WEBPAGE_TIMEOUT_MS: milliseconds
      .default(30_000)
      .describe('`fetch_webpage`: longest a page may take to arrive, redirects included'),
    FETCH_WEBPAGE_MAX_BYTES: wholeNumber
      .positive()
      .default(5 * 1024 * 1024)
      .describe('`fetch_webpage`: the most of a page read, decompressed (the rest is dropped)'),
    FETCH_WEBPAGE_MAX_REDIRECTS: wholeNumber
      .min(0)
      .default(10)
      .describe('`fetch_webpage`: redirects followed at most; each target is checked as the first URL is'),
    EXA_API_KEY: optional(z.string()).describe(
      "Exa's key for `web_search` and `fetch_webpage` (an agent's secret `EXA_API_KEY` comes first)",
    ),
    EXA_BASE_URL: z.string().url().default('https://api.exa.ai').describe("where Exa's API is"),
    EXA_TIMEOUT_MS: milliseconds.default(60_000).describe('longest one request to Exa may take'),
  })
  .meta({
    title: 'Web tools',
    description:
      "`fetch_webpage` and `web_search`; where they may reach is `OUTBOUND_ALLOW_PRIVATE`'s ([Outbound requests](#outbound-requests)).",
  });

export const toolsSettings = toolSettings.extend(webToolSettings.shape).meta({
  title: 'Tools',
  description:
    "How tools' schemas are read from their source, what a tool's return may carry, and the built-in web and file tools.",
});

export type ToolsSettings = z.infer<typeof toolsSettings>;
