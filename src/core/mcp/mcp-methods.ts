/**
 * Every method MCP defines, requests and notifications, from 2024-11-05 to 2026-07-28 (the tasks extension's
 * included): the vocabulary metric labels and span names may use as they are. A client can send any string as
 * a method, so anything outside this set is named `other` there, which keeps both bounded.
 */
export const MCP_METHODS: ReadonlySet<string> = new Set([
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'prompts/list',
  'prompts/get',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'resources/subscribe',
  'resources/unsubscribe',
  'subscriptions/listen',
  'completion/complete',
  'logging/setLevel',
  'roots/list',
  'sampling/createMessage',
  'elicitation/create',
  'tasks/get',
  'tasks/result',
  'tasks/list',
  'tasks/cancel',
  'notifications/initialized',
  'notifications/cancelled',
  'notifications/progress',
  'notifications/message',
  'notifications/roots/list_changed',
  'notifications/tools/list_changed',
  'notifications/prompts/list_changed',
  'notifications/resources/list_changed',
  'notifications/resources/updated',
  'notifications/elicitation/complete',
  'notifications/subscriptions/acknowledged',
  'notifications/tasks/status',
]);

/**
 * The requests that name one resource by `params.uri`, decided by its resource rule: reading it and (before
 * 2026-07-28) subscribing to it or unsubscribing.
 */
export const RESOURCE_METHODS: ReadonlySet<string> = new Set(['resources/read', 'resources/subscribe', 'resources/unsubscribe']);
