// For the tests of the deployment examples (docs/deploy/, the Dockerfile): a gateway started on loopback from a
// deployment's settings, so that the paths its probes and health check name are asked of the real server.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GATEWAY_SETTINGS, loadGatewayConfig, type GatewayConfig } from '../../src/gateway/config/gateway-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway/server/start-gateway.js';
import { freePort } from './free-port.js';

/** Every variable the gateway reads: the names its settings table documents. */
export const SETTING_VARIABLES: ReadonlySet<string> = new Set(GATEWAY_SETTINGS.map((setting) => setting.env));

/** A session secret the gateway accepts (32 random bytes, base64url), in place of a deployment's placeholder. */
export function randomSessionSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** Runs `use` with the path of a temporary file holding `contents`, removed afterwards. */
async function withFile<T>(contents: string, use: (file: string) => T | Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'deployment-policy-'));
  try {
    const file = join(dir, 'policy.json');
    writeFileSync(file, contents);
    return await use(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Loads a deployment's settings as the gateway reads them, the policy file's contents written to a temporary file
 * first (in place of the path `MCP_AUTH_POLICY` names there): rejects with the gateway's own configuration error
 * when they are wrong.
 */
export function loadDeploymentConfig(settings: Readonly<Record<string, string>>, policy: string): Promise<GatewayConfig> {
  return withFile(policy, (file) => loadGatewayConfig({ ...settings, MCP_AUTH_POLICY: file }));
}

/**
 * Runs `use` with a gateway started from a deployment's settings and policy, moved to loopback: its port and its
 * metrics listener's on free local ports, its issuer an address that refuses connections (no request leaves the
 * machine). Stopped afterwards.
 */
export async function withDeploymentGateway<T>(settings: Readonly<Record<string, string>>, policy: string, use: (gateway: RunningGateway) => Promise<T>): Promise<T> {
  const local = { ...settings, HOST: '127.0.0.1', PORT: '0', MCP_AUTH_ISSUER: `http://127.0.0.1:${await freePort()}` };
  if (settings.MCP_AUTH_METRICS_PORT !== undefined) Object.assign(local, { MCP_AUTH_METRICS_PORT: '0', MCP_AUTH_METRICS_HOST: '127.0.0.1' });
  return withFile(policy, async (file) => {
    const gateway = await startGateway(loadGatewayConfig({ ...local, MCP_AUTH_POLICY: file }), { log: () => {}, warn: () => {} });
    try {
      return await use(gateway);
    } finally {
      await gateway.shutdown();
    }
  });
}

/** GET of a path: the status and the JSON (or text) answered. */
export async function get(base: string, path: string): Promise<{ status: number; body: unknown }> {
  const answer = await fetch(new URL(path, base), { signal: AbortSignal.timeout(10_000) });
  const text = await answer.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: the text
  }
  return { status: answer.status, body };
}
