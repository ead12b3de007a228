import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { paramHeaderProblem, requestHeaders, withRequestHeaders } from '../src/mcp/request-headers';

const marked = (type: string, header: unknown) => ({
  type: 'object',
  properties: { value: { type, 'x-mcp-header': header }, other: { type: 'string' } },
});

describe('the MCP request headers (SEP-2243)', () => {
  it('names the method on every request, and the tool, resource or prompt where a request names one', () => {
    const schemas = new Map();
    expect(requestHeaders({ method: 'tools/list' }, schemas)).toEqual({ 'Mcp-Method': 'tools/list' });
    expect(requestHeaders({ method: 'resources/read', params: { uri: 'file:///a b' } }, schemas)).toEqual({
      'Mcp-Method': 'resources/read',
      'Mcp-Name': 'file:///a b',
    });
    expect(requestHeaders({ method: 'prompts/get', params: { name: 'greet' } }, schemas)).toMatchObject({
      'Mcp-Name': 'greet',
    });
    expect(requestHeaders({ id: 1, result: {} } as never, schemas)).toEqual({});
  });

  it('mirrors the marked arguments of a tool call, Base64 where the text is not plain visible ASCII', () => {
    const schema = {
      type: 'object',
      properties: {
        region: { type: 'string', 'x-mcp-header': 'Region' },
        priority: { type: 'integer', 'x-mcp-header': 'Priority' },
        verbose: { type: 'boolean', 'x-mcp-header': 'Verbose' },
        greeting: { type: 'string', 'x-mcp-header': 'Greeting' },
        padded: { type: 'string', 'x-mcp-header': 'Padded' },
        unmarked: { type: 'string' },
      },
    };
    const args = { region: 'us west 1', priority: 42, verbose: null, greeting: 'Hello, 世界', padded: ' x ' };
    const headers = requestHeaders(
      { method: 'tools/call', params: { name: 'deploy', arguments: { ...args, unmarked: 'no' } } },
      new Map([['deploy', schema]]),
    );
    expect(headers).toEqual({
      'Mcp-Method': 'tools/call',
      'Mcp-Name': 'deploy',
      'Mcp-Param-Region': 'us west 1',
      'Mcp-Param-Priority': '42',
      'Mcp-Param-Greeting': `=?base64?${Buffer.from('Hello, 世界').toString('base64')}?=`,
      'Mcp-Param-Padded': `=?base64?${Buffer.from(' x ').toString('base64')}?=`,
    });
  });

  it('refuses marks no header can carry', () => {
    expect(paramHeaderProblem(marked('string', 'Region'))).toBeUndefined();
    expect(paramHeaderProblem(undefined)).toBeUndefined();
    expect(paramHeaderProblem(marked('string', ''))).toMatch(/not a valid header name/);
    expect(paramHeaderProblem(marked('string', 'My Region'))).toMatch(/not a valid header name/);
    expect(paramHeaderProblem(marked('string', 'Région'))).toMatch(/not a valid header name/);
    expect(paramHeaderProblem(marked('string', 'Region:1'))).toMatch(/not a valid header name/);
    expect(paramHeaderProblem(marked('number', 'Score'))).toMatch(/on a number/);
    expect(paramHeaderProblem(marked('object', 'Data'))).toMatch(/on a object/);
    const twice = {
      type: 'object',
      properties: {
        a: { type: 'string', 'x-mcp-header': 'Id' },
        b: { type: 'string', 'x-mcp-header': 'id' },
      },
    };
    expect(paramHeaderProblem(twice)).toMatch(/two arguments have the x-mcp-header 'id'/);
  });

  it('adds them to what a POST sends, keeping the headers it had', async () => {
    const seen: http.IncomingHttpHeaders[] = [];
    const server = http.createServer((req, res) => {
      seen.push(req.headers);
      req.resume().on('end', () => res.end('{}'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
    try {
      const post = withRequestHeaders(new Map());
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 't' } });
      await post(url, { method: 'POST', body, headers: { authorization: 'Bearer x' } });
      await post(url, { method: 'POST', body: 'not json' });
      expect(seen[0]).toMatchObject({
        'mcp-method': 'tools/call',
        'mcp-name': 't',
        authorization: 'Bearer x',
      });
      expect(seen[1]).not.toHaveProperty('mcp-method');
    } finally {
      server.close();
    }
  });
});
