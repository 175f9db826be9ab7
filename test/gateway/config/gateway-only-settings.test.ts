// Core names the gateway's own settings (to tell an application whose they are) without importing the gateway:
// its list must be exactly the gateway's MCP_AUTH_* settings that loadOptionsFromEnv does not read.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GATEWAY_ONLY_SETTINGS } from '../../../src/core/kernel/gateway-only-settings.js';
import { GUARD_ENV_VARIABLES } from '../../../src/core/guard/load-options-from-env.js';
import { findUnknownSettings } from '../../../src/core/kernel/unknown-settings.js';
import { GATEWAY_SETTINGS } from '../../../src/gateway/config/gateway-config.js';

describe('GATEWAY_ONLY_SETTINGS', () => {
  it("is the gateway settings tables' MCP_AUTH_* variables that the guard's own loader does not read", () => {
    const guard = new Set<string>(GUARD_ENV_VARIABLES);
    const gatewayOnly = GATEWAY_SETTINGS.map((setting) => setting.env).filter((name) => name.startsWith('MCP_AUTH_') && !guard.has(name));
    assert.deepEqual([...GATEWAY_ONLY_SETTINGS].sort(), [...gatewayOnly].sort(), 'add a new gateway setting to src/core/kernel/gateway-only-settings.ts too');
  });

  it('a gateway setting found by a program that does not read it is named as such; a typo of one is still no setting', () => {
    assert.deepEqual(findUnknownSettings({ MCP_AUTH_METRICS_PORT: '9464', MCP_AUTH_METRICS_PROT: '1' }, GUARD_ENV_VARIABLES), [
      { name: 'MCP_AUTH_METRICS_PORT', gatewaySetting: true },
      { name: 'MCP_AUTH_METRICS_PROT' },
    ]);
    // The gateway reads them all: none is unknown there.
    assert.deepEqual(findUnknownSettings({ MCP_AUTH_METRICS_PORT: '9464' }, GATEWAY_SETTINGS.map((setting) => setting.env)), []);
  });
});
