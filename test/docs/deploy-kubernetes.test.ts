// The Kubernetes example (docs/deploy/kubernetes/) against the gateway it runs: its variables are settings of the
// gateway's table and make a configuration the gateway accepts, its ports are the ones those settings open, its
// probes ask paths the gateway serves and wait long enough for them, and its Secret, ConfigMap and Service are
// the ones the Deployment names.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { join, posix } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { DEFAULT_SHUTDOWN_TIMEOUT_MS } from '../../src/gateway/config/gateway-config.js';
import { get, loadDeploymentConfig, randomSessionSecret, SETTING_VARIABLES, withDeploymentGateway } from '../helpers/deployment-gateway.js';
import { REPOSITORY_ROOT } from '../helpers/run-cli.js';

const FOLDER = join(REPOSITORY_ROOT, 'docs', 'deploy', 'kubernetes');

/** The parts of the manifests the test reads (Kubernetes' own field names). */
interface Manifest {
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: any;
}
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string }; configMapKeyRef?: { name: string; key: string } };
}

function loadManifests(): Manifest[] {
  const manifests: Manifest[] = [];
  for (const file of readdirSync(FOLDER).filter((name) => name.endsWith('.yaml')).sort()) {
    for (const document of parseAllDocuments(readFileSync(join(FOLDER, file), 'utf8'))) {
      assert.deepEqual(document.errors, [], `${file} is valid YAML`);
      manifests.push(document.toJS() as Manifest);
    }
  }
  return manifests;
}

describe('the Kubernetes example, docs/deploy/kubernetes/', () => {
  const manifests = loadManifests();
  const one = (kind: string): Manifest => {
    const found = manifests.filter((manifest) => manifest.kind === kind);
    assert.equal(found.length, 1, `one ${kind}`);
    return found[0]!;
  };
  const deployment = one('Deployment');
  const pod = deployment.spec.template.spec;
  const gateway = pod.containers.find((container: { name: string }) => container.name === 'gateway');
  const env: EnvVar[] = gateway.env;
  const secret = one('Secret');
  const policyMap = one('ConfigMap');

  /** The value of a variable of the gateway's container, with what `valueFrom` names read from the manifests. */
  const valueOf = (variable: EnvVar): string => {
    if (variable.value !== undefined) return String(variable.value);
    const fromSecret = variable.valueFrom?.secretKeyRef;
    if (fromSecret) {
      assert.equal(fromSecret.name, secret.metadata.name, `${variable.name} comes from the example's Secret`);
      const value = secret.stringData?.[fromSecret.key];
      assert.equal(typeof value, 'string', `the Secret has ${fromSecret.key}`);
      return value;
    }
    assert.fail(`${variable.name} has a value or a secretKeyRef`);
  };
  const settings = (): Record<string, string> => Object.fromEntries(env.map((variable) => [variable.name, valueOf(variable)]));
  const containerPort = (name: string): number => gateway.ports.find((port: { name: string }) => port.name === name)?.containerPort;
  /** The policy file's contents: the ConfigMap key mounted where MCP_AUTH_POLICY points. */
  const policy = (): string => {
    const file = settings().MCP_AUTH_POLICY!;
    const mount = gateway.volumeMounts.find((volumeMount: { mountPath: string }) => posix.dirname(file) === volumeMount.mountPath);
    assert.ok(mount, `a volume is mounted at ${posix.dirname(file)}, the folder of MCP_AUTH_POLICY`);
    const volume = pod.volumes.find((candidate: { name: string }) => candidate.name === mount.name);
    assert.equal(volume?.configMap?.name, policyMap.metadata.name, 'the policy comes from the ConfigMap');
    const contents = policyMap.data[posix.basename(file)];
    assert.equal(typeof contents, 'string', `the ConfigMap has ${posix.basename(file)}`);
    return contents;
  };
  /** The settings with the Secret's placeholder replaced by a real secret, as its instructions say. */
  const deployedSettings = (): Record<string, string> => ({ ...settings(), MCP_AUTH_SESSION_SECRET: randomSessionSecret() });

  test('it holds a Deployment, a Service, a ConfigMap for the policy and a Secret', () => {
    assert.deepEqual(manifests.map((manifest) => manifest.kind).sort(), ['ConfigMap', 'Deployment', 'Secret', 'Service']);
  });

  test("every variable of the gateway's container is a setting of the gateway's table, set once", () => {
    const names = env.map((variable) => variable.name);
    assert.deepEqual(names.filter((name) => !SETTING_VARIABLES.has(name)), []);
    assert.equal(new Set(names).size, names.length);
  });

  test('the secrets come from the Secret, whose values are placeholders the gateway refuses', async () => {
    const fromSecret = env.filter((variable) => variable.valueFrom?.secretKeyRef).map((variable) => variable.name);
    assert.ok(fromSecret.includes('MCP_AUTH_SESSION_SECRET'), 'the session secret');
    assert.ok(env.every((variable) => !/SECRET|TOKEN/.test(variable.name) || variable.valueFrom), 'no secret written in the Deployment');
    assert.deepEqual(Object.keys(secret.stringData).sort(), [...fromSecret].sort(), 'the Secret holds what the Deployment reads, nothing else');
    // Applied as it is, the gateway does not start: nobody runs with the example's secret.
    await assert.rejects(loadDeploymentConfig(settings(), policy()), (error: { setting?: string }) => error.setting === 'MCP_AUTH_SESSION_SECRET');
  });

  test('its settings, with a real secret, are a configuration the gateway accepts: every replica serves every session', async () => {
    const config = await loadDeploymentConfig(deployedSettings(), policy());
    assert.equal(config.host, '0.0.0.0', 'reachable from outside the pod');
    assert.equal(config.guard.resource, 'https://mcp.example.com/mcp');
    assert.ok(config.sessionSeal, 'sealed sessions, for more than one replica');
    assert.ok(deployment.spec.replicas > 1);
  });

  test('the ports are the ones the settings open, and the Service exposes the gateway, not its metrics', () => {
    const values = settings();
    assert.equal(containerPort('http'), Number(values.PORT));
    assert.equal(containerPort('metrics'), Number(values.MCP_AUTH_METRICS_PORT));
    assert.notEqual(values.MCP_AUTH_METRICS_HOST, '127.0.0.1', 'the metrics listener is reachable by the scraper');
    const annotations = deployment.spec.template.metadata.annotations;
    assert.equal(Number(annotations['prometheus.io/port']), containerPort('metrics'));
    const service = one('Service');
    assert.deepEqual(service.spec.ports.map((port: { targetPort: string }) => port.targetPort), ['http']);
    assert.deepEqual(service.spec.selector, deployment.spec.template.metadata.labels);
    assert.deepEqual(deployment.spec.selector.matchLabels, deployment.spec.template.metadata.labels);
  });

  test('the pod stops gracefully: its grace period covers the preStop pause and the shutdown timeout', () => {
    const [command, seconds] = gateway.lifecycle.preStop.exec.command as [string, string];
    assert.equal(command, 'sleep');
    const shutdownMs = Number(settings().MCP_AUTH_SHUTDOWN_TIMEOUT_MS ?? DEFAULT_SHUTDOWN_TIMEOUT_MS);
    assert.ok(pod.terminationGracePeriodSeconds * 1000 > Number(seconds) * 1000 + shutdownMs, `${pod.terminationGracePeriodSeconds} s > ${seconds} s + ${shutdownMs} ms`);
  });

  test('the pod runs as a user that is not root, with no privileges', () => {
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.notEqual(pod.securityContext.runAsUser, 0);
    assert.equal(gateway.securityContext.allowPrivilegeEscalation, false);
    assert.deepEqual(gateway.securityContext.capabilities.drop, ['ALL']);
  });

  describe('the probes and the scrape, asked of a gateway started with these settings', () => {
    let silentUpstream: ReturnType<typeof createServer>;
    const sockets: Socket[] = [];
    before(async () => {
      // An upstream that accepts connections and never answers: the slowest /readyz there is.
      silentUpstream = createServer((socket) => sockets.push(socket)).listen(0, '127.0.0.1');
      await once(silentUpstream, 'listening');
    });
    after(() => {
      for (const socket of sockets) socket.destroy();
      silentUpstream.close();
    });

    test('liveness asks /healthz, readiness /readyz, the scrape the metrics path; each is served, within the probe timeout', { timeout: 60_000 }, async () => {
      assert.equal(gateway.livenessProbe.httpGet.path, '/healthz');
      assert.equal(gateway.readinessProbe.httpGet.path, '/readyz');
      assert.equal(gateway.livenessProbe.httpGet.port, 'http');
      assert.equal(gateway.readinessProbe.httpGet.port, 'http');
      const { port } = silentUpstream.address() as { port: number };
      const scrapePath = deployment.spec.template.metadata.annotations['prometheus.io/path'];
      await withDeploymentGateway({ ...deployedSettings(), MCP_AUTH_UPSTREAM: `http://127.0.0.1:${port}/mcp` }, policy(), async (running) => {
        assert.deepEqual(await get(running.url, gateway.livenessProbe.httpGet.path), { status: 200, body: { status: 'ok' } });
        const started = Date.now();
        const readiness = await get(running.url, gateway.readinessProbe.httpGet.path);
        const tookMs = Date.now() - started;
        // Not ready (no issuer, a silent upstream), and said so before the kubelet gives up on the probe.
        assert.equal(readiness.status, 503);
        assert.equal((readiness.body as { status: string }).status, 'not_ready');
        assert.ok(tookMs < gateway.readinessProbe.timeoutSeconds * 1000, `/readyz answered in ${tookMs} ms, within timeoutSeconds`);
        const metrics = await get(new URL(running.metricsUrl!).origin, scrapePath);
        assert.equal(metrics.status, 200);
        assert.match(String(metrics.body), /^# HELP /m);
      });
    });
  });
});
