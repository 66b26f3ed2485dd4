// The web console under --overload: while the server takes ten times the
// target rate, a probe loads the console's page and its first module on a
// fresh connection every 250 ms with a 1 s timeout. Every one must answer
// 200 with its bytes: the console's files are served without the API's
// admission, so an overloaded server still shows its console.
import http from 'node:http';

function get(port, path) {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false, timeout: 1000 }, (res) => {
      let bytes = 0;
      res.on('data', (d) => { bytes += d.length; });
      res.on('end', () => resolve(res.statusCode === 200 && bytes > 0));
      // A timeout after the headers ends the body instead.
      res.on('error', () => resolve(false));
      res.on('aborted', () => resolve(false));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(false));
  });
}

export function startConsoleProbe(server) {
  const stats = { probes: 0, failures: 0, maxMs: 0 };
  const timer = setInterval(async () => {
    const t0 = performance.now();
    stats.probes++;
    const ok = (await get(server.port, '/console/')) && (await get(server.port, '/console/app.js'));
    stats.maxMs = Math.max(stats.maxMs, performance.now() - t0);
    if (!ok) stats.failures++;
  }, 250);
  return { stats, stop: () => clearInterval(timer) };
}
