// Overview: the tables and pipelines the caller may see, the latest runs,
// the queue, and a form that creates a pipeline.
import { get, postJson, enc } from './api.js';
import { h, table, tableLink, pipelineLink, runLink, when, stateBadge, problemBox, field, newKey,
  bytes } from './dom.js';

export async function overviewPage() {
  const out = [h('h1', {}, 'Overview')];
  let tables = [];
  try {
    const [t, p, r, u] = await Promise.all([get('/v1/tables?limit=1000'), get('/v1/pipelines?limit=1000'),
      get('/v1/runs?limit=20'), get('/v1/usage')]);
    tables = t.tables;
    out.push(
      table('Tables', ['Table', 'Rows', 'Version', 'Key'], t.tables.map((x) => [
        tableLink(x.name), x.rowCount, x.version, x.keys.join(', ')])),
      table('Pipelines', ['Pipeline', 'Table', 'Mode', 'Format', 'State'], p.pipelines.map((x) => [
        pipelineLink(x.id, x.name), tableLink(x.table), x.mode ?? 'append', x.format,
        x.paused ? 'paused' : 'active'])),
      table('Recent runs', ['Run', 'Table', 'State', 'Submitted', 'By', 'Rows read'], r.runs.map((x) => [
        runLink(x.id), tableLink(x.table), stateBadge(x.state), when(x.submittedAt), x.submittedBy,
        x.counters.rowsRead])),
      h('p', { id: 'queue' }, `Queue: ${u.queue.runs} of ${u.queue.maxRuns} runs, `,
        `${bytes(u.queue.bytes)} of ${bytes(u.queue.maxBytes)}.`));
  } catch (err) {
    out.push(problemBox(err));
  }
  out.push(newPipelineForm(tables));
  return out;
}

// POST /v1/pipelines with one Idempotency-Key per form shown: a form sent
// again (after a lost answer) does not make a second pipeline.
function newPipelineForm(tables) {
  let key = newKey();
  const name = h('input', { id: 'pipeline-name', required: true, autocomplete: 'off' });
  const tableSelect = h('select', { id: 'pipeline-table', required: true },
    tables.map((t) => h('option', { value: t.name }, t.name)));
  const mode = h('select', { id: 'pipeline-mode' },
    ['append', 'upsert', 'replace'].map((m) => h('option', { value: m }, m)));
  const format = h('select', { id: 'pipeline-format' },
    ['csv', 'jsonl'].map((m) => h('option', { value: m }, m)));
  const keys = h('input', { id: 'pipeline-keys', autocomplete: 'off' });
  const status = h('div', { 'aria-live': 'polite' });
  const submit = async (e) => {
    e.preventDefault();
    const spec = { name: name.value.trim(), table: tableSelect.value, mode: mode.value, format: format.value };
    const keyColumns = keys.value.split(',').map((k) => k.trim()).filter((k) => k);
    if (keyColumns.length > 0) spec.keyColumns = keyColumns;
    try {
      const r = await postJson('/v1/pipelines', spec, { ok: [201], headers: { 'idempotency-key': key } });
      if (!location.hash || location.hash === '#/') location.hash = `#/pipelines/${enc(r.json.id)}`;
    } catch (err) {
      if (!err.transient) key = newKey();  // refused: a corrected form is a new request
      status.replaceChildren(problemBox(err));
    }
  };
  return h('section', { 'aria-labelledby': 'new-pipeline' },
    h('h2', { id: 'new-pipeline' }, 'New pipeline'),
    h('form', { onsubmit: submit },
      field('Name', name), field('Table', tableSelect), field('Mode', mode), field('Format', format),
      field('Key columns', keys, 'upsert: the table\'s key, comma-separated (empty: the declared key)'),
      h('button', { type: 'submit' }, 'Create pipeline')),
    status);
}
