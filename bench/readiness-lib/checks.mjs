// The end-of-run checks of bench/readiness, made from outside through the
// HTTP API and the `loam` CLI: every accepted run terminal exactly once, every
// succeeded run's rows in its table exactly once (and no other run's), no
// commit after a revoke or a drop on that table, `heads verify` clean, one
// run_commit per succeeded run in a linear journal, no staging left behind.
import { ROW_ID_SPAN } from './workload.mjs';

const TERMINAL = ['succeeded', 'failed', 'partial', 'cancelled'];

export async function checkOutcome({ submissions, runs, faults, staging, loam, call, owner, stats }) {
  const problems = [];
  // A 5xx other than 503 (a store fault) is a server bug; a submission the
  // client gave up on is a lost submission.
  for (const e of stats.internalErrors.slice(0, 5)) problems.push(`server error: ${e}`);
  for (const e of stats.clientErrors.slice(0, 5)) problems.push(`submission abandoned: ${e}`);
  const out = { problems, duplicates: 0, lost: 0, states: {}, refused: {}, failures: {} };
  // Runs per idempotency key: one, whatever the retries and dropped answers.
  for (const s of submissions) {
    if (s.refused) {
      out.refused[s.refused] = (out.refused[s.refused] ?? 0) + 1;
      // Refusals are expected only for the revoked principal and the dropped table.
      if (s.table !== 'guarded' && s.table !== 'doomed') {
        problems.push(`submission ${s.key} (${s.kind}) refused: ${s.refused}`);
      }
    }
    if (s.runIds.size > 1) { out.duplicates++; problems.push(`key ${s.key}: runs ${[...s.runIds]}`); }
    for (const id of s.runIds) {
      const run = runs.get(id);
      if (!run || run.lost || !TERMINAL.includes(run.state)) {
        out.lost++;
        problems.push(`run ${id} (${s.key}) not terminal: ${JSON.stringify(run)}`);
        continue;
      }
      s.run = run;
      out.states[run.state] = (out.states[run.state] ?? 0) + 1;
      if (run.state === 'failed') {
        const why = `${s.invalid ? 'invalid input' : s.table === 'doomed' || s.table === 'guarded' ? s.table : 'valid input'}: ${run.errorCode}`;
        out.failures[why] = (out.failures[why] ?? 0) + 1;
        // Valid input fails only on its table's drop or its grant's revoke.
        if (!s.invalid && s.table !== 'doomed' && s.table !== 'guarded') {
          problems.push(`valid input ${s.key} (${s.kind}) failed: ${run.errorCode} ${run.error}`);
        }
        if (!s.invalid && process.env.LOAM_READINESS_VERBOSE) console.error(`${s.key} ${s.kind}: ${run.error}`);
      }
      if (s.invalid && run.state === 'succeeded') problems.push(`invalid input ${s.key} succeeded`);
    }
  }
  // The journal: linear, and exactly one run_commit per succeeded run.
  const log = JSON.parse(loam('--json', 'log'));
  const byCommit = new Map(log.map((c) => [c.commit, c]));
  for (let i = 0; i + 1 < log.length; i++) {
    const p = log[i].parents;
    if (p.length !== 1 || p[0] !== log[i + 1].commit) {
      problems.push(`history not linear at manifest version ${log[i].manifestVersion}`);
      break;
    }
  }
  const commitsPerRun = new Map();
  let runCommits = 0;  // manifest commits carrying runs
  for (const c of log) {
    const ids = c.runIds ?? (c.runId ? [c.runId] : []);
    if (ids.length > 0) runCommits++;
    for (const id of ids) {
      commitsPerRun.set(id, (commitsPerRun.get(id) ?? 0) + 1);
    }
  }
  out.runCommits = runCommits;
  for (const s of submissions) {
    if (!s.run) continue;
    const committed = s.run.state === 'succeeded' && !s.validationOnly ? 1 : 0;
    const n = commitsPerRun.get(s.run.id) ?? 0;
    if (n !== committed) {
      if (n > 1) out.duplicates++;
      problems.push(`run ${s.run.id} (${s.run.state}): ${n} run_commit entries, want ${committed}`);
    }
  }
  // No commit on a table after its grant was revoked or after it was dropped.
  if (faults.revokedAt) {
    const h = await call('GET', '/v1/tables/guarded/history', { sub: owner });
    const revokes = (h.json?.history ?? []).filter((e) => e.event === 'table_grant' && e.detail === 'loader-r: revoked');
    const last = revokes.at(-1);
    const v = last ? byCommit.get(last.commitId)?.manifestVersion : undefined;
    if (v === undefined) problems.push('the revocation is not in the history');
    for (const s of submissions) {
      if (s.table === 'guarded' && s.run?.commit && v !== undefined && s.run.commit.manifestVersion > v) {
        problems.push(`run ${s.run.id} committed at ${s.run.commit.manifestVersion}, after the revoke at ${v}`);
      }
    }
    out.revokeVersion = v;
  }
  if (faults.droppedAt) {
    const v = faults.dropVersion;
    for (const s of submissions) {
      if (s.table === 'doomed' && s.run?.commit && s.run.commit.manifestVersion > v) {
        problems.push(`run ${s.run.id} committed on the dropped table after the drop`);
      }
    }
    out.dropVersion = v;
  }
  // Rows: each succeeded run's exactly once, nobody else's.
  out.rows = 0;
  for (const table of ['events', 'events_json', 'accounts', 'guarded', 'snapshot']) {
    const mine = submissions.filter((s) => s.table === table);
    let expected = mine.filter((s) => s.run?.state === 'succeeded' && !s.validationOnly);
    if (table === 'snapshot') {  // replace: the last committed replace is the table
      expected.sort((a, b) => b.run.commit.manifestVersion - a.run.commit.manifestVersion);
      expected = expected.slice(0, 1);
    }
    // A streamed answer cut short (a store fault mid-scan; the server ends
    // the stream without its last chunk) is read again, as a client would.
    let want;
    let r;
    for (let attempt = 1; ; attempt++) {
      want = new Map(expected.map((s) => [s.n, new Uint8Array(s.rows)]));
      const found = [];
      try {
        r = await tallyRows(call, owner, table, want, found);
      } catch (e) {
        if (attempt < 10) continue;
        problems.push(`${table} rows: read cut short ${attempt} times (${e.message})`);
        r = 0;
        break;
      }
      problems.push(...found);
      break;
    }
    out.rows += r;
    for (const [n, seen] of want) {
      const missing = seen.reduce((m, b) => m + (b === 0), 0);
      if (missing) problems.push(`${table}: submission ${n} misses ${missing} of ${seen.length} rows`);
    }
  }
  // The durable heads agree with the journal.
  try {
    loam('heads', 'verify');
    out.headsVerify = 'clean';
  } catch (e) {
    out.headsVerify = 'PROBLEMS';
    problems.push(`heads verify: ${e.stdout ?? e.message}`);
  }
  out.stagingLeft = staging.length;
  if (staging.length) problems.push(`${staging.length} staging objects left, e.g. ${staging[0]}`);
  out.ok = problems.length === 0;
  return out;
}

// Streams GET /v1/tables/{table}/rows, marking each row's (submission, row)
// in `want`; a row seen twice or not wanted is a problem. Returns rows read.
async function tallyRows(call, owner, table, want, problems) {
  const probe = await call('GET', `/v1/tables/${table}`, { sub: owner });
  if (probe.status !== 200) { problems.push(`${table}: ${probe.status}`); return 0; }
  const res = await fetch(`${call.base()}/v1/tables/${table}/rows`, {
    headers: { authorization: `Bearer ${call.token(owner)}` },
  });
  if (res.status >= 500) throw new Error(`${table} rows: ${res.status}`);  // read again
  if (res.status !== 200) { problems.push(`${table} rows: ${res.status}`); return 0; }
  const decoder = new TextDecoder();
  let rest = '';
  let rows = 0;
  let reported = 0;
  const mark = (line) => {
    const m = /"id":(\d+)/.exec(line);
    if (!m) return;
    rows++;
    const id = Number(m[1]);
    const seen = want.get(Math.floor(id / ROW_ID_SPAN));
    const i = id % ROW_ID_SPAN;
    if (!seen || i >= seen.length) {
      if (reported++ < 5) problems.push(`${table}: row ${id} belongs to no succeeded run`);
    } else if (seen[i]++ > 0 && reported++ < 5) {
      problems.push(`${table}: row ${id} twice`);
    }
  };
  for await (const chunk of res.body) {
    const text = rest + decoder.decode(chunk, { stream: true });
    const lines = text.split('\n');
    rest = lines.pop();
    for (const line of lines) mark(line);
  }
  if (rest) mark(rest);
  return rows;
}
