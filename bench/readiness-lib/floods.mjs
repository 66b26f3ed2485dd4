// The --slowloris floods of bench/readiness, each from its own loopback
// address (Linux routes all of 127.0.0.0/8 to lo), so the server's
// per-address caps apply to the attacker and not to the load's clients:
//   - headers trickled a byte a second and never finished (127.0.0.3);
//   - 1,024 sockets that connect and send nothing (127.0.0.2);
//   - upload bodies trickled 2 KB every 250 ms, each ticket PUT twice at once,
//     and bodies that stall after their headers (127.0.0.4).
// Meanwhile a probe asks GET /healthz on a fresh connection every 250 ms,
// whole within 1 s (127.0.0.5, from a process of its own: probe.mjs): the
// server must answer every one.
import net from 'node:net';
import { startProbe } from './probe.mjs';

const IDLE = 1024;
const STALLED = 2;  // tickets whose body stalls after its headers (first: they are received)
const TICKETS = 8;  // tickets trickled by two PUTs each

export async function startFloods({ count, server, createTicket }) {
  const sockets = [];
  const stats = { idleClosedByServer: 0, uploadAnswers: {}, uploadsCutOff: 0 };
  const open = (localAddress, onConnect) => {
    const s = net.connect({ port: server.port, host: '127.0.0.1', localAddress }, onConnect);
    s.on('error', () => {});
    sockets.push(s);
    return s;
  };
  // Headers that never end.
  const header = 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ';
  for (let i = 0; i < count; i++) open('127.0.0.3', function () { this.write(header); });
  // Idle sockets; those the server closes are counted.
  for (let i = 0; i < IDLE; i++) {
    const s = open('127.0.0.2');
    s.on('close', () => { if (!s.stopping) stats.idleClosedByServer++; });
  }
  // Upload trickles: two PUTs per ticket (the second is refused at once),
  // and a few bodies that stall after their headers.
  const uploads = [];
  for (let t = 0; t < STALLED + TICKETS; t++) {
    const ticket = await createTicket(1 << 20);
    if (!ticket) continue;
    const url = new URL(ticket.url);
    const head = `PUT ${url.pathname}${url.search} HTTP/1.1\r\nHost: x\r\n` +
      Object.entries(ticket.headers).map(([k, v]) => `${k}: ${v}\r\n`).join('') + '\r\n';
    for (let twice = 0; twice < (t < STALLED ? 1 : 2); twice++) {
      const s = open('127.0.0.4', function () { this.write(head); });
      s.stalled = t < STALLED;
      let answer = '';
      s.on('data', (d) => {
        answer += d;
        const status = /^HTTP\/1\.1 (\d+)/.exec(answer)?.[1];
        if (status && !s.counted) {
          s.counted = true;
          stats.uploadAnswers[status] = (stats.uploadAnswers[status] ?? 0) + 1;
        }
      });
      s.on('close', () => { if (!s.counted && !s.stopping) stats.uploadsCutOff++; });
      uploads.push(s);
    }
  }
  const chunk = Buffer.alloc(2048, 'a');
  const trickle = setInterval(() => {
    for (const s of uploads) if (!s.stalled && !s.destroyed) s.write(chunk);
  }, 250);
  const headerTimer = setInterval(() => {
    for (const s of sockets) if (!s.destroyed && s.localAddress === '127.0.0.3') s.write('a');
  }, 1000);
  const probe = startProbe({ port: server.port, paths: ['/healthz'], localAddress: '127.0.0.5' });
  stats.probe = probe.stats;
  return {
    stats,
    stop() {
      clearInterval(trickle);
      clearInterval(headerTimer);
      probe.stop();
      for (const s of sockets) s.stopping = true;
      for (const s of sockets) s.destroy();
    },
  };
}
