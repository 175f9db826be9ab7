// The configuration page is the settings table rendered, and the table holds every variable the code reads.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { GUARD_ENV_VARIABLES } from '../../../src/core/guard/load-options-from-env.js';
import { GATEWAY_SETTINGS, gatewayHelp, parseGatewayArgs } from '../../../src/gateway/config/gateway-config.js';
import { METRICS_SETTINGS } from '../../../src/gateway/config/metrics-config.js';
import { SHARED_STORE_SETTINGS } from '../../../src/gateway/config/shared-store-config.js';
import { UPSTREAM_AUTH_SETTINGS } from '../../../src/gateway/upstream-auth/upstream-auth-config.js';
import type { SettingName } from '../../../src/core/kernel/setting-names.js';
import { renderConfigurationReference, SETTING_GROUPS } from '../../../src/gateway/config/settings-reference.js';
import { CONFIGURATION_PAGE, configurationPage } from '../../../docs/generate.js';

const REGENERATE = 'run `npm run docs` and commit docs/configuration.md (whoever adds or changes a setting regenerates the page)';
const documented = new Set<string>(GATEWAY_SETTINGS.map((s) => s.env));

test('docs/configuration.md is what `npm run docs` generates from the settings table', () => {
  const expected = configurationPage();
  let actual: string;
  try {
    actual = readFileSync(CONFIGURATION_PAGE, 'utf8');
  } catch {
    assert.fail(`docs/configuration.md is missing: ${REGENERATE}`);
  }
  if (actual === expected) return;
  const actualLines = actual.split('\n');
  const expectedLines = expected.split('\n');
  const line = expectedLines.findIndex((text, i) => text !== actualLines[i]);
  const at = line === -1 ? actualLines.length : line;
  assert.fail(`docs/configuration.md differs from the settings table at line ${at + 1}:\n  page:      ${actualLines[at] ?? '(end)'}\n  generated: ${expectedLines[at] ?? '(end)'}\n${REGENERATE}`);
});

test('every variable a loader reads is a row of the settings table', () => {
  for (const [loader, names] of [
    ['loadOptionsFromEnv (GUARD_ENV_VARIABLES)', GUARD_ENV_VARIABLES],
    ['loadUpstreamAuth (UPSTREAM_AUTH_SETTINGS)', UPSTREAM_AUTH_SETTINGS],
    ['loadMetricsConfig (METRICS_SETTINGS)', METRICS_SETTINGS.map((s) => s.env)],
    ['loadSharedStoreConfig (SHARED_STORE_SETTINGS)', SHARED_STORE_SETTINGS.map((s) => s.env)],
  ] as const) {
    for (const name of names) assert.ok(documented.has(name), `${name}, read by ${loader}, is not in GATEWAY_SETTINGS: add a row there, then ${REGENERATE}`);
  }
  // A loader that reads a variable by its literal name (readSetting(settings, 'MCP_AUTH_…')) needs a row too.
  // Comments are left out: their examples name variables of an application's own.
  const root = fileURLToPath(new URL('../../..', import.meta.url));
  const literals = new Map<string, string>();
  for (const file of sourceFiles(join(root, 'src'))) {
    const code = readFileSync(file, 'utf8').split('\n').filter((line) => !/^\s*(\*|\/\/|\/\*)/.test(line));
    for (const match of code.join('\n').matchAll(/['"](MCP_AUTH_[A-Z0-9_]*[A-Z0-9])['"]/g)) literals.set(match[1]!, relative(root, file));
  }
  assert.ok(literals.size >= GUARD_ENV_VARIABLES.length, 'the source scan found the settings it should');
  for (const [name, file] of literals) {
    assert.ok(documented.has(name), `${name}, named in ${file}, is not in GATEWAY_SETTINGS: add a row there, then ${REGENERATE}`);
  }
});

test('each setting has one row, and each flag one setting', () => {
  assert.equal(documented.size, GATEWAY_SETTINGS.length, 'a variable has two rows');
  const flags = GATEWAY_SETTINGS.flatMap((s) => (s.flag === undefined ? [] : [s.flag, ...(s.aliases ?? [])]));
  assert.equal(new Set(flags).size, flags.length, 'a flag (or an alias) names two settings');
});

test('the page has one table per group, every setting in its group, with its flag and who reads it', () => {
  // The group tables, without the library's table of options after them.
  const page = configurationPage().split('| Variable | Option |')[0]!;
  for (const group of Object.values(SETTING_GROUPS)) assert.match(page, new RegExp(`^## ${escapeRegExp(group.title)}$`, 'm'));
  for (const setting of GATEWAY_SETTINGS) {
    const rows = page.split('\n').filter((line) => line.startsWith(`| \`${setting.env}\` |`));
    assert.equal(rows.length, 1, `${setting.env} has one row`);
    const [, , flag, , readBy] = rows[0]!.split(/(?<!\\)\|/).map((cell) => cell.trim());
    const aliases = (setting.aliases ?? []).map((alias) => `, or \`${alias}\``).join('');
    assert.equal(flag, setting.flag === undefined ? 'environment only' : `\`${setting.flag} ${setting.value.replaceAll('|', '\\|')}\`${aliases}`);
    assert.equal(readBy, GUARD_ENV_VARIABLES.includes(setting.env) ? 'gateway, library' : 'gateway');
    // The row sits under its group's heading.
    const headings = [...page.slice(0, page.indexOf(rows[0]!)).matchAll(/^## (.+)$/gm)];
    assert.equal(headings.at(-1)?.[1], SETTING_GROUPS[setting.group].title, `${setting.env} is under its group`);
  }
});

test('the page opens with the settings a new set-up needs, from the table\'s essential marks', () => {
  const page = configurationPage();
  const box = page.split('\n').filter((line) => line.startsWith('>'));
  assert.match(box[0]!, /^> \*\*The settings you need\.\*\*/);
  const listed = box.flatMap((line) => /^> - `(\w+)`/.exec(line)?.[1] ?? []);
  assert.deepEqual(listed, GATEWAY_SETTINGS.filter((s) => s.essential !== undefined).map((s) => s.env));
  assert.deepEqual([...listed].sort(), ['MCP_AUTH_ISSUER', 'MCP_AUTH_POLICY', 'MCP_AUTH_RESOURCE', 'MCP_AUTH_UPSTREAM', 'MCP_AUTH_UPSTREAM_COMMAND']);
  assert.ok(box.includes("> - `MCP_AUTH_ISSUER` (`--issuer`): always: your authorization server's issuer"), box.join('\n'));
  assert.ok(page.indexOf(box[0]!) < page.indexOf('\n## '), 'before the first table');
});

test('the upstream idle timeout is listed for both kinds of upstream, and its alias sets it as its flag does', () => {
  const setting = GATEWAY_SETTINGS.find((s) => s.env === 'MCP_AUTH_UPSTREAM_IDLE_TIMEOUT_MS')!;
  assert.equal(SETTING_GROUPS[setting.group].title, 'Either upstream');
  for (const flag of ['--idle-timeout-ms', '--upstream-idle-timeout-ms']) {
    const parsed = parseGatewayArgs([flag, '1234'], {});
    assert.deepEqual(parsed.help === false && parsed.settings['MCP_AUTH_UPSTREAM_IDLE_TIMEOUT_MS'], '1234', flag);
    const inline = parseGatewayArgs([`${flag}=99`], {});
    assert.deepEqual(inline.help === false && inline.settings['MCP_AUTH_UPSTREAM_IDLE_TIMEOUT_MS'], '99', `${flag}=`);
  }
  assert.match(gatewayHelp(), /^ {2}--idle-timeout-ms <ms> {3}\(or --upstream-idle-timeout-ms\)$/m);
});

test('the library table names the option each variable of loadOptionsFromEnv sets', () => {
  const page = configurationPage();
  const table = page.slice(page.indexOf('| Variable | Option |'));
  for (const variable of GUARD_ENV_VARIABLES) assert.match(table, new RegExp(`^\\| \`${variable}\` \\| \``, 'm'), variable);
  assert.ok(table.includes('| `MCP_AUTH_ISSUER` | `issuer`, `issuers` |'));
  assert.ok(table.includes('| `MCP_AUTH_INTROSPECTION_CLIENT_ID` | `introspection.clientId` |'));
  assert.ok(table.includes('| `MCP_AUTH_TOKEN_CACHE_MAX_BYTES` | `tokenCache.maxBytes` |'));
});

test('the page escapes what Markdown would act on, and leaves out empty groups', () => {
  const page = renderConfigurationReference({
    // A name no setting has: the renderer only lays out what it is given.
    settings: [{ env: 'MCP_AUTH_X' as SettingName, group: 'limits', flag: '--x', value: '<a|b>', description: 'Uses *stars* <b>, [links] and MCP_AUTH_Y.', defaultValue: 'RS*, PS*' }],
    guardOptions: { x: 'MCP_AUTH_X', 'x.y': 'MCP_AUTH_X' },
    exampleServer: { host: '127.0.0.1', port: 3000 },
    apiReference: 'docs/api/index.html',
  });
  assert.ok(page.includes('| `MCP_AUTH_X` | `--x <a\\|b>` | RS\\*, PS\\* | gateway, library | Uses \\*stars\\* &lt;b&gt;, \\[links\\] and `MCP_AUTH_Y`. |'), page);
  assert.ok(page.includes('| `MCP_AUTH_X` | `x.y` |'), 'the library table names the nested option, not its parent');
  assert.ok(page.includes('## Limits'));
  assert.ok(!page.includes('## Metrics'), 'a group with no setting has no table');
});

function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (entry.name.endsWith('.ts')) yield path;
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
