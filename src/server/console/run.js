// A run: its state followed live (long-poll), counters, timings, every
// error with its line and column, and revert or cancel after confirmation.
import { call, getLines, postJson, enc, sleep, ApiError } from './api.js';
import { h, fill, table, facts, when, stateBadge, problemBox, pipelineLink, tableLink, newKey,
  bytes } from './dom.js';

const TERMINAL = ['succeeded', 'failed', 'partial', 'cancelled'];

export async function runPage(id, { alive, signal }) {
  let run;
  try {
    run = (await call('GET', `/v1/runs/${enc(id)}`)).json;
  } catch (err) {
    return [h('h1', {}, `Run ${id}`), problemBox(err)];
  }
  const body = h('div', { id: 'run', 'aria-live': 'polite' });
  const errors = h('div', { id: 'run-errors' });
  const actions = h('div', { class: 'row', id: 'run-actions' });
  const status = h('div', { 'aria-live': 'assertive' });  // what an action did
  const trouble = h('div', { 'aria-live': 'polite' });    // why the page is not updating
  const show = (r) => {
    fill(body, describe(r));
    fill(actions, buttons(r, status));
    if (TERMINAL.includes(r.state) && r.counters.errorCount > 0 && !errors.hasChildNodes()) {
      showErrors(id, errors);
    }
  };
  // While the run is not terminal and this page is shown: each answer comes
  // when the run ends or after 30 s. A server whose waits are shorter (400)
  // is polled instead; a failed call is shown and tried again. Leaving the
  // page aborts the call waiting.
  async function follow() {
    let wait = '?wait=30';
    for (let pause = 1000; alive() && !TERMINAL.includes(run.state);) {
      try {
        run = (await call('GET', `/v1/runs/${enc(id)}${wait}`, { signal })).json;
        if (!alive()) return;
        fill(trouble);
        show(run);
        pause = 1000;
        if (!wait) await sleep(pause);
      } catch (err) {
        if (!alive()) return;
        if (err instanceof ApiError && err.status === 400 && wait) {
          wait = '';
          continue;
        }
        fill(trouble, problemBox(err));
        if (!err.transient) return;  // shown; reload the page to try again
        await sleep(err.retryAfterMs ?? pause);
        pause = Math.min(pause * 2, 10_000);
      }
    }
  }
  show(run);
  follow();
  return [h('h1', {}, `Run ${id}`), trouble, body, actions, status, errors];
}

function describe(r) {
  const c = r.counters;
  const t = r.timings;
  return [
    h('p', {}, 'State: ', stateBadge(r.state), r.errorCode ? ` (${r.errorCode})` : ''),
    r.error ? h('p', { class: 'problem' }, r.error) : null,
    facts([['Pipeline', r.pipelineId ? pipelineLink(r.pipelineId) : 'none (a delete)'],
      ['Table', tableLink(r.table)], ['Mode', r.mode],
      ['Submitted by', r.submittedBy], ['Input', bytes(r.inputBytes)],
      ['Validation only', r.validationOnly ? 'yes' : ''], ['Queue position', r.queuePosition],
      ['Commit', r.commit ? `${r.commit.commitId} (table version ${r.commit.tableVersion})` : ''],
      ['Cancel requested', r.cancelRequest ? `by ${r.cancelRequest.by}` : '']]),
    table('Counters', ['Rows read', 'Inserted', 'Updated', 'Unchanged', 'Deleted', 'Rejected', 'Errors'],
      [[c.rowsRead, c.inserted, c.updated, c.unchanged, c.deleted, c.rejected, c.errorCount]]),
    table('Timings', ['Submitted', 'Started', 'Validated', 'Finished'],
      [[when(t.submittedAt), when(t.startedAt), when(t.validatedAt), when(t.finishedAt)]]),
  ];
}

async function showErrors(id, el) {
  try {
    const errors = await getLines('GET', `/v1/runs/${enc(id)}/errors`);
    fill(el, table(`Errors (${errors.length})`, ['File', 'Line', 'Column', 'Code', 'Reason'],
      errors.map((e) => [e.file, e.line ?? '', e.column ?? '', e.code ?? '', e.reason])));
  } catch (err) {
    fill(el, problemBox(err));
  }
}

// Revert (a succeeded run) and cancel (a run not yet terminal), each after
// a confirmation, each under one Idempotency-Key. A cancelled run's end
// reaches the page through the long-poll already waiting on it.
function buttons(r, status) {
  const act = (what, path, question) => async () => {
    if (!window.confirm(question)) return;
    try {
      const a = await postJson(path, undefined, { ok: [200, 202], headers: { 'idempotency-key': newKey() } });
      fill(status, h('p', { class: 'notice', id: 'action-result' },
        what === 'revert' ? `Reverted: commit ${a.json.commitId}, table version ${a.json.tableVersion}.`
          : `Cancel requested: the run is ${a.json.state}.`));
    } catch (err) {
      fill(status, problemBox(err));
    }
  };
  const out = [];
  if (r.state === 'succeeded' && !r.validationOnly) {
    out.push(h('button', { type: 'button', class: 'danger', id: 'revert',
      onclick: act('revert', `/v1/runs/${enc(r.id)}/revert`,
        `Revert run ${r.id}? Its rows leave table ${r.table} in a new commit.`) }, 'Revert run'));
  }
  if (!TERMINAL.includes(r.state) && !r.cancelRequest) {
    out.push(h('button', { type: 'button', class: 'danger', id: 'cancel',
      onclick: act('cancel', `/v1/runs/${enc(r.id)}/cancel`, `Cancel run ${r.id}?`) }, 'Cancel run'));
  }
  return out;
}
