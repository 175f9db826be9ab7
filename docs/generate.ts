/**
 * `npm run docs`, first step: writes `docs/configuration.md` and the configuration file's JSON Schema
 * (`schema/gateway-config.schema.json`) from the settings table the gateway reads. Whoever adds or changes a setting
 * runs it and commits both; a test fails while either differs from this output.
 * The second step, TypeDoc (`typedoc.json`), builds the API reference into `docs/api/`, which is not committed.
 */
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { ENV_OPTION_VARIABLES } from '../src/core/guard/load-options-from-env.js';
import { GATEWAY_SETTINGS } from '../src/gateway/config/gateway-config.js';
import { renderConfigurationReference } from '../src/gateway/config/settings-reference.js';
import { GATEWAY_CONFIG_SCHEMA_FILE, gatewayConfigSchemaText } from '../src/gateway/config/config-file-schema.js';
import { EXAMPLE_DEFAULT_HOST, EXAMPLE_DEFAULT_PORT } from '../examples/serve-guarded.js';

/** Where the configuration page is written. */
export const CONFIGURATION_PAGE = new URL('./configuration.md', import.meta.url);

/** The configuration page as `npm run docs` writes it. */
export function configurationPage(): string {
  return renderConfigurationReference({
    settings: GATEWAY_SETTINGS,
    guardOptions: ENV_OPTION_VARIABLES,
    exampleServer: { host: EXAMPLE_DEFAULT_HOST, port: EXAMPLE_DEFAULT_PORT },
    // Built by TypeDoc, the second step of `npm run docs`; git-ignored.
    apiReference: 'docs/api/index.html',
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  writeFileSync(CONFIGURATION_PAGE, configurationPage());
  writeFileSync(new URL(`../${GATEWAY_CONFIG_SCHEMA_FILE}`, import.meta.url), gatewayConfigSchemaText(GATEWAY_SETTINGS));
  process.stdout.write(`wrote docs/configuration.md and ${GATEWAY_CONFIG_SCHEMA_FILE}\n`);
}
