// The soak through HTTP (bench/soak --http runs it; docs/benchmarks.md
// records its table): one real `loam serve` on a fresh local workspace with
// automatic compaction and retention on (a shortened window), single-row
// inline CSV runs from many clients, one pipeline, one table. At each
// checkpoint it stops submitting, waits until the server's queue is empty and
// every accepted run finished, then prints from outside what grows with age
// if anything does: a full scan through GET /rows, a single-row run's
// submit-to-terminal time, the table's fragments after the server's last
// compaction pass, the workspace's objects and bytes, the server's RSS, and
// checks that the table holds exactly one row per succeeded run. Never part
// of CI; every request targets loopback and every wait is bounded.
import { spawn, execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const opt = { checkpoints: [1000, 10000], clients: 8, windowSeconds: 60,
  compactionIntervalSeconds: 1, retentionIntervalSeconds: 10 };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i += 2) {
  const [k, v] = [argv[i], argv[i + 1]];
  if (k === '--checkpoints') opt.checkpoints = v.split(',').map(Number);
  else if (k === '--clients') opt.clients = Number(v);
  else if (k === '--window-seconds') opt.windowSeconds = Number(v);
  else if (k === '--compaction-interval-seconds') opt.compactionIntervalSeconds = Number(v);
  else if (k === '--retention-interval-seconds') opt.retentionIntervalSeconds = Number(v);
  else { console.error(`unknown flag ${k}`); process.exit(2); }
}
const LOAM = process.env.LOAM_BINARY ?? path.resolve('build/release/src/cli/loam');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();

// --- the workspace and its server ---------------------------------------------------
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'loam-soak-http-'));
const root = path.join(work, 'ws');
const loam = (...a) => execFileSync(LOAM, ['--root', root, ...a], { encoding: 'utf8' });
loam('init');
loam('retention', '--window-seconds', String(opt.windowSeconds));
const owner = JSON.parse(loam('info', '--json')).owner;
const secretFile = path.join(work, 'secret');
fs.writeFileSync(secretFile, crypto.randomBytes(24).toString('hex'));
const token = loam('token', '--secret-file', secretFile, '--sub', owner, '--ttl', '24h').trim();
const configFile = path.join(work, 'config.json');
fs.writeFileSync(configFile, JSON.stringify({
  accessLog: false, handlerThreads: 32, maxConnectionsPerClient: 4 * opt.clients,
  compactionIntervalSeconds: opt.compactionIntervalSeconds,
  retentionIntervalSeconds: opt.retentionIntervalSeconds,
  // The soak measures age, not admission: nothing is refused.
  admission: { tinyRunsPerMinute: 1_000_000, principalRequestsPerSecond: 10_000,
    principalBurst: 10_000, maxQueuedRuns: 100_000, maxConcurrentRunsPerPipeline: 100_000 },
}));
const port = await new Promise((resolve) => {
  const s = net.createServer().listen(0, '127.0.0.1', () => {
    const p = s.address().port;
    s.close(() => resolve(p));
  });
});
const base = `http://127.0.0.1:${port}`;
const server = spawn(LOAM, ['--root', root, 'serve', '--listen', `127.0.0.1:${port}`,
  '--config', configFile, '--auth-hs256-secret-file', secretFile],
{ stdio: ['ignore', 'pipe', fs.openSync(path.join(work, 'serve.log'), 'a')] });
process.on('exit', () => server.kill('SIGKILL'));
await new Promise((resolve, reject) => {
  let out = '';
  server.stdout.on('data', (d) => { out += d; if (out.includes('listening on')) resolve(); });
  server.on('exit', (code) => reject(new Error(`loam serve exited ${code} before listening`)));
});

// One request, retried after Retry-After on 429 and after a pause on a 5xx.
async function call(method, p, { body, headers = {} } = {}) {
  for (let attempt = 0; attempt < 100; attempt++) {
    const res = await fetch(base + p, { method, body,
      headers: { authorization: `Bearer ${token}`, ...headers } });
    const text = await res.text();
    if (res.status === 429 || res.status >= 500) {
      await sleep(1000 * Number(res.headers.get('retry-after') ?? 0.05));
      continue;
    }
    const type = res.headers.get('content-type') ?? '';
    return { status: res.status, text, json: /^application\/(problem\+)?json/.test(type) ? JSON.parse(text) : null };
  }
  throw new Error(`${method} ${p}: refused 100 times`);
}
const json = { 'content-type': 'application/json' };
const t = await call('POST', '/v1/tables', { headers: json, body: JSON.stringify({ name: 'events',
  columns: [{ name: 'id', type: 'int64', nullable: false }, { name: 'note', type: 'string' }] }) });
if (t.status !== 201) throw new Error(`create table: ${t.status} ${t.text}`);
const p = await call('POST', '/v1/pipelines', { headers: json,
  body: JSON.stringify({ name: 'soak', table: 'events', mode: 'append', format: 'csv' }) });
if (p.status !== 201) throw new Error(`create pipeline: ${p.status} ${p.text}`);
const runs = `/v1/pipelines/${p.json.id}/runs`;

// --- the load ----------------------------------------------------------------------
let accepted = 0;
async function submit(id, key) {
  const r = await call('POST', runs, { body: `id,note\n${id},soak\n`,
    headers: { 'content-type': 'text/csv', 'idempotency-key': key } });
  if (r.status !== 202) throw new Error(`run ${id}: ${r.status} ${r.text}`);
  accepted++;
  return r.json.id;
}
async function submitRange(from, to) {
  let next = from;
  await Promise.all(Array.from({ length: opt.clients }, async () => {
    for (let i = next++; i < to; i = next++) await submit(i, `run-${i}`);
  }));
}

// The server's metrics, as {name{labels}: value}.
async function metrics() {
  const out = {};
  for (const line of (await call('GET', '/metrics')).text.split('\n')) {
    const m = /^([a-z_]+(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}
const finished = (m) => Object.entries(m).filter(([k]) => k.startsWith('loam_runs_finished_total'))
  .reduce((sum, [, v]) => sum + v, 0);
async function drain() {
  const deadline = now() + 30 * 60_000;
  for (;;) {
    const m = await metrics();
    if (m.loam_queue_runs === 0 && finished(m) >= accepted) return m;
    if (now() > deadline) throw new Error('the queue did not drain in 30 minutes');
    await sleep(100);  // a benchmark polling the server's own gauges
  }
}

// --- what it measures at a checkpoint ------------------------------------------------
// Objects and bytes under `dir`, and objects per area ("tables",
// "__manifest/tree", "_control/runs", ...).
function walk(dir, rel = '', out = { objects: 0, bytes: 0, areas: {} }) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, e.name);
    const key = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) {
      walk(full, key, out);
    } else if (e.isFile()) {
      out.objects++;
      out.bytes += fs.statSync(full).size;
      const parts = key.split('/');
      const area = ['_control', '__manifest'].includes(parts[0]) && parts.length > 2
        ? `${parts[0]}/${parts[1]}` : parts[0];
      out.areas[area] = (out.areas[area] ?? 0) + 1;
    }
  }
  return out;
}
function rssMiB(field) {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${server.pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : -1;
}
let probes = 0;
async function measure(label, expectedRows, rate) {
  expectedRows += probes;  // the probes of earlier checkpoints
  const scans = [];
  let rows = 0;
  for (let i = 0; i < 3; i++) {
    const t0 = now();
    const r = await call('GET', '/v1/tables/events/rows?limit=1000000000');
    scans.push(now() - t0);
    rows = r.text.split('\n').filter((l) => l.length > 0).length;
  }
  scans.sort((a, b) => a - b);
  const loads = [];
  for (let i = 0; i < 5; i++) {
    const t0 = now();
    const id = await submit(-1 - probes, `probe-${probes}`);
    probes++;
    for (;;) {  // bounded by the run's own end: it succeeds or fails
      const r = await call('GET', `/v1/runs/${id}`);
      if (r.json.state === 'succeeded') break;
      if (r.json.state === 'failed' || r.json.state === 'cancelled') throw new Error(`probe: ${r.text}`);
      await sleep(2);
    }
    loads.push(now() - t0);
  }
  const m = await metrics();
  const { objects, bytes, areas } = walk(root);
  const failed = Object.entries(m).filter(([k]) => k.startsWith('loam_runs_finished_total') &&
    !k.includes('succeeded')).reduce((s, [, v]) => s + v, 0);
  console.log(`${label.padEnd(12)} scan ${scans[1].toFixed(1).padStart(7)} ms (${rows} rows) | ` +
    `one-row run ${(loads.reduce((a, b) => a + b) / loads.length).toFixed(1).padStart(6)} ms | ` +
    `fragments ${m['loam_table_fragments{table="events"}'] ?? '-'} | objects ${objects} ${bytes} B | ` +
    `RSS ${rssMiB('VmRSS')} MiB (peak ${rssMiB('VmHWM')}) | ${rate.toFixed(1)} runs/s | ` +
    `failed ${failed} | compactions ${m['loam_compaction_total{what="tables"}'] ?? 0}`);
  console.log(`             objects by area: ${Object.entries(areas).sort()
    .map(([a, n]) => `${a} ${n}`).join(', ')}`);
  if (rows !== expectedRows) {
    throw new Error(`the table holds ${rows} rows, not ${expectedRows}: a run lost or doubled`);
  }
}

console.log(`soak over HTTP: ${root}, ${opt.clients} clients, window ${opt.windowSeconds} s, ` +
  `compaction every ${opt.compactionIntervalSeconds} s, retention every ${opt.retentionIntervalSeconds} s`);
let done = 0;
for (const checkpoint of opt.checkpoints) {
  const t0 = now();
  await submitRange(done, checkpoint);
  await drain();
  const rate = (checkpoint - done) / ((now() - t0) / 1000);
  done = checkpoint;
  await measure(`${checkpoint} runs`, checkpoint, rate);
  // Settled: after two more compaction passes over the drained table.
  await sleep(2500 * opt.compactionIntervalSeconds);
  await measure('  settled', checkpoint, rate);
}
// Idle past the window and a retention pass.
await sleep(1000 * (opt.windowSeconds + 2 * opt.retentionIntervalSeconds + 10));
await measure('idle', done, 0);
server.kill('SIGTERM');
await new Promise((r) => server.on('exit', r));
fs.rmSync(work, { recursive: true, force: true });
