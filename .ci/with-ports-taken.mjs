// Runs a command while another process holds the ports a developer's machine often has in use (the notes example's
// 3000, an upstream's 3001, the gateway's 8080, the authorization server's 9400), on 127.0.0.1 and ::, so that CI
// shows that no test depends on one of them being free. Exits with the command's status.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';

const PORTS = [3000, 3001, 8080, 9400];
const [command, ...args] = process.argv.slice(2);
if (command === undefined) {
  console.error('usage: node .ci/with-ports-taken.mjs <command> [args...]');
  process.exit(2);
}

const held = [];
for (const port of PORTS) {
  for (const host of ['127.0.0.1', '::']) {
    const server = createServer((socket) => socket.destroy());
    await new Promise((resolve) => {
      // A port already taken by something else is taken all the same; an address family the host lacks is skipped.
      server.once('error', (error) => { console.error(`ci: ${host} port ${port} not held (${error.code})`); resolve(); });
      server.listen({ port, host, ipv6Only: host === '::' }, () => { held.push(server); resolve(); });
    });
  }
}
console.error(`ci: holding ${held.length} listeners on ports ${PORTS.join(', ')} while running: ${[command, ...args].join(' ')}`);
const child = spawn(command, args, { stdio: 'inherit' });
child.on('exit', (code, signal) => {
  for (const server of held) server.close();
  process.exit(code ?? (signal ? 1 : 0));
});
