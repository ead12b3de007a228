/**
 * docs/using-it.md's TypeScript snippets, type-checked against the official client and run as written,
 * in order, against the server and the model stub (test/python/test_docs_snippets.py runs the Python
 * ones). Every block the doc marks `<!-- snippet: NAME -->` is one step of one async function, as a
 * reader runs them one after the other: a later snippet uses the `client` and `agent` an earlier one
 * made. Only the server's address is this run's. SCRIPTS says what the model answers during each step
 * and what must hold after it (read from what the model was sent and what the snippet printed).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ChatRequest } from './helpers/openai-stub';
import type { StubReply } from './helpers/model-stub';
import { useAgentServer } from './helpers/agent-server';
import { loadModule, typeProblems } from './helpers/doc-code';

const root = path.join(__dirname, '..');
const DOC = path.join(root, 'docs', 'using-it.md');
const DOC_URL = 'http://127.0.0.1:8283';
/** A marker line, a blank line (prettier keeps one), then the fenced block. */
const SNIPPET = /^<!-- snippet: ([a-z-]+) -->\n\n```(\w+)\n([\s\S]*?)^```$/gm;

const snippets = (language: string) =>
  [...fs.readFileSync(DOC, 'utf8').matchAll(SNIPPET)]
    .filter(([, , lang]) => lang === language)
    .map(([, name, , code]) => ({ name, code }));

/** The tool results the model was sent after the last user message of its last request. */
function newToolResults(requests: ChatRequest[]): string[] {
  const messages = requests.at(-1)?.messages ?? [];
  const lastUser = messages.map((m) => m.role).lastIndexOf('user');
  return messages
    .slice(lastUser + 1)
    .filter((m) => m.role === 'tool')
    .map((m) => String(m.content));
}

interface Step {
  replies: StubReply[];
  check: (requests: ChatRequest[], printed: string) => void;
}

const rolledOneToTwenty = (results: string[]) => {
  const rolls = results.map((text) => Number((JSON.parse(text) as { message: string }).message));
  expect(rolls).toHaveLength(1);
  expect(rolls[0]).toBeGreaterThanOrEqual(1);
  expect(rolls[0]).toBeLessThanOrEqual(20);
};

const SCRIPTS: Record<string, Step> = {
  agent: {
    replies: [{ text: 'Hello, Alice.' }],
    check: (_requests, printed) => {
      expect(printed).toContain('assistant_message');
      expect(printed).toContain('end_turn');
    },
  },
  tool: {
    replies: [{ toolCalls: [{ name: 'roll_dice', arguments: { sides: 20 } }] }, { text: 'A fine roll.' }],
    check: (requests) => rolledOneToTwenty(newToolResults(requests)),
  },
  'client-tools': {
    replies: [
      { toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] },
      { text: 'It is sunny in Paris.' },
    ],
    check: (requests) => {
      expect(requests[0].tools?.map((tool) => tool.function.name)).toContain('get_weather');
      expect(newToolResults(requests).join('\n')).toContain('Sunny in Paris');
    },
  },
  approval: {
    replies: [{ toolCalls: [{ name: 'roll_dice', arguments: { sides: 20 } }] }, { text: 'Rolled.' }],
    check: (requests) => rolledOneToTwenty(newToolResults(requests)),
  },
  streaming: {
    replies: [{ text: 'Once upon a time, a die rolled.' }],
    check: (requests, printed) => {
      expect(requests.at(-1)?.stream).toBe(true);
      expect(printed).toContain('Once upon a time, a die rolled.');
      expect(printed).toContain('end_turn');
    },
  },
};

/**
 * The snippets as one module: their imports first, then one async function whose steps they are, each
 * preceded by `await step(name)`, and a last `await step('')`.
 */
function snippetModule(): string {
  const imports: string[] = [];
  const steps = snippets('ts').map(({ name, code }) => {
    const lines = code.split('\n');
    imports.push(...lines.filter((line) => line.startsWith('import ')));
    const body = lines.filter((line) => !line.startsWith('import ')).join('\n');
    return `await step(${JSON.stringify(name)});\n${body}`;
  });
  return [
    ...imports,
    'export async function run(step: (name: string) => Promise<void>): Promise<void> {',
    ...steps,
    "await step('');",
    '}',
  ].join('\n');
}

describe("docs/using-it.md's TypeScript snippets", () => {
  const h = useAgentServer('openai');

  it('marks each flow once, in the order the Python snippets and the steps here have them', () => {
    expect(snippets('ts').map(({ name }) => name)).toEqual(Object.keys(SCRIPTS));
    const markers = fs.readFileSync(DOC, 'utf8').match(/^<!-- snippet: [a-z-]+ -->$/gm) ?? [];
    expect(markers).toHaveLength([...fs.readFileSync(DOC, 'utf8').matchAll(SNIPPET)].length);
  });

  it('type-check against the official client', () => {
    expect(typeProblems(snippetModule())).toEqual([]);
  });

  it('run as written: each flow does what the doc says', async () => {
    const exports = loadModule<{ run: (step: (name: string) => Promise<void>) => Promise<void> }>(
      snippetModule().replaceAll(DOC_URL, h.server.url),
    );

    let printed = '';
    const log = jest.spyOn(console, 'log').mockImplementation((...parts: unknown[]) => {
      printed += `${parts.map(String).join(' ')}\n`;
    });
    const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      printed += String(chunk);
      return true;
    });
    let current: string | undefined;
    const ran: string[] = [];
    try {
      await exports.run!(async (next) => {
        if (current !== undefined) SCRIPTS[current].check(h.stub.requests, printed);
        h.stub.requests.length = 0;
        printed = '';
        if (next) {
          h.stub.enqueue(...SCRIPTS[next].replies);
          ran.push(next);
        }
        current = next;
      });
    } finally {
      log.mockRestore();
      write.mockRestore();
    }
    expect(ran).toEqual(Object.keys(SCRIPTS));
  });
});
