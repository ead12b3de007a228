import diagnostics from 'node:diagnostics_channel';
import { lookup } from 'node:dns/promises';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import zlib from 'node:zlib';
import { NO_PRIVATE_ADDRESSES, parseAllowList, refusedKind } from '../src/net/private-addresses';
import { OutboundRefused, safeFetch, type SafeFetchOptions } from '../src/net/safe-fetch';
import { fetchWebpage } from '../src/tools/builtin/fetch-webpage';
import { ToolError } from '../src/returns/tool-error';
import { useAgentServer } from './helpers/agent-server';

/** A local web server that records the paths it was asked for. */
async function startSite(
  handle: (path: string, res: http.ServerResponse) => void = (_, res) => res.end('ok'),
) {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req.url ?? '');
    handle(req.url ?? '', res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

type Site = Awaited<ReturnType<typeof startSite>>;

/** Every socket the process opens while `work` runs: a refusal before connecting opens none. */
async function socketsOpenedDuring(
  work: () => Promise<unknown>,
): Promise<{ sockets: Socket[]; error: unknown }> {
  const sockets: Socket[] = [];
  const onSocket = (message: unknown) => sockets.push((message as { socket: Socket }).socket);
  diagnostics.subscribe('net.client.socket', onSocket);
  try {
    await work();
    return { sockets, error: undefined };
  } catch (error) {
    return { sockets, error };
  } finally {
    diagnostics.unsubscribe('net.client.socket', onSocket);
  }
}

const POLICY = { timeoutMs: 30_000, maxBytes: 1_000_000, maxRedirects: 5, allow: NO_PRIVATE_ADDRESSES };

/** Names only these tests know, answered without asking DNS; other names as the system resolves them. */
const resolverOf =
  (names: Record<string, string[]>, asked: string[] = []) =>
  async (hostname: string) => {
    asked.push(hostname);
    return names[hostname] ?? (await lookup(hostname, { all: true })).map((a) => a.address);
  };

describe('the address policy', () => {
  it.each([
    ['127.0.0.53', 'loopback'],
    ['10.255.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['100.64.1.1', 'carrier-grade NAT'],
    ['169.254.169.254', 'link-local'],
    ['255.255.255.255', 'reserved'],
    ['::', 'unspecified'],
    ['fe80::1', 'link-local'],
    ['fd12:3456::1', 'unique-local'],
    ['ff02::1', 'multicast'],
    ['::ffff:10.0.0.1', 'private'],
    ['64:ff9b::a00:1', 'private'],
    ['2002:7f00:1::1', 'loopback'],
    ['fec0::1', 'reserved'],
    ['::1.2.3.4', 'reserved'],
    ['2001:db8::1', 'reserved'],
  ])('refuses %s as %s', (address, kind) => {
    expect(refusedKind(address)).toBe(kind);
  });

  it.each([
    '8.8.8.8',
    '172.32.0.1',
    '2606:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('lets the public address %s through', (address) => {
    expect(refusedKind(address)).toBeUndefined();
  });
});

describe('fetch_webpage with no private address allowed', () => {
  let site: Site;
  beforeAll(async () => {
    site = await startSite();
  });
  afterAll(() => site?.close());

  it('refuses the cloud metadata address at once, without opening a connection', async () => {
    const started = Date.now();
    const { sockets, error } = await socketsOpenedDuring(() =>
      fetchWebpage({ url: 'http://169.254.169.254/latest/meta-data/' }, POLICY),
    );
    expect(error).toBeInstanceOf(ToolError);
    expect((error as Error).message).toBe(
      'Error fetching webpage: 169.254.169.254 is a private address (link-local), which the server may not fetch',
    );
    expect(sockets).toHaveLength(0);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it.each([
    [
      'loopback by IP',
      (port: number) => `http://127.0.0.1:${port}/`,
      '127.0.0.1 is a private address (loopback)',
    ],
    [
      'loopback by name',
      (port: number) => `http://localhost:${port}/`,
      'localhost resolves to a private address (127.0.0.1, loopback)',
    ],
    ['IPv6 loopback', (port: number) => `http://[::1]:${port}/`, '::1 is a private address (loopback)'],
    [
      'IPv4-mapped IPv6 loopback',
      (port: number) => `http://[::ffff:127.0.0.1]:${port}/`,
      '::ffff:7f00:1 is a private address (loopback)',
    ],
    [
      'decimal IPv4',
      (port: number) => `http://2130706433:${port}/`,
      '127.0.0.1 is a private address (loopback)',
    ],
    [
      'hex and short IPv4',
      (port: number) => `http://0x7f.1:${port}/`,
      '127.0.0.1 is a private address (loopback)',
    ],
    [
      '0.0.0.0 (this host)',
      (port: number) => `http://0.0.0.0:${port}/`,
      '0.0.0.0 is a private address (unspecified)',
    ],
  ])('refuses %s, and the server receives nothing', async (_, url, reason) => {
    const before = site.requests.length;
    const { sockets, error } = await socketsOpenedDuring(() => fetchWebpage({ url: url(site.port) }, POLICY));
    expect(error).toBeInstanceOf(ToolError);
    expect((error as Error).message).toBe(
      `Error fetching webpage: ${reason}, which the server may not fetch`,
    );
    expect(sockets).toHaveLength(0);
    expect(site.requests.length).toBe(before);
  });

  it('fetches a loopback page the operator allows, by address or by range', async () => {
    for (const allowed of ['127.0.0.1', '127.0.0.0/8', 'intranet.example, 10.0.0.0/8, 127.0.0.0/8']) {
      const policy = { ...POLICY, allow: parseAllowList(allowed) };
      await expect(fetchWebpage({ url: `http://127.0.0.1:${site.port}/` }, policy)).resolves.toBe('ok');
    }
    const byName = { ...POLICY, allow: parseAllowList('localhost') };
    await expect(fetchWebpage({ url: `http://localhost:${site.port}/` }, byName)).resolves.toBe('ok');
  });
});

describe('safeFetch', () => {
  let target: Site;
  beforeAll(async () => {
    target = await startSite();
  });
  afterAll(() => target?.close());

  it.each([
    [['10.1.2.3'], '10.1.2.3, private'],
    [['93.184.215.14', '192.168.1.1'], '192.168.1.1, private'],
    [['fd00::5'], 'fd00::5, unique-local'],
    [['64:ff9b::a9fe:a9fe'], '64:ff9b::a9fe:a9fe, link-local'],
  ])('refuses a name that resolves to %j, before connecting', async (addresses, detail) => {
    const resolve = resolverOf({ 'inside.test': addresses });
    const { sockets, error } = await socketsOpenedDuring(() =>
      safeFetch(new URL('http://inside.test/'), { ...POLICY, resolve }),
    );
    expect(error).toBeInstanceOf(OutboundRefused);
    expect((error as Error).message).toBe(
      `inside.test resolves to a private address (${detail}), which the server may not fetch`,
    );
    expect(sockets).toHaveLength(0);
  });

  it('connects to the address it checked, resolving each host once (no second DNS answer)', async () => {
    const asked: string[] = [];
    const options: SafeFetchOptions = {
      ...POLICY,
      allow: parseAllowList('allowed.test'),
      resolve: resolverOf({ 'allowed.test': ['127.0.0.1'] }, asked),
    };
    const page = await safeFetch(new URL(`http://allowed.test:${target.port}/pinned`), options);
    expect([page.status, page.body.toString()]).toEqual([200, 'ok']);
    expect(asked).toEqual(['allowed.test']);
    expect(target.requests.at(-1)).toBe('/pinned');
  });

  describe('redirects', () => {
    let allowed: Site;
    let redirectTo = '';
    beforeAll(async () => {
      allowed = await startSite((path, res) => {
        if (path === '/away') return void res.writeHead(302, { location: redirectTo }).end();
        if (path === '/loop') return void res.writeHead(301, { location: '/loop' }).end();
        if (path === '/slow-loop')
          return void setTimeout(() => res.writeHead(307, { location: '/slow-loop' }).end(), 200);
        res.end(`page ${path}`);
      });
    });
    afterAll(() => allowed?.close());

    const options = (extra: Partial<SafeFetchOptions> = {}): SafeFetchOptions => ({
      ...POLICY,
      allow: parseAllowList('allowed.test'),
      resolve: resolverOf({ 'allowed.test': ['127.0.0.1'] }),
      ...extra,
    });
    const from = (path: string) => new URL(`http://allowed.test:${allowed.port}${path}`);

    it('follows one within the allowed host', async () => {
      redirectTo = '/final';
      const page = await safeFetch(from('/away'), options());
      expect([page.url.pathname, page.body.toString()]).toEqual(['/final', 'page /final']);
    });

    it.each([
      [
        'a loopback port not allowed',
        () => `http://127.0.0.1:${target.port}/secret`,
        '127.0.0.1 is a private address',
      ],
      [
        'localhost',
        () => `http://localhost:${target.port}/secret`,
        'localhost resolves to a private address',
      ],
      [
        'the metadata address',
        () => 'http://169.254.169.254/latest/meta-data/',
        '169.254.169.254 is a private',
      ],
      ['another scheme', () => 'file:///etc/passwd', 'only http and https URLs can be fetched, not file:'],
    ])('refuses one to %s at the hop', async (_, location, reason) => {
      redirectTo = location();
      const before = { allowed: allowed.requests.length, target: target.requests.length };
      const error = await safeFetch(from('/away'), options()).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OutboundRefused);
      expect((error as Error).message).toContain(reason);
      expect(allowed.requests.length).toBe(before.allowed + 1);
      expect(target.requests.length).toBe(before.target);
    });

    it('stops after the most redirects allowed', async () => {
      const before = allowed.requests.length;
      const error = await safeFetch(from('/loop'), options({ maxRedirects: 3 })).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OutboundRefused);
      expect((error as Error).message).toBe('more than 3 redirects');
      expect(allowed.requests.length - before).toBe(4);
    });

    it('bounds the whole fetch, redirects included, by one timeout', async () => {
      const started = Date.now();
      const error = await safeFetch(
        from('/slow-loop'),
        options({ timeoutMs: 1_000, maxRedirects: 100 }),
      ).catch((e: unknown) => e);
      expect((error as Error).message).toBe('no complete answer within 1000 ms');
      expect(Date.now() - started).toBeLessThan(1_500);
    });
  });

  it('caps the decoded body, however well it compresses', async () => {
    const site = await startSite((_, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'text/plain' });
      res.end(zlib.gzipSync(Buffer.alloc(10_000_000, 'z')));
    });
    try {
      const page = await safeFetch(new URL(`http://127.0.0.1:${site.port}/`), {
        ...POLICY,
        maxBytes: 1_000,
        allow: parseAllowList('127.0.0.1'),
      });
      expect(page.body.toString()).toBe('z'.repeat(1_000));
    } finally {
      await site.close();
    }
  });
});

describe('an agent whose model asks fetch_webpage for a loopback URL', () => {
  const h = useAgentServer('openai');
  let site: Site;
  beforeAll(async () => {
    site = await startSite();
  });
  afterAll(() => site?.close());

  it('gets an error tool return, and the local server receives no request', async () => {
    const agent = await h.client.agents.create({ model: 'openai/gpt-4o-mini', tools: ['fetch_webpage'] });
    const url = `http://127.0.0.1:${site.port}/admin`;
    h.stub.enqueue({ toolCalls: [{ name: 'fetch_webpage', arguments: { url } }] }, { text: 'I may not.' });
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'Read the admin page' }],
    });
    expect(response.stop_reason.stop_reason).toBe('end_turn');
    expect(response.messages.find((m) => m.message_type === 'tool_return_message')).toMatchObject({
      status: 'error',
      tool_return:
        'Error fetching webpage: 127.0.0.1 is a private address (loopback), which the server may not fetch',
    });
    expect(site.requests).toEqual([]);
  });
});
