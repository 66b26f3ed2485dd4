// The table bench/readiness prints (and docs/benchmarks.md records).
import os from 'node:os';

export function percentile(values, p) {
  if (values.length === 0) return NaN;
  const v = [...values].sort((a, b) => a - b);
  return v[Math.min(v.length - 1, Math.ceil((p / 100) * v.length) - 1)];
}

const ms = (x) => (Number.isNaN(x) ? '—' : x >= 10_000 ? `${(x / 1000).toFixed(1)} s` : `${x.toFixed(x < 10 ? 2 : 0)} ms`);
const mib = (b) => (b / 1048576).toFixed(1);
const at = (iso) => (iso ? Date.parse(iso) : NaN);  // RFC 3339 with microseconds: ms precision

const SIZE_CLASSES = [['≤ 16 KiB', 16 << 10], ['≤ 1 MiB', 1 << 20], ['≤ 10 MiB', 10 << 20], ['≤ 100 MiB', 100 << 20]];

export function printReport({ opt, phases, stats, submissions, runs, outcome, servers, faults, loadSeconds }) {
  const line = (k, v) => console.log(`| ${k} | ${v} |`);
  console.log(`\nbench/readiness — backend ${opt.backend}, ${opt.processes} process(es) × ${opt.workers} workers, ` +
    `${opt.clients} clients, profile ${opt.profile}${opt.faults ? ', faults on' : ''}, ${new Date().toISOString().slice(0, 10)}, ` +
    `${os.cpus().length} CPUs\n`);
  console.log('| figure | value |\n|---|---|');
  for (const p of phases) {
    const subs = submissions.slice(p.subFrom, p.subTo);
    if (p.alone) {
      const r = subs[0]?.run;
      const t = r?.timings?.finishedAt ? at(r.timings.finishedAt) - at(r.timings.submittedAt) : NaN;
      line(p.name, `${mib(subs[0]?.bytes ?? 0)} MiB, ${r?.state ?? 'not accepted'}, submitted → terminal ${ms(t)}` +
        (r?.timings?.startedAt ? ` (validated ${ms(at(r.timings.validatedAt) - at(r.timings.startedAt))} after start)` : ''));
      continue;
    }
    const accepted = stats.accepted.slice(p.from, p.to);
    const secs = (p.t1 - p.t0) / 1000;
    const bytes = subs.filter((s) => s.runIds.size).reduce((a, s) => a + s.bytes, 0);
    line(`${p.name}: offered / accepted`, `${(subs.length / secs).toFixed(1)} / ${(accepted.length / secs).toFixed(1)} submissions/s, ${(bytes / 1048576 / secs).toFixed(1)} MiB/s accepted`);
    line(`${p.name}: acceptance p50 / p95 / p99 / max`, [50, 95, 99, 100].map((q) => ms(percentile(accepted, q))).join(' / '));
    line(`${p.name}: 429 answers`, p.r429);
    const started = subs.map((s) => s.run).filter((r) => r?.timings?.startedAt);
    const q2s = started.map((r) => at(r.timings.startedAt) - at(r.timings.submittedAt));
    line(`${p.name}: queue-to-start p50 / p95 / p99`, [50, 95, 99].map((q) => ms(percentile(q2s, q))).join(' / '));
  }
  for (const s of submissions.filter((x) => x.label === 'during the load')) {
    const r = s.run;
    const t = r?.timings?.finishedAt ? at(r.timings.finishedAt) - at(r.timings.submittedAt) : NaN;
    line(`one ${mib(s.bytes)} MiB CSV append during the load`, `${r?.state ?? 'not accepted'}, submitted → terminal ${ms(t)}`);
  }
  let lo = 0;
  for (const [name, hi] of SIZE_CLASSES) {
    const t = submissions.filter((s) => s.run?.timings?.finishedAt && s.bytes > lo && s.bytes <= hi)
      .map((s) => at(s.run.timings.finishedAt) - at(s.run.timings.submittedAt));
    if (t.length) {
      const within = t.filter((x) => x <= 300_000).length / t.length * 100;
      line(`terminal time ${name} (${t.length} runs) p50 / p99 / within 5 min`, `${ms(percentile(t, 50))} / ${ms(percentile(t, 99))} / ${within.toFixed(1)} %`);
    }
    lo = hi;
  }
  if (opt.profile !== 'mix') {
    const ok = submissions.filter((s) => s.run?.state === 'succeeded' && !s.label);
    const first = Math.min(...ok.map((s) => at(s.run.timings.submittedAt)));
    const last = Math.max(...ok.map((s) => at(s.run.timings.finishedAt)));
    const secs = (last - first) / 1000;
    line('commits/s (succeeded runs ÷ first submission to last finish)', (ok.length / secs).toFixed(1));
    line('MiB/s committed', (ok.reduce((a, s) => a + s.bytes, 0) / 1048576 / secs).toFixed(1));
    line('manifest commits with runs (per second over the same span; runs per commit)',
      `${outcome.runCommits} (${(outcome.runCommits / secs).toFixed(1)}/s; ${(ok.length / Math.max(outcome.runCommits, 1)).toFixed(1)})`);
  }
  if (stats.retryAfterGiven.length) {
    line('Retry-After given p50 / max', `${ms(percentile(stats.retryAfterGiven, 50))} / ${ms(percentile(stats.retryAfterGiven, 100))}`);
    line('first Retry-After given to a request p50 / p95', `${ms(percentile(stats.firstRetryAfter, 50))} / ${ms(percentile(stats.firstRetryAfter, 95))}`);
    line('wait actually needed (first 429 → accepted) p50 / p95', `${ms(percentile(stats.retryNeeded, 50))} / ${ms(percentile(stats.retryNeeded, 95))}`);
    line('retries after Retry-After accepted at once', `${stats.firstRetryAccepted} of ${stats.retriesAfter429}`);
    line('429 answers per refused request p50 / max', `${percentile(stats.refusalsPerRequest, 50)} / ${percentile(stats.refusalsPerRequest, 100)}`);
    line('429 answers by limit', JSON.stringify(stats.limits429));
  }
  line('runs by state', JSON.stringify(outcome.states));
  line('failed runs by cause', JSON.stringify(outcome.failures));
  if (Object.keys(outcome.refused).length) line('refused submissions', JSON.stringify(outcome.refused));
  line('rows checked in tables', outcome.rows);
  line('duplicate runs or commits', outcome.duplicates);
  line('lost runs (accepted, never terminal)', outcome.lost);
  line('heads verify', outcome.headsVerify);
  line('staging objects left after the cleaner', outcome.stagingLeft);
  if (stats.killedWriterTemps) line('temp files of killed writers (removed after 1 h)', stats.killedWriterTemps);
  if (stats.unclaimedStaging) line('uploads no run claimed (left to the staging sweeper)', stats.unclaimedStaging.size);
  line('cleanup backlog max age', `${stats.backlog.toFixed(1)} s`);
  line('connection errors retried', stats.connectionErrors);
  if (stats.console) {
    const c = stats.console;
    line('/console/ + app.js during the overload (1 s timeout)', `${c.probes - c.failures} of ${c.probes} answered, max ${c.maxMs.toFixed(0)} ms`);
  }
  if (stats.floods) {
    const f = stats.floods;
    line('/healthz during the floods (1 s timeout)', `${f.probe.probes - f.probe.failures} of ${f.probe.probes} answered, max ${f.probe.maxMs.toFixed(0)} ms`);
    line('idle flood sockets closed by the server', `${f.idleClosedByServer} of 1024`);
    line('flood upload PUTs by answer', `${JSON.stringify(f.uploadAnswers)}, ${f.uploadsCutOff} cut off unanswered`);
  }
  if (opt.faults) {
    line('serve processes SIGKILLed and restarted', faults.kills);
    line('revoke / drop at manifest version', `${outcome.revokeVersion ?? '—'} / ${faults.dropVersion ?? '—'}`);
  }
  line('peak RSS per process', servers.map((s) => `${mib(s.rss)} MiB`).join(', '));
  line('load phase', `${loadSeconds.toFixed(0)} s, ${submissions.length} submissions, ${mib(submissions.reduce((a, s) => a + s.bytes, 0))} MiB offered`);
  if (outcome.problems.length) {
    console.log(`\n${outcome.problems.length} PROBLEMS:`);
    for (const p of outcome.problems.slice(0, 40)) console.log(`  ${p}`);
  } else {
    console.log('\nall checks passed');
  }
}
