// The gateway configuration file (--config, MCP_AUTH_CONFIG), read by loadGatewayConfig as the gateway and check read
// it: every bad configuration with its exact message and JSON path, all of a file's problems in one error; YAML read
// as JSON is; flags over the environment over the file; relative paths from the file's directory; and a valid
// three-server file giving the servers the server set is built from.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigurationError } from '../../../src/core/kernel/errors.js';
import { DEFAULT_LIST_TIMEOUT_MS, loadGatewayConfig, parseGatewayArgs, type GatewayConfig } from '../../../src/gateway/config/gateway-config.js';
import { describeConfigurationError } from '../../../src/gateway/config/configuration-error-line.js';
import { problemsOf } from '../../helpers/configuration-problems.js';

const root = mkdtempSync(join(tmpdir(), 'config-file-'));
after(() => rmSync(root, { recursive: true, force: true }));

const ISSUER = 'https://auth.example.com';
let dirs = 0;

/** Writes `files` (name → text, or a value written as JSON) into a fresh directory; returns the first file's path. */
function write(files: Record<string, unknown>): string {
  const dir = join(root, `case-${dirs++}`);
  let first: string | undefined;
  for (const [name, content] of Object.entries(files)) {
    const file = join(dir, name);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
    first ??= file;
  }
  return first!;
}

/** Loads the configuration file `file` with `env` as the whole environment (besides PATH, for stdio commands). */
function load(file: string, env: Record<string, string> = {}, flagSettings?: string[]): GatewayConfig {
  return loadGatewayConfig({ PATH: process.env.PATH, MCP_AUTH_CONFIG: file, ...env }, flagSettings ? { flagSettings } : {});
}

/** The problems loading `file` reports, each as `setting: detail`. */
function problems(file: string, env: Record<string, string> = {}): string[] {
  return problemsOf(() => load(file, env));
}

/** A file with the gateway's issuer and `servers`, as JSON. */
function withServers(servers: unknown, gateway: Record<string, unknown> = {}): string {
  return write({ 'gateway.json': { gateway: { issuer: ISSUER, ...gateway }, servers } });
}

const URL_SERVER = { url: 'http://127.0.0.1:3001/mcp' };

describe('configuration file: a valid file', () => {
  it('with one server is valid: the server, no single upstream, the file and the sources', () => {
    const file = withServers({ notes: URL_SERVER });
    const config = load(file);
    assert.deepEqual(config.servers, [{ name: 'notes', transport: 'http', proxy: { upstream: 'http://127.0.0.1:3001/mcp' }, required: false }]);
    assert.equal(config.proxy, undefined);
    assert.equal(config.stdio, undefined);
    assert.equal(config.upstreamAuth, undefined);
    assert.equal(config.configFile, file);
    assert.equal(config.listTimeoutMs, DEFAULT_LIST_TIMEOUT_MS);
    assert.deepEqual(config.settingSources, { MCP_AUTH_CONFIG: 'environment', MCP_AUTH_ISSUER: 'file' });
    assert.deepEqual(config.guard.issuers ?? [config.guard.issuer], [ISSUER]);
  });

  it('with three servers of different kinds gives each its ServerConfig, in the file order', () => {
    const file = write({
      'conf/gateway.json': {
        $schema: '../node_modules/mcp-oauth-guard/schema/gateway-config.schema.json',
        gateway: { issuer: ISSUER, listTimeoutMs: 3000, maxSessions: 500 },
        servers: {
          everything: { url: 'http://127.0.0.1:3001/mcp', required: true, timeouts: { connectMs: 10000, idleMs: 300000 }, limits: { maxSessionsPerCaller: 3, maxResponseBytes: 2048 }, identityHeaders: { subject: 'X-User' }, tools: { exclude: ['*Long*'] } },
          py: { command: ['node', 'server.mjs', '--flag'], cwd: 'py', env: ['API_KEY'], identityEnv: true, limits: { maxProcesses: 64 }, policyFile: 'py-policy.json', listTimeoutMs: 200 },
          notes: {
            url: 'https://notes.internal/mcp',
            auth: { mode: 'client_credentials', clientId: 'gw', clientSecretFile: 'secrets/notes', scope: ['notes:read', 'notes:write'], issuer: 'https://auth2.example.com' },
            policy: { $comment: 'the notes server', tools: { notes_add: ['notes:write'] } },
          },
        },
      },
      'conf/py/.keep': '',
      'conf/py-policy.json': { tools: { add: ['calc:use'] } },
      'conf/secrets/notes': 'notes-secret\n',
    });
    const dir = dirname(file);
    const config = load(file, { API_KEY: 'k' });
    assert.equal(config.listTimeoutMs, 3000);
    const [everything, py, notes] = config.servers!;
    assert.deepEqual(everything, {
      name: 'everything',
      transport: 'http',
      // maxSessions inherited from the gateway's, maxSessionsPerCaller its own.
      proxy: { upstream: 'http://127.0.0.1:3001/mcp', connectTimeoutMs: 10000, idleTimeoutMs: 300000, identityHeaders: { subject: 'X-User' }, maxSessions: 500, maxSessionsPerCaller: 3, maxResponseBytes: 2048 },
      tools: { exclude: ['*Long*'] },
      required: true,
    });
    const { env, ...stdio } = py!.stdio!;
    assert.deepEqual(stdio, { command: 'node', args: ['server.mjs', '--flag'], cwd: join(dir, 'py'), identityEnv: true, maxProcesses: 64 });
    assert.equal(env!.API_KEY, 'k');
    assert.equal(py!.transport, 'stdio');
    assert.deepEqual(py!.policy, { tools: { add: ['calc:use'] } });
    assert.equal(py!.policyFile, join(dir, 'py-policy.json'));
    assert.equal(py!.policySource, `policy file ${join(dir, 'py-policy.json')}`);
    assert.equal(py!.listTimeoutMs, 200);
    assert.deepEqual(notes, {
      name: 'notes',
      transport: 'http',
      proxy: { upstream: 'https://notes.internal/mcp', maxSessions: 500 },
      upstreamAuth: { mode: 'client_credentials', upstream: 'https://notes.internal/mcp', clientId: 'gw', clientSecret: 'notes-secret', gatewayIssuers: [ISSUER], timeoutMs: 5000, scope: 'notes:read notes:write', issuer: 'https://auth2.example.com' },
      policy: { tools: { notes_add: ['notes:write'] } },
      policySource: 'servers.notes.policy',
      required: false,
    });
  });

  it('YAML reads as the same JSON does', () => {
    const json = write({ 'g.json': { gateway: { issuer: ISSUER, port: 9000, lists: 'all', strictJwt: true, audience: ['a', 'b'] }, servers: { notes: { ...URL_SERVER, auth: { mode: 'static', tokenEnv: 'NOTES_TOKEN' } }, py: { command: 'node server.mjs' } } } });
    const yaml = write({
      'g.yaml': [
        '# comments are YAML',
        'gateway:',
        `  issuer: ${ISSUER}`,
        '  port: 9000',
        '  lists: all',
        '  strictJwt: true',
        '  audience: [a, b]',
        'servers:',
        '  notes:',
        '    url: http://127.0.0.1:3001/mcp',
        '    auth: { mode: static, tokenEnv: NOTES_TOKEN }',
        '  py:',
        '    command: node server.mjs',
        '',
      ].join('\n'),
    });
    const env = { NOTES_TOKEN: 'secret-token' };
    const { configFile: _a, ...fromJson } = load(json, env);
    const { configFile: _b, ...fromYaml } = load(yaml, env);
    assert.deepEqual({ ...fromYaml, settings: { ...fromYaml.settings, MCP_AUTH_CONFIG: json } }, { ...fromJson });
    assert.equal(fromYaml.port, 9000);
    assert.equal(fromYaml.guard.lists, 'all');
    assert.equal(fromYaml.guard.strictJwtAccessTokens, true);
    assert.deepEqual(fromYaml.servers![0]!.upstreamAuth, { mode: 'static', token: 'secret-token' });
  });

  it('flags win over the environment, which wins over the file; the sources say which gave each', () => {
    const file = withServers({ notes: URL_SERVER }, { port: 9000, host: '127.0.0.2', logLevel: 'warn', shutdownTimeoutMs: 100 });
    const args = parseGatewayArgs(['--port', '9002', '--config', file], { PATH: process.env.PATH, PORT: '9001', HOST: '127.0.0.3' });
    assert.equal(args.help, false);
    const config = loadGatewayConfig(args.help ? {} : args.settings, { flagSettings: args.help ? [] : args.flagSettings });
    assert.equal(config.port, 9002);
    assert.equal(config.host, '127.0.0.3');
    assert.equal(config.guard.logLevel, 'warn');
    assert.equal(config.shutdownTimeoutMs, 100);
    assert.deepEqual(config.settingSources, { MCP_AUTH_CONFIG: 'flag', MCP_AUTH_ISSUER: 'file', HOST: 'environment', PORT: 'flag', MCP_AUTH_SHUTDOWN_TIMEOUT_MS: 'file', MCP_AUTH_LOG_LEVEL: 'file' });
  });

  it('paths in the file start from its directory: the gateway policy, a policy file, a token file, a working directory', () => {
    const file = write({
      'etc/mcp/gateway.yaml': ['gateway:', `  issuer: ${ISSUER}`, '  policy: policies/gateway.json', 'servers:', '  a:', '    url: https://a.example.com/mcp', '    auth: { mode: static, tokenFile: tokens/a }', '    policyFile: policies/a.json', '  b:', '    command: [node, b.mjs]', '    cwd: ../b', ''].join('\n'),
      'etc/mcp/policies/gateway.json': { requiredScopes: ['mcp'] },
      'etc/mcp/policies/a.json': { tools: { x: ['a:x'] } },
      'etc/mcp/tokens/a': 'a-token',
      'etc/b/.keep': '',
    });
    const dir = dirname(file);
    // Loaded from another working directory: the paths still resolve from the file's.
    const config = load(file);
    assert.equal(config.settings.MCP_AUTH_POLICY, join(dir, 'policies/gateway.json'));
    assert.deepEqual(config.guard.policy, { requiredScopes: ['mcp'] });
    assert.deepEqual(config.servers![0]!.upstreamAuth, { mode: 'static', tokenFile: join(dir, 'tokens/a') });
    assert.equal(config.servers![0]!.policyFile, join(dir, 'policies/a.json'));
    assert.equal(config.servers![1]!.stdio!.cwd, join(dir, '../b'));
  });

  it('a policy watch has something to watch in a server\'s policyFile alone; with no policy file at all it is refused', () => {
    const watched = write({ 'g.json': { gateway: { issuer: ISSUER, policyWatch: true }, servers: { a: { ...URL_SERVER, policyFile: 'p.json' } } }, 'p.json': {} });
    assert.equal(load(watched).policyWatch, true);
    assert.deepEqual(problems(withServers({ a: { ...URL_SERVER, policy: {} } }, { policyWatch: true })), ['gateway.policyWatch: has nothing to watch: set MCP_AUTH_POLICY (--policy) to the policy file too, or turn it off']);
  });

  it('a gateway configured without a file never loads the YAML parser', async () => {
    const { runCommand } = await import('../../helpers/run-cli.js');
    const script = [
      "import { createRequire } from 'node:module';",
      "const { loadGatewayConfig } = await import('./src/gateway/config/gateway-config.ts');",
      `loadGatewayConfig({ MCP_AUTH_UPSTREAM: 'http://127.0.0.1:3001/mcp', MCP_AUTH_ISSUER: '${ISSUER}' });`,
      "const yaml = createRequire(import.meta.url).resolve('yaml');",
      'console.log(JSON.stringify({ loaded: Object.keys(createRequire(import.meta.url).cache).includes(yaml) }));',
    ].join('\n');
    const run = await runCommand(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: join(dirname(new URL(import.meta.url).pathname), '../../..') });
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), { loaded: false });
  });
});

describe('configuration file: every bad configuration, by JSON path', () => {
  it('a missing file', () => {
    const file = join(root, 'nowhere.json');
    assert.deepEqual(problems(file, { MCP_AUTH_ISSUER: ISSUER }), [`MCP_AUTH_CONFIG: the configuration file ${file} does not exist; set MCP_AUTH_CONFIG (--config) to a JSON or YAML file`]);
  });

  it('bad JSON and bad YAML, with their line and column', () => {
    const json = write({ 'bad.json': '{\n  "gateway": {"issuer": "x"\n  "servers": {}\n}\n' });
    assert.deepEqual(problems(json, { MCP_AUTH_ISSUER: ISSUER }), [`MCP_AUTH_CONFIG: the configuration file ${json} is not valid JSON at line 3, column 3: Missing , between flow map items`]);
    const yaml = write({ 'bad.yaml': 'servers:\n  a:\n    url: [x\n  b: 1\n' });
    assert.match(problems(yaml, { MCP_AUTH_ISSUER: ISSUER })[0]!, new RegExp(`^MCP_AUTH_CONFIG: the configuration file ${yaml} is not valid YAML at line \\d+, column \\d+: .+`));
  });

  it('a key written twice, in JSON (which JSON.parse would accept) and in YAML', () => {
    const json = write({ 'dup.json': '{\n  "servers": {\n    "a": {"url": "http://127.0.0.1:1/mcp"},\n    "a": {"url": "http://127.0.0.1:2/mcp"}\n  }\n}\n' });
    assert.deepEqual(problems(json, { MCP_AUTH_ISSUER: ISSUER }), [`MCP_AUTH_CONFIG: the configuration file ${json} is not valid JSON at line 4, column 5: the key "a" appears twice in the same object; keep one`]);
    const yaml = write({ 'dup.yml': 'gateway:\n  port: 1\n  port: 2\nservers:\n  a: {url: "http://127.0.0.1:1/mcp"}\n' });
    assert.deepEqual(problems(yaml, { MCP_AUTH_ISSUER: ISSUER }), [`MCP_AUTH_CONFIG: the configuration file ${yaml} is not valid YAML at line 3, column 3: the key "port" appears twice in the same object; keep one`]);
  });

  it('the top level: not an object, an unknown key, a $schema that is no string, sections of the wrong type, no servers', () => {
    const list = write({ 'list.json': '[]' });
    assert.deepEqual(problems(list, { MCP_AUTH_ISSUER: ISSUER }), [`MCP_AUTH_CONFIG: ${list} must hold an object with "servers" (and optionally "gateway" and "$schema"), not an array`]);
    assert.deepEqual(problems(write({ 'g.json': { $schema: 5, gateway: [], serverz: {} } }), { MCP_AUTH_ISSUER: ISSUER }), [
      'serverz: is not a key of a configuration file; did you mean servers?',
      '$schema: must be the schema\'s path or URL as a string, e.g. "./node_modules/mcp-oauth-guard/schema/gateway-config.schema.json"',
      'gateway: must be an object of gateway-wide settings, e.g. {"issuer": "https://auth.example.com"}, not an array',
      'servers: is required in a configuration file: name each upstream, e.g. "servers": {"notes": {"url": "http://127.0.0.1:3001/mcp"}}',
    ]);
    assert.deepEqual(problems(write({ 'g.json': { gateway: { issuer: ISSUER }, servers: 'notes' } })), [
      'servers: must be an object mapping each server\'s name to its settings, e.g. {"notes": {"url": "http://127.0.0.1:3001/mcp"}}, not a string ("notes")',
      'servers: is required in a configuration file: name each upstream, e.g. "servers": {"notes": {"url": "http://127.0.0.1:3001/mcp"}}',
    ].slice(0, 1));
  });

  it('gateway: an unknown key (with the one meant), a per-server setting, a secret, the file itself, a value of the wrong type or range', () => {
    const file = withServers({ notes: URL_SERVER }, { prot: 8080, upstream: 'http://x', identityHeaders: 'on', upstreamCommand: 'x', url: 'http://x', sessionSecret: 's', introspectionClientSecret: 's', config: 'other.json', maxBodyBytes: { a: 1 }, shutdownTimeoutMs: -1, lists: 'some' });
    assert.deepEqual(problems(file), [
      'gateway.prot: is not a gateway setting; did you mean port?',
      'gateway.upstream: is set for each server: write it as servers.<name>.url',
      'gateway.identityHeaders: is set for each server: write it as servers.<name>.identityHeaders',
      'gateway.upstreamCommand: is set for each server: write it as servers.<name>.command',
      'gateway.url: belongs to a server: write it as servers.<name>.url',
      'gateway.sessionSecret: is read from the environment only (MCP_AUTH_SESSION_SECRET), so that a secret is never written in a file: set that variable, or write sessionSecretFile with the path of a file holding it',
      'gateway.introspectionClientSecret: is read from the environment only (MCP_AUTH_INTROSPECTION_CLIENT_SECRET), so that a secret is never written in a file: set that variable',
      'gateway.config: cannot name another configuration file',
      'gateway.maxBodyBytes: must be a string, a number, true or false, or a list of strings (got an object)',
      'gateway.lists: must be one of filtered, all (got "some"): "filtered" lists what the token may use, "all" lists everything and enforces on call',
      'gateway.shutdownTimeoutMs: must be a whole number from 0 to 600000 (got "-1")',
    ]);
  });

  it('servers: none, too many, a bad name, names equal but for case', () => {
    assert.deepEqual(problems(withServers({})), ['servers: names no server: add at least one, e.g. "servers": {"notes": {"url": "http://127.0.0.1:3001/mcp"}}']);
    const many = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`s${i}`, { url: `http://127.0.0.1:${3000 + i}/mcp` }]));
    assert.deepEqual(problems(withServers(many)), ['servers: names 33 servers; at most 32 are allowed']);
    assert.deepEqual(problems(withServers({ 'a__b': URL_SERVER, '9lives': URL_SERVER, 'has space': URL_SERVER, 'trailing_': URL_SERVER, notes: URL_SERVER, Notes: URL_SERVER, NOTES: URL_SERVER })), [
      'servers.a__b: must start with a letter and hold only letters, digits, "-" and single "_" (not at its end; at most 64), e.g. notes',
      'servers.9lives: must start with a letter and hold only letters, digits, "-" and single "_" (not at its end; at most 64), e.g. notes',
      'servers.has space: must start with a letter and hold only letters, digits, "-" and single "_" (not at its end; at most 64), e.g. notes',
      'servers.trailing_: must start with a letter and hold only letters, digits, "-" and single "_" (not at its end; at most 64), e.g. notes',
      'servers.Notes: and servers.notes differ only in case: names are compared ignoring case (tool prefixes, metric labels); rename one',
      'servers.NOTES: and servers.notes differ only in case: names are compared ignoring case (tool prefixes, metric labels); rename one',
    ]);
    // A server with a bad or colliding name still has its own mistakes named, in the same message.
    assert.deepEqual(problems(withServers({ 'py__x': { ...URL_SERVER, tool: {} }, notes: URL_SERVER, Notes: { ...URL_SERVER, tols: {} } })), [
      'servers.py__x: must start with a letter and hold only letters, digits, "-" and single "_" (not at its end; at most 64), e.g. notes',
      'servers.py__x.tool: is not a key here; did you mean tools?',
      'servers.Notes: and servers.notes differ only in case: names are compared ignoring case (tool prefixes, metric labels); rename one',
      'servers.Notes.tols: is not a key here; did you mean tools?',
    ]);
  });

  it('a server: not an object, both url and command, neither, unknown keys at every level (with the one meant)', () => {
    assert.deepEqual(problems(withServers({ a: 'http://x', b: { ...URL_SERVER, command: 'node x.mjs' }, c: { required: true } })), [
      'servers.a: must be an object with "url" (Streamable HTTP) or "command" (stdio), not a string ("http://x")',
      'servers.b: has both "url" and "command": a server is either Streamable HTTP (url) or stdio (command); keep one',
      'servers.c: needs "url" (a Streamable HTTP MCP endpoint) or "command" (a stdio MCP server to run)',
    ]);
    assert.deepEqual(problems(withServers({ a: { ...URL_SERVER, tols: {}, auth: { mode: 'static', tokenEnvv: 'X' }, timeouts: { connect: 1 }, limits: { maxSession: 1 }, tools: { includes: [] } } })), [
      'servers.a.tols: is not a key here; did you mean tools?',
      'servers.a.auth.tokenEnvv: is not a key here; did you mean tokenEnv?',
      'servers.a.timeouts.connect: is not a key here; did you mean connectMs?',
      'servers.a.limits.maxSession: is not a key here; did you mean maxSessions?',
      'servers.a.tools.includes: is not a key here; did you mean include?',
      // What the misspelt key leaves out, as the reader finds it.
      'servers.a.auth.tokenEnv: or auth.tokenFile (one of them, not both) is required with auth.mode=static: the token the gateway sends upstream',
    ]);
    assert.deepEqual(problems(withServers({ a: { ...URL_SERVER, auth: 'static', limits: [] } })), ['servers.a.auth: must be an object (got a string ("static"))', 'servers.a.limits: must be an object (got an array)']);
  });

  it('secrets written inline get their own message, naming the keys to use instead', () => {
    assert.deepEqual(problems(withServers({ a: { url: 'https://a.example.com/mcp', auth: { mode: 'static', token: 'abc' } }, b: { url: 'https://b.example.com/mcp', auth: { mode: 'client_credentials', clientId: 'gw', clientSecret: 'abc' } } })), [
      'servers.a.auth.token: is a secret written in the file: secrets are never inline; use tokenEnv or tokenFile (an environment variable, or a file, holding it)',
      'servers.b.auth.clientSecret: is a secret written in the file: secrets are never inline; use clientSecretEnv or clientSecretFile (an environment variable, or a file, holding it)',
    ]);
  });

  it('url: not a string, not a URL', () => {
    assert.deepEqual(problems(withServers({ a: { url: 5 }, b: { url: 'not a url' } })), [
      'servers.a.url: must be the MCP endpoint\'s URL as a string (got a number (5))',
      'servers.b.url: "not a url" is not an absolute URL; give the full URL, e.g. http://127.0.0.1:3001/mcp',
    ]);
  });

  it('command: an empty list, a program that is no string, a program that cannot be found, a bad command line; cwd and env', () => {
    assert.deepEqual(problems(withServers({ a: { command: [] }, b: { command: [5, 'x'] }, c: { command: ['', 'x'] }, d: { command: ['no-such-program-anywhere', 'x'] }, e: { command: 'no-such-program-anywhere x' }, f: { command: 'node a | b' } })), [
      'servers.a.command: is an empty list: give the program and its arguments, e.g. ["python3", "server.py"]',
      'servers.b.command[0]: must be the program to run, a non-empty string (got a number (5))',
      'servers.c.command[0]: must be the program to run, a non-empty string (got a string (""))',
      'servers.d.command[0]: runs "no-such-program-anywhere", which is not on the PATH the upstream process gets; install it, or give its full path',
      'servers.e.command: runs "no-such-program-anywhere", which is not on the PATH the upstream process gets; install it, or give its full path',
      'servers.f.command: has an unquoted "|" at character 8: no shell runs the command, so pipes, redirections and variables do not work; quote it if it is meant literally, or wrap the command in a script',
    ]);
    const file = withServers({ a: { command: ['node', 'x'], cwd: 'nowhere', env: ['OK', 'BAD NAME'] } });
    assert.deepEqual(problems(file), ['servers.a.env[1]: must be one item, without commas or blanks (got "BAD NAME"); give each item on its own', `servers.a.cwd: is "${join(dirname(file), 'nowhere')}", which is not a directory`]);
    const badName = withServers({ a: { command: ['node', 'x'], env: ['OK', 'BAD-NAME'] } });
    assert.match(problems(badName)[0]!, /^servers\.a\.env: .*BAD-NAME/);
  });

  it('auth: a bad mode, a static token missing, a variable not set, a file missing, a key of another mode, a credential over plain http', () => {
    const file = withServers({
      a: { url: 'https://a.example.com/mcp', auth: { mode: 'basic' } },
      b: { url: 'https://b.example.com/mcp', auth: { mode: 'static' } },
      c: { url: 'https://c.example.com/mcp', auth: { mode: 'static', tokenEnv: 'UNSET_TOKEN_VARIABLE' } },
      d: { url: 'https://d.example.com/mcp', auth: { mode: 'client_credentials', clientId: 'gw', clientSecretFile: 'missing-secret' } },
      e: { url: 'https://e.example.com/mcp', auth: { mode: 'static', tokenEnv: 'E_TOKEN', clientId: 'gw' } },
      f: { url: 'http://f.example.com/mcp', auth: { mode: 'static', tokenEnv: 'E_TOKEN' } },
      g: { url: 'https://g.example.com/mcp', auth: { mode: 'static', tokenEnv: 'not a name' } },
    });
    const found = problems(file, { E_TOKEN: 'e' });
    assert.deepEqual(found.slice(0, 3), [
      'servers.a.auth.mode: is "basic"; use one of none, static, client_credentials, token_exchange, connected',
      'servers.b.auth.tokenEnv: or auth.tokenFile (one of them, not both) is required with auth.mode=static: the token the gateway sends upstream',
      "servers.c.auth.tokenEnv: names UNSET_TOKEN_VARIABLE, which is not set in the gateway's environment; set it to the secret",
    ]);
    assert.match(found[3]!, new RegExp(`^servers\\.d\\.auth\\.clientSecretFile: .*${join(dirname(file), 'missing-secret').replaceAll('/', '\\/')}`));
    assert.deepEqual(found.slice(4), [
      'servers.e.auth.clientId: does nothing with auth.mode=static; unset it, or set auth.mode to the mode it belongs to',
      found[5]!,
      'servers.g.auth.tokenEnv: must name an environment variable, e.g. NOTES_UPSTREAM_TOKEN (got "not a name")',
    ]);
    assert.match(found[5]!, /^servers\.f\.url: /);
  });

  it('settings of the other transport: auth, identity headers and HTTP limits on a stdio server, process bounds on an HTTP one', () => {
    assert.deepEqual(problems(withServers({ py: { command: ['node', 'x'], auth: { mode: 'static', tokenFile: 't' }, identityHeaders: 'on', timeouts: { connectMs: 5 }, limits: { maxSessions: 5, maxResponseBytes: 5 } }, web: { ...URL_SERVER, identityEnv: true, limits: { maxProcesses: 2 }, env: ['A'] } })), [
      'servers.py.timeouts.connectMs: applies to a server with "url" only',
      'servers.py.limits.maxSessions: applies to a server with "url" only',
      'servers.py.limits.maxResponseBytes: applies to a server with "url" only',
      'servers.py.auth.mode: applies to an HTTP upstream (url) only, not to the stdio upstream command starts; unset it',
      'servers.py.auth.tokenFile: applies to an HTTP upstream (url) only, not to the stdio upstream command starts; unset it',
      'servers.py.identityHeaders: applies to an HTTP upstream only; a stdio upstream learns its caller from identityEnv=on',
      'servers.web.env: applies to a stdio upstream (command) only; unset it, since url is an HTTP upstream',
      'servers.web.identityEnv: applies to a stdio upstream (command) only; unset it, since url is an HTTP upstream',
      'servers.web.limits.maxProcesses: applies to a stdio upstream (command) only; unset it, since url is an HTTP upstream',
    ]);
  });

  it('identityHeaders, timeouts, limits and listTimeoutMs: values out of range or of the wrong type', () => {
    assert.deepEqual(problems(withServers({ a: { ...URL_SERVER, identityHeaders: { subject: 'X-User', user: 'X' }, timeouts: { idleMs: 0 }, limits: { maxSessions: 'many', maxResponseBytes: 0.5 }, listTimeoutMs: 600001, required: 'yes' } })), [
      'servers.a.identityHeaders.user: is not a key here; the keys are subject, clientId, scopes, issuer',
      'servers.a.timeouts.idleMs: must be a whole number from 1 to 86400000 (got "0")',
      'servers.a.limits.maxSessions: must be a whole number from 1 to 10000000 (got "many")',
      'servers.a.listTimeoutMs: must be a whole number from 1 to 600000 (got "600001")',
      'servers.a.limits.maxResponseBytes: must be a whole number from 1 to 1073741824 (got 0.5)',
      'servers.a.required: must be true or false (got a string ("yes"))',
    ]);
  });

  it('policy: inline and policyFile both, a bad inline policy by its path, a missing policy file; tools of the wrong shape', () => {
    const file = withServers({
      a: { ...URL_SERVER, policy: {}, policyFile: 'p.json' },
      b: { ...URL_SERVER, policy: { tools: { y: 'notes:read' } } },
      c: { ...URL_SERVER, policyFile: 'missing.json' },
      d: { ...URL_SERVER, tools: ['x'] },
      e: { ...URL_SERVER, tools: { include: 'x', exclude: [''] } },
    });
    assert.deepEqual(problems(file), [
      'servers.a.policyFile: and servers.a.policy are both set: keep the policy inline or in its file, not both',
      'servers.b.policy.tools.y: expected an array of scope strings, an object {"scopes": [...], "when": "<CEL expression>"} (or a function returning scopes), got a string ("notes:read")',
      `servers.c.policyFile: policy file ${join(dirname(file), 'missing.json')} does not exist. Create it, or set servers.c.policyFile to the path of an existing JSON policy file`,
      'servers.d.tools: must be an object (got an array)',
      'servers.e.tools.include: expected an array of name patterns, got a string ("x")',
      'servers.e.tools.exclude[0]: expected a non-empty tool name pattern (`*` matches any run of characters), got a string ("")',
    ]);
  });

  it('listReuseMs: a whole number of milliseconds up to five minutes, and never for a server told who asks', () => {
    assert.equal(load(withServers({ notes: { ...URL_SERVER, listReuseMs: 30_000 } })).servers?.[0]?.listReuseMs, 30_000);
    assert.deepEqual(
      problems(
        withServers({
          big: { ...URL_SERVER, listReuseMs: 300_001 },
          told: { ...URL_SERVER, identityHeaders: 'on', listReuseMs: 1_000 },
          exchanged: { ...URL_SERVER, auth: { mode: 'token_exchange', clientId: 'g', clientSecretEnv: 'SECRET' }, listReuseMs: 1_000 },
        }),
        { SECRET: 's' },
      ),
      [
        'servers.big.listReuseMs: must be a whole number from 1 to 300000 (got 300001)',
        'servers.told.listReuseMs: cannot be used with identityHeaders: the server is told who asks, so its lists may differ per caller and must not be served to others; remove listReuseMs',
        'servers.exchanged.listReuseMs: cannot be used with auth.mode "token_exchange": the server is told who asks, so its lists may differ per caller and must not be served to others; remove listReuseMs',
      ],
    );
  });

  it('with --config, MCP_AUTH_UPSTREAM or MCP_AUTH_UPSTREAM_COMMAND is an error, and a per-server variable names the key to use instead', () => {
    const file = withServers({ notes: URL_SERVER });
    assert.deepEqual(problems(file, { MCP_AUTH_UPSTREAM: 'http://127.0.0.1:1/mcp', MCP_AUTH_UPSTREAM_COMMAND: 'node x', MCP_AUTH_UPSTREAM_TOKEN_FILE: '/t', MCP_AUTH_IDENTITY_ENV: 'on', MCP_AUTH_UPSTREAM_IDLE_TIMEOUT_MS: '5' }), [
      'MCP_AUTH_UPSTREAM: and MCP_AUTH_CONFIG are both set: naming both is an error; move this upstream into the file as a server (servers.<name>.url), or unset MCP_AUTH_CONFIG',
      'MCP_AUTH_UPSTREAM_COMMAND: and MCP_AUTH_CONFIG are both set: naming both is an error; move this upstream into the file as a server (servers.<name>.command), or unset MCP_AUTH_CONFIG',
      'MCP_AUTH_IDENTITY_ENV: is set for each server in the configuration file (MCP_AUTH_CONFIG): write it as servers.<name>.identityEnv, and unset it here',
      'MCP_AUTH_UPSTREAM_TOKEN_FILE: is set for each server in the configuration file (MCP_AUTH_CONFIG): write it as servers.<name>.auth.tokenFile, and unset it here',
      'MCP_AUTH_UPSTREAM_IDLE_TIMEOUT_MS: is set for each server in the configuration file (MCP_AUTH_CONFIG): write it as servers.<name>.timeouts.idleMs, and unset it here',
    ]);
  });

  it('a problem with a gateway value from the file is named by its path; one from a variable by the variable; both in one message', () => {
    const file = withServers({ notes: URL_SERVER }, { port: 'eighty', policy: 'missing-policy.json' });
    const found = problems(file, { MCP_AUTH_MAX_BODY_BYTES: 'lots' });
    assert.deepEqual(found.slice(0, 2), ['gateway.port: must be a whole number from 0 to 65535 (got "eighty")', found[1]!]);
    assert.match(found[1]!, /^gateway\.policy: policy file .*missing-policy\.json does not exist/);
    assert.ok(found.includes('MCP_AUTH_MAX_BODY_BYTES: must be a whole number from 1 to 1073741824 (got "lots")') || found.some((line) => line.startsWith('MCP_AUTH_MAX_BODY_BYTES: ')), found.join('\n'));
    try {
      load(file, { MCP_AUTH_MAX_BODY_BYTES: 'lots' });
    } catch (error) {
      const message = describeConfigurationError(error as ConfigurationError);
      assert.match(message, /^3 settings need fixing:\n {2}gateway\.port: .*\n {2}gateway\.policy: .*\n {2}MCP_AUTH_MAX_BODY_BYTES \(--max-body-bytes\): /);
    }
  });
});

describe('configuration file: one that cannot be parsed', () => {
  it('is the only problem reported: what the file would have set is not reported missing as well', () => {
    const file = write({ 'broken.yaml': `gateway:\n  issuer: ${ISSUER}\n  issuer: ${ISSUER}\nservers:\n  notes: { url: http://127.0.0.1:3001/mcp }\n` });
    const found = problems(file);
    assert.equal(found.length, 1, found.join('\n'));
    assert.doesNotMatch(found[0]!, /MCP_AUTH_ISSUER/);
  });
});
