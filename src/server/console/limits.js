// Limits and usage: what admission counts for the caller next to the
// server's limits.
import { get } from './api.js';
import { h, table, facts, bytes, problemBox } from './dom.js';

export async function limitsPage() {
  const out = [h('h1', {}, 'Limits and usage')];
  try {
    const [u, limits] = await Promise.all([get('/v1/usage'), get('/v1/limits')]);
    out.push(
      h('h2', {}, `Usage of ${u.principal}`),
      facts([['Queue', `${u.queue.runs} of ${u.queue.maxRuns} runs, ${bytes(u.queue.bytes)} of ${bytes(u.queue.maxBytes)}`],
        ['Requests', `${u.requests.tokens} of a burst of ${u.requests.burst}, ${u.requests.perSecond} per second`],
        ['Uploads', `${u.uploads.outstanding} outstanding of ${u.uploads.maxOutstanding}, ` +
          `${u.uploads.receiving} receiving of ${u.uploads.maxReceiving}`],
        ['Tiny runs', `below ${bytes(u.tinyRuns.belowBytes)}: ${u.tinyRuns.perMinute} per minute per pipeline`]]),
      table('Pipelines', ['Pipeline', 'Active runs', 'Tiny runs last minute'],
        Object.entries(u.pipelines).map(([id, p]) => [id, p.activeRuns, p.tinyRunsLastMinute])),
      h('h2', {}, 'Limits'),
      table('Server limits', ['Limit', 'Value'], Object.entries(limits).map(([k, v]) => [k,
        typeof v === 'object' ? JSON.stringify(v) : String(v)])));
  } catch (err) {
    out.push(problemBox(err));
  }
  return out;
}
