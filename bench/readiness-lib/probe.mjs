// Probes of bench/readiness: GETs of fixed paths every 250 ms, each on a
// fresh connection and whole within 1 s, that must answer 200 with bytes:
// `/healthz` during the floods, the web console (its page and first module)
// during the overload. A probe runs in a process of its own: the harness's
// event loop, busy making and sending the load, would delay its timers and
// the reading of its answers, and blame the server for them.
import http from 'node:http';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// One GET, whole within `ms` by this process's clock.
function get({ port, localAddress }, path, ms) {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path, localAddress, agent: false }, (res) => {
      let bytes = 0;
      res.on('data', (d) => { bytes += d.length; });
      res.on('end', () => { clearTimeout(timer); resolve(res.statusCode === 200 && bytes > 0); });
      res.on('error', () => resolve(false));
      res.on('aborted', () => resolve(false));
    });
    const timer = setTimeout(() => req.destroy(new Error('timeout')), ms);
    req.on('error', () => { clearTimeout(timer); resolve(false); });
  });
}

// The child: one line per probe, "ok MS" or "fail MS", until killed; all
// of a probe's paths within 1 s together.
async function probeForever(target, paths) {
  process.stdout.on('error', () => process.exit(0));  // the harness is gone
  for (;;) {
    const t0 = performance.now();
    let ok = true;
    for (const path of paths) ok = ok && (await get(target, path, Math.max(1, 1000 - (performance.now() - t0))));
    const ms = performance.now() - t0;
    process.stdout.write(`${ok ? 'ok' : 'fail'} ${ms.toFixed(1)}\n`);
    await new Promise((r) => setTimeout(r, Math.max(0, 250 - ms)));
  }
}

// Probes `paths` (all of them in turn make one probe) of the server on
// `port`, from `localAddress` (an address of its own, so the load's
// per-address connection cap is not the probe's); stats {probes, failures,
// maxMs} count as the child reports. A child that ends before stop() counts
// one failure, and stop() counts the probes it should have made and did not
// (a probe every 250 ms, some slack), so a dead probe never passes.
const children = new Set();
process.on('exit', () => { for (const c of children) c.kill('SIGKILL'); });

export function startProbe({ port, paths, localAddress }) {
  const stats = { probes: 0, failures: 0, maxMs: 0 };
  const started = performance.now();
  const child = spawn(process.execPath,
    [fileURLToPath(import.meta.url), '--probe', String(port), localAddress, ...paths],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  let rest = '';
  child.stdout.on('data', (d) => {
    const lines = (rest + d).split('\n');
    rest = lines.pop();
    for (const line of lines) {
      const [verdict, ms] = line.split(' ');
      stats.probes++;
      if (verdict !== 'ok') stats.failures++;
      stats.maxMs = Math.max(stats.maxMs, Number(ms));
    }
  });
  children.add(child);
  let stopped = false;
  child.on('exit', () => {
    children.delete(child);
    if (!stopped) stats.failures++;
  });
  return {
    stats,
    stop() {
      stopped = true;
      child.kill('SIGTERM');
      const expected = Math.floor((performance.now() - started) / 250 * 0.5);
      if (stats.probes < expected) stats.failures += expected - stats.probes;
    },
  };
}

if (process.argv[2] === '--probe') {
  const [port, localAddress, ...paths] = process.argv.slice(3);
  probeForever({ port: Number(port), localAddress }, paths);
}
