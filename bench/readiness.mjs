// The readiness harness (bench/readiness runs it; docs/benchmarks.md records
// its tables). Starts real `loam serve` processes on a fresh workspace, drives
// a production-shaped mix through the HTTP API only, injects faults, then
// checks from outside that every accepted run ended exactly once and every
// succeeded run's rows are in its table exactly once. Never part of CI;
// every request targets loopback and every loop is bounded in count or time.
import { spawn, execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';

import { parseOptions, MIX, pick, sizeOf, makeRows } from './readiness-lib/workload.mjs';
import { percentile, printReport } from './readiness-lib/report.mjs';
import { checkOutcome } from './readiness-lib/checks.mjs';
import { startFloods } from './readiness-lib/floods.mjs';
import { startProbe } from './readiness-lib/probe.mjs';

const opt = parseOptions(process.argv.slice(2));
const LOAM = process.env.LOAM_BINARY ?? path.resolve('build/release/src/cli/loam');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();

// --- the workspace and its servers ------------------------------------------------
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'loam-readiness-'));
const root = opt.backend === 's3'
  ? `s3://${process.env.LOAM_S3_TEST_BUCKET ?? 'loam-test'}/readiness-${Date.now()}`
  : path.join(work, 'ws');
const loam = (...a) => execFileSync(LOAM, ['--root', root, ...a], { encoding: 'utf8', maxBuffer: 1 << 30 });
loam('init');
const owner = JSON.parse(loam('info', '--json')).owner;
const secretFile = path.join(work, 'secret');
fs.writeFileSync(secretFile, crypto.randomBytes(24).toString('hex'));
const token = (sub) => loam('token', '--secret-file', secretFile, '--sub', sub, '--ttl', '4h').trim();
const configFile = path.join(work, 'config.json');
fs.writeFileSync(configFile, JSON.stringify({
  workers: opt.workers,
  ...(opt.smallWorkers >= 0 ? { smallRunWorkers: opt.smallWorkers } : {}),
  ...(opt.inlineRecordBytes >= 0 ? { inlineRecordBytes: opt.inlineRecordBytes } : {}),
  leaseSeconds: opt.leaseSeconds,
  accessLog: false,
  handlerThreads: 32,
  // Every client of the load shares 127.0.0.1; the floods come from other
  // loopback addresses and meet this cap.
  maxConnectionsPerClient: Math.max(64, opt.clients * 2),
  // The scale profiles measure the workers, not admission: nothing is refused.
  admission: opt.admission === 'default' ? {} : {
    tinyRunsPerMinute: 1_000_000, principalRequestsPerSecond: 10_000, principalBurst: 10_000,
    maxQueueWaitSeconds: 86_400, maxQueuedRuns: 100_000, maxConcurrentRunsPerPipeline: 100_000,
  },
}));

async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const servers = [];  // {port, url, child, rss, kills}
// Whatever ends this process (a failed check, a harness bug), no serve
// process outlives it.
process.on('exit', () => { for (const s of servers) s.child?.kill('SIGKILL'); });
async function startServer(s) {
  const args = ['--root', root, 'serve', '--listen', `127.0.0.1:${s.port}`, '--config', configFile,
    '--auth-hs256-secret-file', secretFile];
  if (opt.storeFaults > 0) args.push('--test-store-faults', String(opt.storeFaults));
  if (opt.storeLatency) args.push('--test-store-latency', opt.storeLatency);
  // Its log (warnings of injected faults, takeovers) goes to a file.
  s.log ??= fs.openSync(path.join(work, `serve-${s.port}.log`), 'a');
  s.child = spawn(LOAM, args, { stdio: ['ignore', 'pipe', s.log] });
  s.exited = new Promise((r) => s.child.on('exit', r));
  await new Promise((resolve, reject) => {
    let out = '';
    s.child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('listening on')) resolve();
    });
    s.child.on('exit', (code) => reject(new Error(`loam serve exited ${code} before listening`)));
  });
}
for (let i = 0; i < opt.processes; i++) {
  const s = { port: await freePort(), rss: 0, kills: 0 };
  s.url = `http://127.0.0.1:${s.port}`;
  await startServer(s);
  servers.push(s);
}
const rssTimer = setInterval(() => {
  for (const s of servers) {
    try {
      const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${s.child.pid}/status`, 'utf8'));
      if (m) s.rss = Math.max(s.rss, Number(m[1]) * 1024);
    } catch { /* between a kill and its restart */ }
  }
}, 500);

// --- HTTP, following the retry contract ---------------------------------------------
const stats = { attempts: 0, accepted: [], rejected429: 0, retryAfterGiven: [], retryNeeded: [],
  firstRetryAfter: [], refusalsPerRequest: [], limits429: {},
  firstRetryAccepted: 0, retriesAfter429: 0, connectionErrors: 0, serverErrors: 0, backlog: 0, internalErrors: [], clientErrors: [] };
let nextServer = 0;
const serverFor = (hint) => servers[(hint ?? nextServer++) % servers.length];

// One request; retried on 429 (after Retry-After), 5xx and broken connections
// (jittered backoff), always the same method, body and headers. Bounded by
// a deadline. Returns {status, json, ms (of the answering attempt)}.
async function call(method, pathOrUrl, { body, headers = {}, sub = 'loader-a', hint, raw } = {}) {
  const deadline = now() + 10 * 60_000;
  let backoff = 100;
  let first429 = null;
  let after429 = false;
  let refusals = 0;
  // A 429 is retried on the same server, which keeps the request's place in
  // its waiting line; trouble (a broken connection, a 5xx) moves to the next.
  let moves = 0;
  let s = serverFor(hint);
  for (let attempt = 0; ; attempt++) {
    if (attempt > 0 && !after429) s = serverFor(hint === undefined ? undefined : hint + ++moves);
    const url = pathOrUrl.startsWith('http') ? pathOrUrl : s.url + pathOrUrl;
    const h = raw ? headers : { authorization: `Bearer ${tokens[sub]}`, ...headers };
    const t0 = now();
    let res;
    let text;
    try {
      stats.attempts++;
      res = await fetch(url, { method, headers: h, body });
      text = await res.text();  // a server killed mid-answer fails here
    } catch {
      stats.connectionErrors++;
      after429 = false;  // the next attempt moves to another server
      if (now() > deadline) throw new Error(`${method} ${pathOrUrl}: no answer before the deadline`);
      await sleep(backoff / 2 + Math.random() * backoff / 2);
      backoff = Math.min(backoff * 2, 5000);
      continue;
    }
    const ms = now() - t0;
    if (after429) {
      stats.retriesAfter429++;
      if (res.status !== 429) stats.firstRetryAccepted++;
      after429 = false;
    }
    if (res.status === 429) {
      stats.rejected429++;
      // The body's retryAfterMillis is exact; the header rounds up to seconds.
      let wait = Number(res.headers.get('retry-after') ?? '1') * 1000;
      try { wait = JSON.parse(text).retryAfterMillis ?? wait; } catch { /* the header's */ }
      stats.retryAfterGiven.push(wait);
      if (first429 === null) stats.firstRetryAfter.push(wait);
      refusals++;
      let limit = 'unnamed';
      try { limit = JSON.parse(text).limit ?? limit; } catch { /* not a problem document */ }
      stats.limits429[limit] = (stats.limits429[limit] ?? 0) + 1;
      first429 ??= now();
      after429 = true;
      if (now() + wait > deadline) {
        stats.refusalsPerRequest.push(refusals);
        throw new Error(`${method} ${pathOrUrl}: overloaded past the deadline`);
      }
      await sleep(wait);
      continue;
    }
    if (res.status === 409 && process.env.LOAM_READINESS_VERBOSE) console.error(`${method} ${pathOrUrl}: 409 ${text.slice(0, 300)}`);
    if (res.status >= 500 && res.status !== 503) stats.internalErrors.push(`${method} ${pathOrUrl}: ${res.status} ${text.slice(0, 200)}`);
    if (res.status >= 500 && stats.serverErrors++ < 5) console.error(`${method} ${pathOrUrl}: ${res.status} ${text.slice(0, 300)}`);
    // 5xx, and 409 with Retry-After (request_in_flight: the first attempt
    // is still creating the run): the same request again.
    if ((res.status >= 500 || (res.status === 409 && res.headers.get('retry-after'))) && now() < deadline) {
      await sleep(backoff / 2 + Math.random() * backoff / 2);
      backoff = Math.min(backoff * 2, 5000);
      continue;
    }
    if (first429 !== null) {
      stats.retryNeeded.push(now() - first429);
      stats.refusalsPerRequest.push(refusals);
    }
    let json;
    try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
    return { status: res.status, json, ms, headers: res.headers, text };
  }
}

// --- tables, grants and pipelines ---------------------------------------------------
const tokens = {};
call.base = () => serverFor().url;
call.token = (sub) => tokens[sub];
for (const sub of [owner, 'loader-a', 'loader-b', 'loader-c', 'loader-r']) tokens[sub] = token(sub);
const columns = [
  { name: 'id', type: 'int64', nullable: false },
  { name: 'amount', type: 'decimal(12,2)' },
  { name: 'note', type: 'string' },
];
const pipelines = {};
for (const kind of MIX) {
  if (!pipelines[kind.table]) {
    const keys = opt.unkeyed && kind.mode === 'append' ? [] : ['id'];
    const t = await call('POST', '/v1/tables', { sub: owner, body: JSON.stringify({ name: kind.table, columns, keys }), headers: { 'content-type': 'application/json' } });
    if (t.status !== 201) throw new Error(`create table ${kind.table}: ${t.status} ${t.text}`);
    for (const sub of ['loader-a', 'loader-b', 'loader-c', 'loader-r']) {
      if ((sub === 'loader-r') !== (kind.table === 'guarded')) continue;
      const role = kind.mode === 'replace' ? 'admin' : 'writer';  // replace needs admin
      const g = await call('PUT', `/v1/tables/${kind.table}/grants/${sub}`, { sub: owner, body: JSON.stringify({ role }), headers: { 'content-type': 'application/json' } });
      if (g.status !== 200 && g.status !== 204) throw new Error(`grant: ${g.status} ${g.text}`);
    }
  }
  for (let p = 0; p < (opt.pipelines || kind.pipelines); p++) {
    const spec = { name: `${kind.name}-${p}`, table: kind.table, mode: kind.mode, format: kind.format };
    if (kind.mode === 'upsert') spec.keyColumns = ['id'];
    const r = await call('POST', '/v1/pipelines', { sub: owner, body: JSON.stringify(spec), headers: { 'content-type': 'application/json' } });
    if (r.status !== 201) throw new Error(`pipeline ${spec.name}: ${r.status} ${r.text}`);
    (pipelines[kind.name] ??= []).push(r.json.id);
  }
}

// --- one submission -----------------------------------------------------------------
const submissions = [];  // {n, kind, rows, bytes, key, runIds:Set, outcome, ...}
let nextSubmission = 0;

// `only`: {bytes} for one plain CSV append of that size.
async function submitOne(clientIndex, only) {
  const n = nextSubmission++;
  const kind = only ? { ...MIX[0] } : pick(opt, n);
  const sub = kind.table === 'guarded' ? 'loader-r' : ['loader-a', 'loader-b', 'loader-c'][n % 3];
  const bytesWanted = only ? only.bytes : sizeOf(opt, n);
  const { data, rows } = makeRows(kind, n, bytesWanted, kind.invalid);
  const payload = kind.gzip && !opt.inline ? zlib.gzipSync(data, { level: 1 }) : data;
  const sha256 = crypto.createHash('sha256').update(payload).digest('hex');
  const pipelineId = pipelines[kind.name][n % pipelines[kind.name].length];
  const rec = { n, kind: kind.name, table: kind.table, mode: kind.mode, rows, bytes: payload.length,
    invalid: kind.invalid, validationOnly: kind.validationOnly, key: `sub-${n}`, runIds: new Set(),
    sub, submittedAt: Date.now(), label: only?.label };
  submissions.push(rec);
  const hint = clientIndex;
  if (opt.inline && !only) return submitInline(rec, pipelineId, payload, kind, hint);
  const ticket = await call('POST', `/v1/pipelines/${pipelineId}/uploads`, { sub, hint,
    body: JSON.stringify({ size: payload.length, sha256 }), headers: { 'content-type': 'application/json' } });
  if (ticket.status !== 201) { rec.refused = `upload ${ticket.status} ${ticket.json?.code}`; return; }
  const t = ticket.json;
  const headers = { ...t.headers };
  delete headers['content-length'];
  const put = await call(t.method, t.url, { body: payload, headers, raw: true });
  // 409 (local) or 412 (RGW's if-none-match): a resend after a lost answer
  // found this client's own bytes received; the submission checks them.
  if (![200, 409, 412].includes(put.status)) { rec.refused = `put ${put.status}`; return; }
  const body = { uploads: [t.uploadId] };
  if (kind.sourceId) body.source = { id: `src-${n}` };
  if (kind.validationOnly) body.errorPolicy = 'validationOnly';
  const text = JSON.stringify(body);
  const runHeaders = { 'content-type': 'application/json', 'idempotency-key': rec.key };
  const runPath = `/v1/pipelines/${pipelineId}/runs`;
  if (kind.dropResponse) {
    // The request is sent and the answer dropped: the client cannot know
    // whether a run exists, and resends the same bytes with the same key.
    const ac = new AbortController();
    const sent = fetch(serverFor(hint).url + runPath, { method: 'POST', body: text, signal: ac.signal,
      headers: { authorization: `Bearer ${tokens[sub]}`, ...runHeaders } })
      // An answer that came before the abort is read (and dropped): a body
      // left unread fails outside any handler when its server is killed.
      .then((res) => res.text()).catch(() => {});
    setTimeout(() => ac.abort(), Math.random() * 20);
    await sent;
  }
  const r = await call('POST', runPath, { sub, hint, body: text, headers: runHeaders });
  if (r.status !== 202) { rec.refused = `run ${r.status} ${r.json?.code}`; return; }
  rec.runIds.add(r.json.id);
  stats.accepted.push(r.ms);
  if (kind.retry) {  // the same request again, as a client that lost the answer would
    const again = await call('POST', runPath, { sub, hint, body: text, headers: runHeaders });
    if (again.status === 202) rec.runIds.add(again.json.id);
  }
}

// The data in the run request itself (text/csv or application/x-ndjson).
async function submitInline(rec, pipelineId, payload, kind, hint) {
  const headers = { 'content-type': kind.format === 'csv' ? 'text/csv' : 'application/x-ndjson',
    'idempotency-key': rec.key };
  const r = await call('POST', `/v1/pipelines/${pipelineId}/runs`, { sub: rec.sub, hint, body: payload, headers });
  if (r.status !== 202) { rec.refused = `run ${r.status} ${r.json?.code}`; return; }
  rec.runIds.add(r.json.id);
  stats.accepted.push(r.ms);
}

// --- the load: open-loop arrivals at `rate`, at most `clients` at once ---------------
async function drive(rate, seconds) {
  const end = now() + seconds * 1000;
  const inFlight = new Set();
  let due = now();
  let client = 0;
  let errors = 0;
  while (now() < end) {
    if (inFlight.size >= opt.clients) { await Promise.race(inFlight); continue; }
    if ((opt.profile !== 'mix' && !opt.openLoop) || rate === Infinity) { /* closed loop: as fast as clients go */ } else {
      due += (-Math.log(1 - Math.random()) * 1000) / rate;  // Poisson arrivals
      if (due > now()) await sleep(due - now());
    }
    const p = submitOne(client++ % opt.clients).catch((e) => { errors++; stats.clientErrors.push(e.message); });
    inFlight.add(p);
    p.finally(() => inFlight.delete(p));
  }
  await Promise.all(inFlight);
  return errors;
}

// --- faults -------------------------------------------------------------------------
const faults = { kills: 0, revokedAt: null, droppedAt: null };
let killing = false;
async function killLoop() {
  killing = true;
  while (killing && (opt.killTrials === 0 || faults.kills < opt.killTrials)) {
    await sleep(opt.killEvery * (0.5 + Math.random()));
    if (!killing) break;
    const s = servers[Math.floor(Math.random() * servers.length)];
    s.child.kill('SIGKILL');
    await s.exited;
    s.kills++;
    faults.kills++;
    await startServer(s);
  }
}
async function revokeLater(ms) {
  await sleep(ms);
  const r = await call('DELETE', '/v1/tables/guarded/grants/loader-r', { sub: owner });
  faults.revokedAt = { status: r.status, at: Date.now() };
  if (r.status !== 204 && r.status !== 200) throw new Error(`the revoke answered ${r.status}`);
}
async function dropLater(ms) {
  await sleep(ms);
  faults.dropVersion = JSON.parse(loam('--json', 'table', 'drop', 'doomed')).manifestVersion;
  faults.droppedAt = Date.now();
}

// --- run ------------------------------------------------------------------------------
const started = now();
const phases = [];
const faultTasks = [];
if (opt.faults) {
  faultTasks.push(killLoop());
  faultTasks.push(revokeLater(opt.seconds * 400));
  faultTasks.push(dropLater(opt.seconds * 600));
}
// Flood tickets are the owner's: its upload caps are not the load's. A
// trickled flood body may complete (1 MiB at 8 KB/s) but is never submitted:
// the staging sweeper removes it after its grace, so the staging check
// leaves it out.
const floodUploads = new Set();
const floods = opt.slowloris > 0 ? await startFloods({
  count: opt.slowloris,
  server: servers[0],
  createTicket: async (size) => {
    const r = await call('POST', `/v1/pipelines/${Object.values(pipelines)[0][0]}/uploads`, {
      sub: owner, body: JSON.stringify({ size }), headers: { 'content-type': 'application/json' } });
    if (r.status === 201) floodUploads.add(r.json.uploadId);
    return r.status === 201 ? r.json : null;
  },
}) : null;
const backlogTimer = setInterval(async () => {
  try {
    const m = await (await fetch(serverFor().url + '/metrics')).text();
    const v = /loam_cleanup_backlog_seconds (\S+)/.exec(m);
    if (v && Number.isFinite(Number(v[1]))) stats.backlog = Math.max(stats.backlog, Number(v[1]));
  } catch { /* a server being restarted */ }
}, 1000);

async function phase(name, rate, seconds) {
  const mark = { name, rate, seconds, from: stats.accepted.length, subFrom: submissions.length, t0: now(), r429: stats.rejected429 };
  mark.errors = await drive(rate, seconds);
  mark.t1 = now();
  mark.to = stats.accepted.length;
  mark.subTo = submissions.length;
  mark.r429 = stats.rejected429 - mark.r429;
  phases.push(mark);
}
if (opt.killTrials > 0) {
  // A kill run: load at the target rate until that many kills happened.
  const until = faultTasks[0];
  let done = false;
  until.then(() => { done = true; });
  while (!done) await phase('kill-trials', opt.rate, 10);
} else {
  // --large-during: one large append submitted half way through the load.
  const during = opt.largeDuring > 0
    ? sleep(opt.seconds * 500).then(() => submitOne(0, { bytes: opt.largeDuring << 20, label: 'during the load' }))
    : null;
  await phase('target', opt.rate, opt.seconds);
  await during;
  const largeMib = opt.largeDuring || 100;
  if ((opt.profile === 'mix' && opt.maxMib >= 100) || opt.largeDuring > 0) {
    // One large load on an idle server: its terminal time alone.
    await waitTerminal([...new Set(submissions.flatMap((s) => [...s.runIds]))], new Map());
    const mark = { name: `one ${largeMib} MiB CSV append alone`, from: stats.accepted.length, subFrom: submissions.length, t0: now(), r429: 0 };
    await submitOne(0, { bytes: largeMib << 20, label: 'alone' });
    const s = submissions.at(-1);
    const id = [...s.runIds][0];
    for (const end = now() + 300_000; id && now() < end;) {
      const r = await call('GET', `/v1/runs/${id}`, { sub: owner });
      if (['succeeded', 'failed', 'partial', 'cancelled'].includes(r.json?.state)) break;
      await sleep(100);
    }
    Object.assign(mark, { t1: now(), to: stats.accepted.length, subTo: submissions.length, alone: true });
    phases.push(mark);
  }
  if (opt.overload > 0) {
    // The console's files answer on the I/O threads, whatever the load.
    const probe = startProbe({ port: servers[0].port, paths: ['/console/', '/console/app.js'],
      localAddress: '127.0.0.6' });
    await phase(`${opt.overload}x overload`, opt.rate * opt.overload, opt.seconds / 2);
    probe.stop();
    stats.console = probe.stats;
    await phase('recovery', opt.rate, opt.seconds / 2);
  }
}
killing = false;
await Promise.all(faultTasks);
floods?.stop();
const loadSeconds = (now() - started) / 1000;

// Every accepted run reaches a terminal state.
const runs = new Map();
await waitTerminal([...new Set(submissions.flatMap((s) => [...s.runIds]))], runs);
// The cleaner removes the staging of terminal runs (it runs every second).
const cleanDeadline = now() + 60_000;
let staging = await listStaging();
while (staging.length > 0 && now() < cleanDeadline) {
  await sleep(1000);
  staging = await listStaging();
}
clearInterval(backlogTimer);
clearInterval(rssTimer);

const outcome = await checkOutcome({ opt, submissions, runs, faults, staging, loam, call, owner, stats });
if (stats.console?.failures > 0) {
  outcome.problems.push(`the console failed ${stats.console.failures} of ${stats.console.probes} probes during the overload`);
  outcome.ok = false;
}
if (floods) {
  stats.floods = floods.stats;
  if (floods.stats.probe.failures > 0) {
    outcome.problems.push(`/healthz failed ${floods.stats.probe.failures} of ${floods.stats.probe.probes} probes during the floods`);
    outcome.ok = false;
  }
}
printReport({ opt, phases, stats, submissions, runs, outcome, servers, faults, loadSeconds, percentile });
for (const s of servers) s.child.kill('SIGTERM');
await Promise.all(servers.map((s) => s.exited));
if (!opt.keep && outcome.ok) fs.rmSync(work, { recursive: true, force: true });
else console.log(`workspace and server logs kept in ${work}`);
process.exit(outcome.ok ? 0 : 1);

// Polls each run until it is terminal (10 minutes at most), into `runs`.
async function waitTerminal(ids, runs) {
  const deadline = now() + 10 * 60_000;
  await Promise.all(Array.from({ length: 16 }, async (_, w) => {
    for (let i = w; i < ids.length; i += 16) {
      for (;;) {
        const r = await call('GET', `/v1/runs/${ids[i]}`, { sub: owner });
        if (r.status === 200 && ['succeeded', 'failed', 'partial', 'cancelled'].includes(r.json.state)) {
          runs.set(ids[i], r.json);
          break;
        }
        if (r.status !== 200 || now() > deadline) { runs.set(ids[i], { lost: true, status: r.status }); break; }
        await sleep(200);
      }
    }
  }));
}

// Objects under the staging prefix (local: the directory; S3: a ListObjectsV2).
async function listStaging() {
  if (opt.backend === 'local') {
    const dir = path.join(root, 'ingestion-staging');
    if (!fs.existsSync(dir)) return [];
    // Temp files of writers killed mid-put are not objects (the local store
    // removes them an hour later): counted apart.
    // The cleaner may remove a directory while it is walked: walk again.
    let files;
    for (;;) {
      try {
        files = fs.readdirSync(dir, { recursive: true, withFileTypes: true })
          .filter((e) => e.isFile() && !leftForSweeper(path.join(e.path, e.name)));
        break;
      } catch (e) {
        if (e.code !== 'ENOENT') throw e;
        if (!fs.existsSync(dir)) return [];
      }
    }
    stats.killedWriterTemps = files.filter((e) => e.name.startsWith('.tmp-')).length;
    return files.filter((e) => !e.name.startsWith('.tmp-')).map((e) => e.name);
  }
  const [bucket, ...rest] = root.slice(5).split('/');
  const prefix = `${rest.join('/')}/ingestion-staging/`;
  // RGW wants the payload hash signed: that of an empty body.
  const out = execFileSync('curl', ['-sf', '--aws-sigv4', `aws:amz:${process.env.AWS_REGION ?? 'us-east-1'}:s3`,
    '-H', 'x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    '--user', `${process.env.AWS_ACCESS_KEY_ID}:${process.env.AWS_SECRET_ACCESS_KEY}`,
    `${process.env.AWS_ENDPOINT_URL}/${bucket}?list-type=2&max-keys=1000&prefix=${encodeURIComponent(prefix)}`], { encoding: 'utf8' });
  return [...out.matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => m[1]).filter((k) => !leftForSweeper(k));
}

// Staging the run cleanup does not own: a flood's upload, or one no run ever
// claimed: a request killed between staging and its claim, or (inline data
// is staged before its record, which is claimed at once by the run id the
// request would create) before its record or before that run existed; its
// retry staged again. A run's data always has its record (cleanup deletes
// the data first). The staging sweeper removes such uploads after its
// grace; they are counted apart.
function leftForSweeper(key) {
  const m = /\/uploads\/([0-9A-Z]{26})\//.exec(key);
  if (m === null) return false;
  if (floodUploads.has(m[1])) return true;
  const text = readControl(`uploads/${m[1]}.json`);
  const runId = text === null ? '' : JSON.parse(text).runId;
  const unclaimed = !runId || readControl(`runs/${runId}.json`) === null;
  if (unclaimed) (stats.unclaimedStaging ??= new Set()).add(m[1]);
  return unclaimed;
}

// The text of `_control/<name>` in the workspace, or null when it is absent.
function readControl(name) {
  try {
    if (opt.backend === 'local') return fs.readFileSync(path.join(root, '_control', name), 'utf8');
    const [bucket, ...rest] = root.slice(5).split('/');
    return execFileSync('curl', ['-sf', '--aws-sigv4', `aws:amz:${process.env.AWS_REGION ?? 'us-east-1'}:s3`,
      '-H', 'x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
      '--user', `${process.env.AWS_ACCESS_KEY_ID}:${process.env.AWS_SECRET_ACCESS_KEY}`,
      `${process.env.AWS_ENDPOINT_URL}/${bucket}/${rest.join('/')}/_control/${name}`],
    { encoding: 'utf8' });
  } catch {
    return null;
  }
}
