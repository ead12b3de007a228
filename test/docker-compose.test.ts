import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { ConfigSchema } from '../src/config';
import { projectRoot } from '../src/paths';
import { DEV_SERVER_DYNAMIC_CONFIG } from '../src/temporal/dev-server';
import { metricsRegistry } from '../src/observability/metrics';
// Registers the gauges read from the database, which /metrics serves too.
import '../src/observability/metrics-server';
import { dashboardMetrics, dashboardPanels } from './helpers/dashboard';

// There is no Docker engine here: these checks read the compose file and assert that its parts wire together.
type Service = {
  image?: string;
  profiles?: string[];
  expose?: string[];
  build?: string | { context: string };
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
};
const compose = parse(fs.readFileSync(path.join(projectRoot, 'docker-compose.yml'), 'utf8'), {
  merge: true,
}) as {
  services: Record<string, Service>;
};
const { services } = compose;
const env = (name: string) => services[name].environment ?? {};

describe('docker-compose.yml', () => {
  it('has PostgreSQL, Temporal with its schema and init jobs, the Web UI, and this server', () => {
    const always = Object.keys(services).filter((name) => !services[name].profiles);
    expect(always.sort()).toEqual(
      ['letta-temporal', 'postgresql', 'temporal', 'temporal-init', 'temporal-schema', 'temporal-ui'].sort(),
    );
    // Archival memory's embeddings are pgvector's where the database has the extension.
    expect(services.postgresql.image).toMatch(/^pgvector\/pgvector:pg\d+$/);
    expect(services['temporal-schema'].image).toMatch(/^temporalio\/admin-tools:/);
    expect(services.temporal.image).toMatch(/^temporalio\/server:/);
    expect(services['temporal-ui'].image).toMatch(/^temporalio\/ui:/);
  });

  it('points Temporal at the compose PostgreSQL with its credentials', () => {
    const pg = env('postgresql');
    const temporal = env('temporal');
    expect(temporal.DB).toBe('postgres12');
    expect(temporal.POSTGRES_SEEDS).toBe('postgresql');
    expect(temporal.POSTGRES_USER).toBe(pg.POSTGRES_USER);
    expect(temporal.POSTGRES_PWD).toBe(pg.POSTGRES_PASSWORD);
    expect(env('temporal-schema').SQL_PASSWORD).toBe(pg.POSTGRES_PASSWORD);
    const schemaScript = JSON.stringify(services['temporal-schema']);
    expect(schemaScript).toContain(`--ep postgresql -u ${pg.POSTGRES_USER}`);
  });

  it('mounts a dynamic config that exists and enables what the agent turn needs', () => {
    const mount = services.temporal.volumes!.find((v) => v.includes('dynamicconfig'))!;
    const [hostDir, containerDir] = mount.split(':');
    const file = path.basename(env('temporal').DYNAMIC_CONFIG_FILE_PATH);
    expect(containerDir).toBe(`/etc/temporal/${path.dirname(env('temporal').DYNAMIC_CONFIG_FILE_PATH)}`);
    const dynamic = parse(fs.readFileSync(path.join(projectRoot, hostDir, file), 'utf8'));
    // What the embedded dev server gets, but the check of the SDK's version against the server's and
    // the search attribute cache, which only the CLI's dev server turns off by default, and the
    // deployment limit, which only a server shared by many test processes (each its own deployment)
    // reaches.
    const embedded = DEV_SERVER_DYNAMIC_CONFIG.filter(
      (entry) => !/ServerVersionCheck|forceSearchAttributesCacheRefreshOnRead|maxDeployments/.test(entry),
    );
    expect(embedded.map((entry) => entry.split('='))).toEqual(
      embedded.map((entry) => {
        const key = entry.split('=')[0];
        return [key, String(dynamic[key]?.[0]?.value)];
      }),
    );
  });

  it('wires the Web UI to the Temporal service and publishes both, unauthenticated, on loopback only', () => {
    expect(env('temporal-ui').TEMPORAL_ADDRESS).toBe(
      `temporal:${services.temporal.ports![0].split(':').at(-1)}`,
    );
    expect(services['temporal-ui'].ports).toEqual(['127.0.0.1:8080:8080']);
    expect(services.temporal.ports).toEqual(['127.0.0.1:7233:7233']);
    expect(env('temporal-init').TEMPORAL_ADDRESS).toBe(env('temporal-ui').TEMPORAL_ADDRESS);
  });

  it('wires this server to the compose PostgreSQL and Temporal, and starts it after both are ready', () => {
    const server = env('letta-temporal');
    const pg = env('postgresql');
    const url = new URL(server.DATABASE_URL);
    expect(url.hostname).toBe('postgresql');
    expect(decodeURIComponent(url.username)).toBe(pg.POSTGRES_USER);
    expect(decodeURIComponent(url.password)).toBe(pg.POSTGRES_PASSWORD);
    expect(url.pathname).toBe(`/${pg.POSTGRES_DB}`);
    expect(server.TEMPORAL_ADDRESS).toBe(env('temporal-ui').TEMPORAL_ADDRESS);
    expect(server.HOST).toBe('0.0.0.0');
    expect(services['letta-temporal'].ports).toContain(`${server.PORT}:${server.PORT}`);
    // Published beyond loopback, the API asks for a password: the user's, or one made at start-up.
    expect(server.LETTA_SERVER_PASSWORD).toBe('${LETTA_SERVER_PASSWORD:-}');
    expect(services['letta-temporal'].depends_on).toEqual({
      postgresql: { condition: 'service_healthy' },
      'temporal-init': { condition: 'service_completed_successfully' },
    });
    expect(services.temporal.depends_on!['temporal-schema'].condition).toBe('service_completed_successfully');
  });

  it('passes only settings the server knows, each of them valid', () => {
    const server = env('letta-temporal');
    const known = Object.keys(ConfigSchema.shape);
    // OTEL_* are the OpenTelemetry SDK's own variables, read from the environment by it.
    const unknown = Object.keys(server).filter((name) => !known.includes(name) && !name.startsWith('OTEL_'));
    expect(unknown).toEqual([]);
    const literal = Object.fromEntries(Object.entries(server).filter(([, v]) => !String(v).startsWith('${')));
    expect(ConfigSchema.safeParse(literal).success).toBe(true);
  });

  it('builds this server from a Debian-based Node 22 or 24 image (the Temporal native module has no musl build)', () => {
    expect(services['letta-temporal'].build).toBe('.');
    const dockerfile = fs.readFileSync(path.join(projectRoot, 'Dockerfile'), 'utf8');
    const bases = [...dockerfile.matchAll(/^FROM\s+(\S+)/gm)].map((m) => m[1]);
    expect(bases.length).toBeGreaterThan(0);
    for (const base of bases) expect(base).toMatch(/^node:(22|24)-(bookworm|bullseye)/);
    expect(dockerfile).toContain('CMD ["node", "dist/src/main.js"]');
  });
});

describe('the `observability` profile of docker-compose.yml', () => {
  const readDeploy = (file: string) => fs.readFileSync(path.join(projectRoot, 'deploy', file), 'utf8');
  /** The host path of the mount at `target` in `service`. */
  const mountOf = (service: string, target: string) => {
    const mount = services[service].volumes!.find((v) => v.split(':')[1] === target);
    return mount && path.join(projectRoot, mount.split(':')[0]);
  };

  it('starts Prometheus, Grafana and Jaeger beside the server, their UIs on loopback only', () => {
    const profiled = Object.keys(services).filter((name) =>
      services[name].profiles?.includes('observability'),
    );
    expect(profiled.sort()).toEqual(['grafana', 'jaeger', 'prometheus']);
    expect(services.prometheus.image).toMatch(/^prom\/prometheus:v\d/);
    expect(services.grafana.image).toMatch(/^grafana\/grafana:\d/);
    expect(services.jaeger.image).toMatch(/^jaegertracing\/jaeger:2\./);
    expect(services.prometheus.ports).toEqual(['127.0.0.1:9090:9090']);
    expect(services.grafana.ports).toEqual(['127.0.0.1:3000:3000']);
    expect(services.jaeger.ports).toEqual(['127.0.0.1:16686:16686']);
  });

  it("sends the server's traces to Jaeger's OTLP/HTTP port when started with deploy/observability.env", () => {
    const settings = Object.fromEntries(
      readDeploy('observability.env')
        .split('\n')
        .filter((line) => line && !line.startsWith('#'))
        .map((line) => line.split('=') as [string, string]),
    );
    expect(settings.COMPOSE_PROFILES).toBe('observability');
    const endpoint = new URL(settings.OTEL_EXPORTER_OTLP_ENDPOINT);
    expect(endpoint.hostname).toBe('jaeger');
    expect(services.jaeger.expose).toContain(endpoint.port);
    expect(endpoint.port).toBe('4318');
    expect(services.jaeger.expose).toContain('4317');
    expect(env('letta-temporal').OTEL_EXPORTER_OTLP_ENDPOINT).toBe('${OTEL_EXPORTER_OTLP_ENDPOINT:-}');
  });

  it("has Prometheus scrape the server's metrics port, which is not published", () => {
    const server = env('letta-temporal');
    expect(server.METRICS_HOST).toBe('0.0.0.0');
    expect(services['letta-temporal'].ports!.some((p) => p.includes(server.METRICS_PORT))).toBe(false);
    const config = parse(
      fs.readFileSync(mountOf('prometheus', '/etc/prometheus/prometheus.yml')!, 'utf8'),
    ) as {
      scrape_configs: { metrics_path: string; static_configs: { targets: string[] }[] }[];
    };
    const [job] = config.scrape_configs;
    expect(job.metrics_path).toBe('/metrics');
    expect(job.static_configs.flatMap((c) => c.targets)).toEqual([`letta-temporal:${server.METRICS_PORT}`]);
  });

  it('provisions Grafana with Prometheus, Jaeger and the dashboard, whose panels use them', () => {
    const provisioning = mountOf('grafana', '/etc/grafana/provisioning')!;
    const sources = parse(
      fs.readFileSync(path.join(provisioning, 'datasources', 'datasources.yml'), 'utf8'),
    ) as { datasources: { uid: string; url: string }[] };
    expect(Object.fromEntries(sources.datasources.map((s) => [s.uid, s.url]))).toEqual({
      prometheus: 'http://prometheus:9090',
      jaeger: 'http://jaeger:16686',
    });
    const dashboards = parse(
      fs.readFileSync(path.join(provisioning, 'dashboards', 'dashboards.yml'), 'utf8'),
    ) as { providers: { options: { path: string } }[] };
    const dashboardsDir = dashboards.providers[0].options.path;
    expect(fs.existsSync(path.join(mountOf('grafana', dashboardsDir)!, 'letta-temporal.json'))).toBe(true);
    const uids = dashboardPanels()
      .filter((panel) => panel.type !== 'row')
      .flatMap((panel) => [panel.datasource?.uid, ...(panel.targets ?? []).map((t) => t.datasource?.uid)]);
    expect(new Set(uids)).toEqual(new Set(['prometheus']));
  });

  it("queries only metrics the server registers (the Temporal SDK's: test/metrics.test.ts reads them live)", async () => {
    const registered = (await metricsRegistry.getMetricsAsJSON()).map((metric) => metric.name);
    const queried = dashboardMetrics().filter((name) => name.startsWith('letta_'));
    expect(queried.filter((name) => !registered.includes(name))).toEqual([]);
    // Each of the server's own metrics is on the dashboard.
    expect(registered.filter((name) => name.startsWith('letta_') && !queried.includes(name))).toEqual([]);
  });
});
