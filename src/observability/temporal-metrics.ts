/**
 * The Temporal SDK's own metrics (its workers' and client's: task latencies, slots, polls, sticky
 * cache, requests): its runtime serves them in the Prometheus format on a loopback port picked at
 * start-up, and `/metrics` appends them to the server's (metrics-server.ts).
 */
import net from 'node:net';
import type { TelemetryOptions } from '@temporalio/worker';

/** A free loopback port, for the runtime's exporter: it takes an address, and cannot say which it bound. */
function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** The runtime's telemetry: Prometheus conventions (counters end in `_total`, durations in seconds). */
function temporalMetricsTelemetry(port: number): TelemetryOptions {
  return {
    metrics: {
      prometheus: {
        bindAddress: `127.0.0.1:${port}`,
        countersTotalSuffix: true,
        unitSuffix: true,
        useSecondsForDurations: true,
      },
    },
  };
}

/**
 * The runtime's exporter when this process serves `/metrics` (METRICS_PORT set): the telemetry to
 * install the runtime with, and where `/metrics` reads what it exports.
 */
export async function temporalMetricsExporter(
  metricsPort: number | undefined,
): Promise<{ telemetry: TelemetryOptions; url: string } | undefined> {
  if (metricsPort === undefined) return undefined;
  const port = await freeLoopbackPort();
  return { telemetry: temporalMetricsTelemetry(port), url: `http://127.0.0.1:${port}/metrics` };
}
