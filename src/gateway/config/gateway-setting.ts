/**
 * The shape of a row of the gateway's settings table (`GATEWAY_SETTINGS`): its own file, so that the modules
 * holding rows of their own (metrics, shared store, sealed sessions) and the table that lists them need not import
 * each other.
 */
import type { SettingName } from '../../core/kernel/setting-names.js';

/**
 * The topic a setting belongs to: the generated configuration page has one table per group, in the order of
 * `SETTING_GROUPS` in `settings-reference.ts`.
 */
export type GatewaySettingGroup = 'gateway' | 'token-validation' | 'upstream' | 'upstream-auth' | 'stdio' | 'any-upstream' | 'sessions' | 'limits' | 'logs' | 'metrics' | 'shared-store' | 'connected-accounts';

/** One gateway setting: an environment variable, and the command-line flag that mirrors it. */
export interface GatewaySetting {
  /** Environment variable, e.g. `MCP_AUTH_UPSTREAM`: one of the setting table's names (`setting-names.ts`). */
  readonly env: SettingName;
  /** Its table in the generated configuration page (`npm run docs`). */
  readonly group: GatewaySettingGroup;
  /** Flag, e.g. `--upstream`; absent for secrets, which must not appear in process listings. */
  readonly flag?: string;
  /** Other spellings of the flag, accepted as it is, e.g. a name that says more than the first one did. */
  readonly aliases?: readonly string[];
  /**
   * Set for the few settings a new set-up needs: when it is needed, one phrase, shown in the "settings you need"
   * box at the top of the configuration page, e.g. `always`.
   */
  readonly essential?: string;
  /** Placeholder for the value in `--help`, e.g. `<url>`. */
  readonly value: string;
  /** What it does, one sentence. */
  readonly description: string;
  /** The default, as shown to users; absent when required or off. */
  readonly defaultValue?: string;
  /** Whether the flag may be given with no value, meaning `true`/`on`. */
  readonly bare?: boolean;
}
