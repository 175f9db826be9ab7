import { mcpOAuthGuard, type McpOAuthGuardOptions } from '../../src/index.js';
import { listenWithGuard, type GuardedServer } from '../../examples/serve-guarded.js';

/** An Express app on 127.0.0.1 with the guard mounted; the resource is known once the port is. */
export interface GuardedApp extends GuardedServer {
  /** `http://127.0.0.1:<port>`. */
  origin: string;
}

/** Starts a guarded app; `options` receives the origin so it can build `resource` from the real port. */
export async function startGuardedApp(options: (origin: string) => McpOAuthGuardOptions): Promise<GuardedApp> {
  let origin = '';
  const running = await listenWithGuard('127.0.0.1', 0, (defaultResource) => {
    origin = new URL(defaultResource).origin;
    return mcpOAuthGuard(options(origin));
  });
  return { ...running, origin };
}
