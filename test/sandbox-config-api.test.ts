import crypto from 'node:crypto';
import Letta from '@letta-ai/letta-client';
import { decryptSecret, SecretsKeyError, useSecretsKey } from '../src/secrets';
import { sandboxEnvironment } from '../src/sandbox/environment';
import { getAgent } from '../src/db/agents';
import { upsertSandboxConfig } from '../src/db/sandbox-configs';
import { modalUnsupportedReason } from '../src/sandbox/modal-support';
import { sandboxConfigBody, sandboxConfigOf, type SandboxType } from '../src/schemas/sandbox-config';
import { startTestServer, type TestServer } from './helpers/server';

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const LOCAL_DEFAULTS = { use_venv: false, venv_name: 'venv', pip_requirements: [], allow_network: false };
const UNKNOWN_CONFIG = `sandbox-${crypto.randomUUID()}`;
const UNKNOWN_ENV_VAR = `sandbox-env-${crypto.randomUUID()}`;
/** Letta's ModalSandboxConfig() as stored (`exclude_none`: the requirements, None, are left out). */
const MODAL_DEFAULTS = { timeout: 60, language: 'python' };
/** Modal's SDK needs Node 22: each Node runs the tests of what it can do, none are skipped. */
const modalSupported = modalUnsupportedReason() === null;
const MODAL_REFUSAL = `Modal sandboxes need Node 22 or later; this server runs Node ${process.versions.node}`;

describe('modalUnsupportedReason', () => {
  it('refuses Modal before Node 22, naming the version needed and the one running', () => {
    expect(modalUnsupportedReason('20.20.0')).toBe(
      'Modal sandboxes need Node 22 or later; this server runs Node 20.20.0',
    );
    expect(modalUnsupportedReason('v21.7.3')).toBe(
      'Modal sandboxes need Node 22 or later; this server runs Node 21.7.3',
    );
  });

  it('accepts Node 22 and later', () => {
    expect(modalUnsupportedReason('22.0.0')).toBeNull();
    expect(modalUnsupportedReason('24.1.0')).toBeNull();
  });
});

describe('the sandbox config body, typed as Letta types LocalSandboxConfig | E2BSandboxConfig | ModalSandboxConfig', () => {
  const typeOf = (fields: Record<string, unknown>, preferred: SandboxType = 'local') =>
    sandboxConfigBody(preferred).parse(fields).type;

  it('takes a body naming Modal’s own fields for a Modal config, with Letta’s defaults', () => {
    expect(typeOf({ npm_requirements: ['lodash'] })).toBe('modal');
    expect(typeOf({ language: 'typescript' })).toBe('modal');
    expect(typeOf({ timeout: 30, pip_requirements: ['numpy'], language: 'python' })).toBe('modal');
    expect(sandboxConfigBody('local').parse({ language: 'typescript' })).toEqual({
      type: 'modal',
      config: { timeout: 60, language: 'typescript' },
      given: { language: 'typescript' },
    });
    expect(sandboxConfigOf('modal', {})).toEqual({ type: 'modal', config: MODAL_DEFAULTS });
  });

  it('still takes local and E2B bodies for theirs', () => {
    expect(typeOf({})).toBe('local');
    expect(typeOf({ use_venv: true, pip_requirements: [{ name: 'requests' }] })).toBe('local');
    // Fields E2B and Modal share: E2B's, as Letta's union lists it first.
    expect(typeOf({ timeout: 30 })).toBe('e2b');
    expect(typeOf({ pip_requirements: ['numpy'] })).toBe('e2b');
    expect(typeOf({ timeout: 30, template: 'tpl' })).toBe('e2b');
    // Patching a Modal config, shared fields are that config's.
    expect(typeOf({ timeout: 30 }, 'modal')).toBe('modal');
  });

  it('answers a Modal body with a bad field with Modal’s errors', () => {
    const parsed = sandboxConfigBody('local').safeParse({ language: 'rust' });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((issue) => issue.path)).toEqual([['language']]);
  });
});

type SandboxConfig = { id: string; type: string; organization_id: null; config: Record<string, unknown> };
type EnvVar = {
  id: string;
  key: string;
  value: string;
  description: string | null;
  sandbox_config_id: string;
};

describe('sandbox configs and env vars (/v1/sandbox-config)', () => {
  const key = crypto.randomBytes(32);
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ SECRETS_KEY: key.toString('base64'), OPENAI_API_KEY: 'test-key' });
  });
  afterAll(async () => {
    await server?.stopAll();
  });

  async function call<T = unknown>(method: string, path: string, body?: unknown) {
    const res = await fetch(`${server.url}/v1/sandbox-config${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
  }
  const ok = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await call<T>(method, path, body);
    expect([method, path, res.status]).toEqual([method, path, 200]);
    return res.body;
  };
  const storedValues = async (table: string) =>
    (await server.db.query<{ value: string }>(`SELECT value FROM ${table}`)).map((r) => r.value);

  it('gets or creates the default config of each type, with Letta defaults', async () => {
    const local = await ok<SandboxConfig>('POST', '/local/default');
    expect(local).toMatchObject({ type: 'local', organization_id: null, config: LOCAL_DEFAULTS });
    expect(local.id).toMatch(new RegExp(`^sandbox-${UUID}$`));
    expect((await ok<SandboxConfig>('POST', '/local/default')).id).toBe(local.id);

    const e2b = await ok<SandboxConfig>('POST', '/e2b/default');
    expect(e2b).toMatchObject({ type: 'e2b', config: { timeout: 300 } });
    expect(e2b.id).not.toBe(local.id);
    expect(await ok<SandboxConfig>('POST', '/local/recreate-venv')).toEqual(
      await ok<SandboxConfig>('POST', '/local/default'),
    );
  });

  it('tells the type from the fields and keeps one config per type, updated in place', async () => {
    const local = await ok<SandboxConfig>('POST', '/local/default');
    const e2b = await ok<SandboxConfig>('POST', '/', { config: { template: 'tpl', timeout: 60 } });
    expect(e2b).toMatchObject({ type: 'e2b', config: { template: 'tpl', timeout: 60 } });
    expect(e2b.id).toBe((await ok<SandboxConfig>('POST', '/e2b/default')).id);

    const venv = await ok<SandboxConfig>('POST', '/', {
      config: { use_venv: true, pip_requirements: [{ name: 'requests', version: '2.32.0' }] },
    });
    expect(venv).toMatchObject({
      id: local.id,
      type: 'local',
      config: {
        ...LOCAL_DEFAULTS,
        use_venv: true,
        pip_requirements: [{ name: 'requests', version: '2.32.0' }],
      },
    });
    // E2B's requirements are plain strings; a local config's are objects.
    expect((await ok<SandboxConfig>('POST', '/', { config: { pip_requirements: ['numpy'] } })).type).toBe(
      'e2b',
    );

    const custom = await ok<SandboxConfig>('POST', '/local', { sandbox_dir: '/srv/tools' });
    expect(custom).toMatchObject({ id: local.id, config: { ...LOCAL_DEFAULTS, sandbox_dir: '/srv/tools' } });
    const configs = await ok<SandboxConfig[]>('GET', '/');
    expect(configs.map((c) => c.type).sort()).toEqual(['e2b', 'local']);
  });

  it('patches the given fields of a config, refusing a config of another type', async () => {
    const local = await ok<SandboxConfig>('POST', '/local', { sandbox_dir: '/srv/tools', venv_name: 'a' });
    const patched = await ok<SandboxConfig>('PATCH', `/${local.id}`, { config: { venv_name: 'b' } });
    expect(patched.config).toEqual({ ...LOCAL_DEFAULTS, sandbox_dir: '/srv/tools', venv_name: 'b' });
    expect((await ok<SandboxConfig>('PATCH', `/${local.id}`, {})).config).toEqual(patched.config);

    const mismatch = await call<{ detail: string }>('PATCH', `/${local.id}`, { config: { timeout: 5 } });
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.detail).toMatch(/Mismatched type.*type local with config of type e2b/);

    const e2b = await ok<SandboxConfig>('POST', '/e2b/default');
    // An empty config is a local one in Letta; patching an E2B config, it is taken as that config's.
    expect((await ok<SandboxConfig>('PATCH', `/${e2b.id}`, { config: {} })).type).toBe('e2b');
  });

  it('lists configs by type and by page', async () => {
    const local = await ok<SandboxConfig>('POST', '/local/default');
    const e2b = await ok<SandboxConfig>('POST', '/e2b/default');
    expect((await ok<SandboxConfig[]>('GET', '/?sandbox_type=e2b')).map((c) => c.id)).toEqual([e2b.id]);
    expect((await ok<SandboxConfig[]>('GET', '/?sandbox_type=local')).map((c) => c.id)).toEqual([local.id]);
    const first = await ok<SandboxConfig[]>('GET', '?limit=1');
    expect(first).toHaveLength(1);
    const rest = await ok<SandboxConfig[]>('GET', `/?after=${first[0].id}`);
    expect([...first, ...rest].map((c) => c.id).sort()).toEqual([local.id, e2b.id].sort());
  });

  it('answers 422 to malformed bodies, queries and ids, and 404 to unknown ids', async () => {
    expect((await call('POST', '/', { config: { use_venv: 'yes' } })).status).toBe(422);
    expect((await call('POST', '/', {})).status).toBe(422);
    expect((await call('POST', '/local', { pip_requirements: [{}] })).status).toBe(422);
    expect((await call('GET', '/?sandbox_type=docker')).status).toBe(422);
    expect((await call('POST', '/', { config: { language: 'rust' } })).status).toBe(422);
    expect((await call('POST', '/', { config: { language: 'python', timeout: 86_401 } })).status).toBe(422);
    const local = await ok<SandboxConfig>('POST', '/local/default');
    expect((await call('PATCH', `/${local.id}`, { config: { use_venv: 'yes' } })).status).toBe(422);
    expect((await call('POST', `/${local.id}/environment-variable`, { value: 'v' })).status).toBe(422);

    const badId = await call<{ detail: { loc: string[] }[] }>('PATCH', '/not-an-id', { config: {} });
    expect(badId.status).toBe(422);
    expect(badId.body.detail[0].loc).toEqual(['path', 'sandboxConfigId']);
    expect((await call('DELETE', `/${UNKNOWN_ENV_VAR}`)).status).toBe(422);
    expect((await call('PATCH', `/environment-variable/${UNKNOWN_CONFIG}`, {})).status).toBe(422);

    expect((await call('PATCH', `/${UNKNOWN_CONFIG}`, { config: {} })).status).toBe(404);
    expect((await call('DELETE', `/${UNKNOWN_CONFIG}`)).status).toBe(404);
    expect((await call('GET', `/${UNKNOWN_CONFIG}/environment-variable`)).status).toBe(404);
    expect(
      (await call('POST', `/${UNKNOWN_CONFIG}/environment-variable`, { key: 'K', value: 'v' })).status,
    ).toBe(404);
    expect((await call('PATCH', `/environment-variable/${UNKNOWN_ENV_VAR}`, { value: 'v' })).status).toBe(
      404,
    );
    expect((await call('DELETE', `/environment-variable/${UNKNOWN_ENV_VAR}`)).status).toBe(404);
  });

  it('sets, lists, changes and deletes env vars, whose values the database holds encrypted and the API masks', async () => {
    const local = await ok<SandboxConfig>('POST', '/local/default');
    const path = `/${local.id}/environment-variable`;
    const storedValue = async (id: string) => {
      const [row] = await server.db.query<{ value: string }>(
        'SELECT value FROM sandbox_env_vars WHERE id = $1',
        [id],
      );
      expect(row.value).toMatch(/^v1:/);
      return decryptSecret(row.value, key);
    };
    const token = await ok<EnvVar>('POST', path, {
      key: 'API_TOKEN',
      value: 'tok-1-abcdefgh',
      description: 'token',
    });
    expect(token).toEqual({
      id: expect.stringMatching(new RegExp(`^sandbox-env-${UUID}$`)),
      key: 'API_TOKEN',
      value: '****efgh',
      description: 'token',
      sandbox_config_id: local.id,
      organization_id: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const region = await ok<EnvVar>('POST', path, { key: 'REGION', value: 'eu' });
    expect(region.value).toBe('****');

    // Setting a key the config has replaces its value, keeping the variable (Letta's create-or-update).
    const again = await ok<EnvVar>('POST', path, { key: 'API_TOKEN', value: 'tok-2-abcdefgh' });
    expect(again).toMatchObject({ id: token.id, value: '****efgh', description: 'token' });
    expect(await storedValue(token.id)).toBe('tok-2-abcdefgh');
    expect((await ok<EnvVar[]>('GET', path)).map((v) => [v.key, v.value])).toEqual([
      ['API_TOKEN', '****efgh'],
      ['REGION', '****'],
    ]);
    expect((await ok<EnvVar[]>('GET', `${path}?limit=1&after=${token.id}`)).map((v) => v.id)).toEqual([
      region.id,
    ]);
    expect(await storedValues('sandbox_env_vars')).not.toContain('tok-2-abcdefgh');

    // What a client read, sent back, keeps the secret instead of storing its mask.
    await ok('POST', path, { key: 'API_TOKEN', value: '****efgh' });
    await ok('PATCH', `/environment-variable/${token.id}`, { value: '****efgh' });
    expect(await storedValue(token.id)).toBe('tok-2-abcdefgh');

    const patched = await ok<EnvVar>('PATCH', `/environment-variable/${region.id}`, {
      value: 'us',
      description: 'where',
    });
    expect(patched).toMatchObject({ key: 'REGION', value: '****', description: 'where' });
    await ok<EnvVar>('PATCH', `/environment-variable/${region.id}`, { key: 'ZONE' });
    expect(await storedValue(region.id)).toBe('us');
    expect(await storedValues('sandbox_env_vars')).not.toContain('us');

    const duplicate = await call<{ detail: string }>('PATCH', `/environment-variable/${region.id}`, {
      key: 'API_TOKEN',
    });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body.detail).toMatch(/already has an environment variable API_TOKEN/);

    expect((await call('DELETE', `/environment-variable/${region.id}`)).status).toBe(204);
    expect((await call('DELETE', `/environment-variable/${region.id}`)).status).toBe(404);
    expect((await ok<EnvVar[]>('GET', path)).map((v) => v.key)).toEqual(['API_TOKEN']);
  });

  it('hands the tool executor the config of a type with its decrypted variables', async () => {
    const e2b = await ok<SandboxConfig>('POST', '/e2b/default');
    await ok('POST', `/${e2b.id}/environment-variable`, { key: 'E2B_ONLY', value: 'x' });
    const environment = await sandboxEnvironment(server.db, 'e2b');
    expect(environment.config).toMatchObject({ id: e2b.id, type: 'e2b', config: e2b.config });
    expect(environment.env).toEqual({ E2B_ONLY: 'x' });

    expect((await call('DELETE', `/${e2b.id}`)).status).toBe(204);
    expect(await sandboxEnvironment(server.db, 'e2b')).toEqual({ config: null, env: {} });
    const orphans = await server.db.query('SELECT 1 FROM sandbox_env_vars WHERE sandbox_config_id = $1', [
      e2b.id,
    ]);
    expect(orphans).toEqual([]);
    expect((await call('GET', `/${e2b.id}/environment-variable`)).status).toBe(404);
  });

  const storedSecrets = async (agentId: string) =>
    Object.fromEntries((await getAgent(server.db, agentId))!.secrets.map((s) => [s.key, s.value]));

  it('stores agent secrets encrypted, and the agents API shows them masked', async () => {
    const client = new Letta({ baseURL: server.url, apiKey: 'unused', maxRetries: 0 });
    const agent = await client.agents.create({
      model: 'openai/gpt-4o-mini',
      secrets: { GITHUB_TOKEN: 'ghp-1' },
    });
    const stored = await server.db.query<{ value: string }>(
      'SELECT value FROM agent_secrets WHERE agent_id = $1',
      [agent.id],
    );
    expect(stored.map((r) => r.value)).toEqual([expect.stringMatching(/^v1:/)]);
    expect(stored[0].value).not.toContain('ghp-1');

    const read = await client.agents.retrieve(agent.id, { include: ['agent.secrets'] });
    expect(read.secrets?.map((s) => [s.key, s.value])).toEqual([['GITHUB_TOKEN', '****']]);
    expect((await storedSecrets(agent.id)).GITHUB_TOKEN).toBe('ghp-1');

    // A value written before encryption came in is read as the plaintext it is.
    await server.db.query(`UPDATE agent_secrets SET value = 'legacy' WHERE agent_id = $1`, [agent.id]);
    expect((await storedSecrets(agent.id)).GITHUB_TOKEN).toBe('legacy');
  });

  it('refuses to decrypt with another key, naming SECRETS_KEY', async () => {
    const local = await ok<SandboxConfig>('POST', '/local/default');
    await ok('POST', `/${local.id}/environment-variable`, { key: 'WRONG_KEY_PROBE', value: 'v' });
    const [stored] = await storedValues('sandbox_env_vars');
    const otherKey = crypto.randomBytes(32);
    expect(() => decryptSecret(stored, otherKey)).toThrow(SecretsKeyError);
    expect(() => decryptSecret(stored, otherKey)).toThrow(/SECRETS_KEY/);

    useSecretsKey(otherKey);
    try {
      const res = await call<{ detail: string }>('GET', `/${local.id}/environment-variable`);
      expect(res.status).toBe(500);
      expect(res.body.detail).toMatch(/cannot be decrypted: SECRETS_KEY/);
    } finally {
      useSecretsKey(key);
    }
    expect((await call('GET', `/${local.id}/environment-variable`)).status).toBe(200);
  });

  it('has no default route for Modal, as Letta has none', async () => {
    expect((await call('POST', '/modal/default')).status).toBe(404);
  });

  if (modalSupported) {
    it('creates, reads, lists, updates and deletes a Modal config in Letta’s shape', async () => {
      const created = await ok<SandboxConfig>('POST', '/', {
        config: {
          timeout: 120,
          pip_requirements: ['numpy'],
          npm_requirements: ['lodash@4'],
          language: 'typescript',
        },
      });
      expect(created).toEqual({
        id: expect.stringMatching(new RegExp(`^sandbox-${UUID}$`)),
        type: 'modal',
        organization_id: null,
        config: {
          timeout: 120,
          pip_requirements: ['numpy'],
          npm_requirements: ['lodash@4'],
          language: 'typescript',
        },
        created_at: expect.any(String),
        updated_at: expect.any(String),
      });
      expect(await ok<SandboxConfig[]>('GET', '/?sandbox_type=modal')).toEqual([created]);
      expect((await sandboxEnvironment(server.db, 'modal')).config).toMatchObject({
        id: created.id,
        type: 'modal',
        config: created.config,
      });

      // Creating one again replaces its fields, keeping the config (Letta's create-or-update).
      const replaced = await ok<SandboxConfig>('POST', '/', { config: { npm_requirements: ['zod'] } });
      expect(replaced).toMatchObject({
        id: created.id,
        type: 'modal',
        config: { ...MODAL_DEFAULTS, npm_requirements: ['zod'] },
      });
      expect(replaced.config).not.toHaveProperty('pip_requirements');

      // A patch changes the fields it gives; `timeout` alone is the Modal config's, not E2B's.
      const patched = await ok<SandboxConfig>('PATCH', `/${created.id}`, { config: { timeout: 90 } });
      expect(patched).toMatchObject({ id: created.id, type: 'modal' });
      expect(patched.config).toEqual({ timeout: 90, language: 'python', npm_requirements: ['zod'] });
      const mismatch = await call<{ detail: string }>('PATCH', `/${created.id}`, {
        config: { template: 'tpl' },
      });
      expect(mismatch.status).toBe(400);
      expect(mismatch.body.detail).toMatch(/type modal with config of type e2b/);

      expect((await call('DELETE', `/${created.id}`)).status).toBe(204);
      expect(await ok<SandboxConfig[]>('GET', '/?sandbox_type=modal')).toEqual([]);
    });

    it('fills in Letta’s defaults for a Modal config given by its language alone', async () => {
      const created = await ok<SandboxConfig>('POST', '/', { config: { language: 'typescript' } });
      expect(created).toMatchObject({ type: 'modal', config: { timeout: 60, language: 'typescript' } });
      expect(Object.keys(created.config).sort()).toEqual(['language', 'timeout']);
      expect((await call('DELETE', `/${created.id}`)).status).toBe(204);
    });
  } else {
    it('refuses to create a Modal config on this Node, naming the version needed and the one running', async () => {
      for (const config of [
        { language: 'typescript' },
        { npm_requirements: ['lodash'] },
        { timeout: 120, pip_requirements: ['numpy'], npm_requirements: ['zod'], language: 'python' },
      ]) {
        const refused = await call<{ detail: string }>('POST', '/', { config });
        expect([config, refused.status, refused.body]).toEqual([config, 400, { detail: MODAL_REFUSAL }]);
      }
      expect(await ok<SandboxConfig[]>('GET', '/?sandbox_type=modal')).toEqual([]);
      // Local and E2B configs are not affected.
      expect((await ok<SandboxConfig>('POST', '/', { config: { timeout: 30 } })).type).toBe('e2b');
    });
  }

  it(
    modalSupported
      ? 'reads, updates and deletes a stored Modal config'
      : 'reads and deletes a stored Modal config on this Node, but refuses to change it',
    async () => {
      const stored = await upsertSandboxConfig(
        server.db,
        sandboxConfigOf('modal', { timeout: 45, npm_requirements: ['zod'] }),
      );
      const shown = { ...MODAL_DEFAULTS, timeout: 45, npm_requirements: ['zod'] };
      const [listed] = await ok<SandboxConfig[]>('GET', '/?sandbox_type=modal');
      expect(listed).toMatchObject({ id: stored.id, type: 'modal', organization_id: null, config: shown });
      expect((await ok<SandboxConfig[]>('GET', '/')).map((c) => c.id)).toContain(stored.id);
      const envVar = await ok<EnvVar>('POST', `/${stored.id}/environment-variable`, {
        key: 'MODAL_TOKEN',
        value: 'v',
      });
      expect(envVar.sandbox_config_id).toBe(stored.id);

      const patch = await call<SandboxConfig | { detail: string }>('PATCH', `/${stored.id}`, {
        config: { timeout: 90 },
      });
      if (modalSupported) {
        expect(patch.status).toBe(200);
        expect((patch.body as SandboxConfig).config).toEqual({ ...shown, timeout: 90 });
      } else {
        expect([patch.status, patch.body]).toEqual([400, { detail: MODAL_REFUSAL }]);
        expect((await call('PATCH', `/${stored.id}`, {})).status).toBe(400);
        const [unchanged] = await ok<SandboxConfig[]>('GET', '/?sandbox_type=modal');
        expect(unchanged.config).toEqual(shown);
      }

      expect((await call('DELETE', `/${stored.id}`)).status).toBe(204);
      expect(await ok<SandboxConfig[]>('GET', '/?sandbox_type=modal')).toEqual([]);
    },
  );
});
