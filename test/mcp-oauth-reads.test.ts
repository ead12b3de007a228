import crypto from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { connectPostgres, type Database } from '../src/db/database';
import { migrate } from '../src/db/migrate';
import { useSecretsKey } from '../src/secrets';
import { McpClientPool, type McpServerRef } from '../src/mcp/client-pool';
import { McpOauth } from '../src/mcp/oauth';
import { mcpStdioLauncher, mcpStdioOptions } from '../src/mcp/stdio-sandbox';
import { McpAuthError } from '../src/mcp/connection';
import { NO_PRIVATE_ADDRESSES } from '../src/net/private-addresses';
import { newId } from '../src/ids';
import { createTestSchema, type TestSchema } from './helpers/postgres';
import { silentLogger, testConfig } from './helpers/env';
import { startHttpEverything } from './helpers/mcp-servers';
import { startOauthMcpServer, type OauthMcpServer } from './helpers/oauth-mcp-server';

/**
 * What an MCP call reads of OAuth (src/mcp/oauth.ts, oauth-connect.ts), counted at the database: a
 * server that never asked for OAuth is called with nothing read, an OAuth-protected one with its
 * tokens from memory; two pools (two worker processes) on one database, one refreshing tokens the
 * other then renews from after its own 401.
 */
describe('MCP OAuth state per call', () => {
  let schema: TestSchema;
  let db: Database;
  /** Every statement on the mcp_oauth table. */
  const oauthQueries: string[] = [];
  const closers: (() => unknown)[] = [];

  beforeAll(async () => {
    useSecretsKey(crypto.randomBytes(32));
    schema = await createTestSchema();
    const real = connectPostgres(schema.url, 4);
    await migrate(real);
    db = {
      ...real,
      query: (sql, params) => {
        if (/\bmcp_oauth\b/.test(sql)) oauthQueries.push(sql);
        return real.query(sql, params);
      },
    } as Database;
    closers.push(
      () => real.close(),
      () => schema.drop(),
    );
  });
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
  });

  /** A pool with OAuth, as a worker process has. */
  const workerPool = () => {
    const oauth = new McpOauth(db, {
      publicUrl: 'http://127.0.0.1:9/',
      stateTtlMs: 60_000,
      refreshMarginMs: 60_000,
      fetchPolicy: { timeoutMs: 5000, maxBytes: 1_000_000, maxRedirects: 3, allow: NO_PRIVATE_ADDRESSES },
    });
    const pool = new McpClientPool({
      timeouts: { connectMs: 10_000, listMs: 10_000 },
      stdio: mcpStdioLauncher(mcpStdioOptions(testConfig({}))),
      reconnectInitialMs: 100,
      reconnectMaxMs: 1000,
      taskPollMs: 100,
      elicitationHoldMs: 1000,
      inputRounds: 10,
      oauth,
      log: silentLogger(),
    });
    closers.push(() => pool.close());
    return { pool, oauth };
  };

  const call = (pool: McpClientPool, server: McpServerRef, name: string, args: Record<string, unknown>) =>
    pool.callTool(server, name, args, { timeoutMs: 10_000 }).then((outcome) => {
      if (!('result' in outcome)) throw new Error('the call paused');
      return (outcome.result.content as { text: string }[])[0]!.text;
    });

  /** Statements on mcp_oauth while `work` runs. */
  const oauthQueriesDuring = async (work: () => Promise<unknown>) => {
    const before = oauthQueries.length;
    await work();
    return oauthQueries.slice(before);
  };

  it('a server that never asked for OAuth: connected without it, nothing of OAuth read by its calls', async () => {
    const everything = await startHttpEverything('streamableHttp');
    closers.push(() => (everything.child as ChildProcess).kill('SIGKILL'));
    const { pool } = workerPool();
    const server = {
      id: newId('mcp_server'),
      config: { mcp_server_type: 'streamable_http' as const, server_url: everything.url },
    };
    const connecting = await oauthQueriesDuring(() => call(pool, server, 'echo', { message: 'one' }));
    expect(connecting).toHaveLength(1); // whether it has OAuth state: once, as it connects
    const calls = await oauthQueriesDuring(async () => {
      for (const message of ['two', 'three', 'four']) await call(pool, server, 'echo', { message });
    });
    expect(calls).toEqual([]);
  });

  it('an OAuth-protected server: its 401 starts OAuth, its tokens come from memory, and a pool renews from what another refreshed', async () => {
    const target: OauthMcpServer = await startOauthMcpServer();
    closers.push(() => target.close());
    const first = workerPool();
    const server = {
      id: newId('mcp_server'),
      config: { mcp_server_type: 'streamable_http' as const, server_url: target.url },
    };

    // Registered with no OAuth config: the 401 starts the authorization code flow.
    expect(await first.pool.listTools(server).catch((error: unknown) => error)).toBeInstanceOf(McpAuthError);
    const { authorization_url } = (await first.oauth.status(server.id))!;
    const granted = await fetch(authorization_url!, { redirect: 'manual' });
    const callback = new URL(granted.headers.get('location')!);
    const owner = await first.oauth.takePending(callback.searchParams.get('state')!);
    expect(owner).toEqual({ serverId: server.id });
    await first.oauth.exchange(server, callback.searchParams.get('code')!);

    expect(await call(first.pool, server, 'whisper', { text: 'ONE' })).toBe('one');
    const calls = await oauthQueriesDuring(async () => {
      for (const text of ['TWO', 'THREE', 'FOUR']) await call(first.pool, server, 'whisper', { text });
    });
    expect(calls).toEqual([]);

    // Another worker process, connected with the same tokens.
    const second = workerPool();
    expect(await call(second.pool, server, 'whisper', { text: 'HELLO' })).toBe('hello');
    // The server forgets the access tokens; the first pool's 401 refreshes (the refresh token rotates).
    target.revokeAccessTokens();
    expect(await call(first.pool, server, 'whisper', { text: 'AGAIN' })).toBe('again');
    expect(target.grants).toEqual(['authorization_code', 'refresh_token']);
    // The second pool's 401 reads the row again and renews with the rotated refresh token.
    const renewing = await oauthQueriesDuring(async () =>
      expect(await call(second.pool, server, 'whisper', { text: 'STILL' })).toBe('still'),
    );
    expect(renewing.length).toBeGreaterThan(0);
    expect(target.grants).toEqual(['authorization_code', 'refresh_token', 'refresh_token']);
  });

  it('a server that lets initialize in without a token and refuses the next request: OAuth starts then', async () => {
    const target = await startOauthMcpServer({ openInitialize: true });
    closers.push(() => target.close());
    const { pool, oauth } = workerPool();
    const server = {
      id: newId('mcp_server'),
      config: { mcp_server_type: 'streamable_http' as const, server_url: target.url },
    };
    expect(await pool.listTools(server).catch((error: unknown) => error)).toBeInstanceOf(McpAuthError);
    const { authorization_url } = (await oauth.status(server.id))!;
    const callback = new URL(
      (await fetch(authorization_url!, { redirect: 'manual' })).headers.get('location')!,
    );
    await oauth.takePending(callback.searchParams.get('state')!);
    await oauth.exchange(server, callback.searchParams.get('code')!);
    expect(await call(pool, server, 'whisper', { text: 'OPEN' })).toBe('open');
  });
});
