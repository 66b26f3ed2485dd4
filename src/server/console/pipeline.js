// A pipeline: its settings, an edit guarded by If-Match, files dropped on
// the page uploaded through signed uploads (with progress) and submitted as
// one run under one Idempotency-Key, and its latest runs.
import { call, get, postJson, enc, sleep, ApiError } from './api.js';
import { h, fill, table, facts, field, when, runLink, tableLink, stateBadge, problemBox, newKey,
  bytes } from './dom.js';

const EDITABLE = ['mode', 'keyColumns', 'format', 'formatOptions', 'schemaPolicy', 'errorPolicy',
  'limits', 'paused'];

export async function pipelinePage(id) {
  let p, etag, runs;
  try {
    const r = await call('GET', `/v1/pipelines/${enc(id)}`);
    [p, etag] = [r.json, r.headers.get('etag')];
    runs = (await get(`/v1/runs?pipeline=${enc(id)}&limit=20`)).runs;
  } catch (err) {
    return [h('h1', {}, `Pipeline ${id}`), problemBox(err)];
  }
  return [
    h('h1', {}, `Pipeline ${p.name}`),
    facts([['Id', p.id], ['Table', tableLink(p.table)], ['Branch', p.branch ?? 'main'],
      ['Mode', p.mode ?? 'append'], ['Format', p.format], ['Key columns', (p.keyColumns ?? []).join(', ')],
      ['Error policy', p.errorPolicy], ['Paused', p.paused ? 'yes' : 'no'], ['Created by', p.createdBy],
      ['Updated by', p.updatedBy]]),
    uploadSection(p),
    table('Runs', ['Run', 'State', 'Submitted', 'By', 'Rows read', 'Inserted', 'Errors'], runs.map((x) => [
      runLink(x.id), stateBadge(x.state), when(x.submittedAt), x.submittedBy, x.counters.rowsRead,
      x.counters.inserted, x.counters.errorCount])),
    editSection(p, etag),
  ];
}

// PATCH with the ETag the page was read at: a change made meanwhile by
// someone else is refused (precondition_failed), never overwritten.
function editSection(p, etag) {
  const settings = {};
  for (const k of EDITABLE) if (p[k] !== undefined) settings[k] = p[k];
  const text = h('textarea', { id: 'pipeline-settings', rows: 10, spellcheck: 'false' },
    JSON.stringify(settings, null, 2));
  const status = h('div', { id: 'settings-status', 'aria-live': 'polite' });
  const save = async (e) => {
    e.preventDefault();
    let patch;
    try {
      patch = JSON.parse(text.value);
    } catch (err) {
      return fill(status, problemBox({ code: 'invalid_argument', detail: `not JSON: ${err.message}` }));
    }
    try {
      const r = await call('PATCH', `/v1/pipelines/${enc(p.id)}`, {
        body: JSON.stringify(patch), headers: { 'content-type': 'application/json', 'if-match': etag },
      });
      etag = r.headers.get('etag');
      fill(status, h('p', { class: 'notice' }, 'Saved.'));
    } catch (err) {
      fill(status, problemBox(err));
    }
  };
  return h('section', { 'aria-labelledby': 'edit-h' }, h('h2', { id: 'edit-h' }, 'Settings'),
    h('form', { onsubmit: save }, field('Settings (JSON)', text,
      'name and table are fixed; a change made since this page was read is refused'),
    h('button', { type: 'submit' }, 'Save settings')), status);
}

function uploadSection(p) {
  const input = h('input', { id: 'files', type: 'file', multiple: true });
  const progress = h('progress', { id: 'upload-progress', max: 1, value: 0, hidden: true });
  const status = h('div', { id: 'upload-status', 'aria-live': 'polite' });
  const send = (files) => submitFiles(p, Array.from(files), progress, status);
  const zone = h('div', {
    class: 'drop', id: 'drop',
    ondragover: (e) => { e.preventDefault(); zone.classList.add('over'); },
    ondragleave: () => zone.classList.remove('over'),
    ondrop: (e) => { e.preventDefault(); zone.classList.remove('over'); send(e.dataTransfer.files); },
  }, h('p', {}, `Drop ${p.format} files here, or choose them:`), field('Files to load', input));
  input.addEventListener('change', () => {
    send(input.files);
    input.value = '';  // the same file chosen again is a new submission
  });
  return h('section', { 'aria-labelledby': 'load-h' }, h('h2', { id: 'load-h' }, 'Load files'),
    zone, progress, status);
}

// One submission: a signed upload per file, its bytes sent with progress,
// then one run of them all. Each call carries its own Idempotency-Key and is
// retried with it (postJson); a PUT is resent to its ticket as it is. A
// submission that fails anyway leaves its uploads to expire, unsubmitted.
async function submitFiles(p, files, progress, status) {
  if (files.length === 0) return;
  const total = files.reduce((n, f) => n + f.size, 0);
  let sent = 0;
  progress.hidden = false;
  progress.max = Math.max(total, 1);
  progress.value = 0;
  try {
    const uploads = [];
    for (const f of files) {
      fill(status, `Uploading ${f.name} (${bytes(f.size)})…`);
      const ticket = (await postJson(`/v1/pipelines/${enc(p.id)}/uploads`, { size: f.size, fileName: f.name },
        { ok: [201], headers: { 'idempotency-key': newKey() } })).json;
      await put(ticket, f, (n) => { progress.value = sent + n; });
      sent += f.size;
      uploads.push(ticket.uploadId);
    }
    progress.value = progress.max;
    fill(status, `Submitting ${files.length} file(s) as one run…`);
    const r = await postJson(`/v1/pipelines/${enc(p.id)}/runs`, { uploads },
      { ok: [202], headers: { 'idempotency-key': newKey() } });
    fill(status, h('p', { class: 'notice' }, 'Submitted as run ', runLink(r.json.id), '.'));
    if (location.hash === `#/pipelines/${enc(p.id)}`) location.hash = `#/runs/${enc(r.json.id)}`;
  } catch (err) {
    fill(status, problemBox(err));
  }
}

// The ticket's method, headers and bytes, with upload progress (XHR: fetch
// reports none), sent again while the answer is lost or says "later" (a
// resent PUT of the same bytes is confirmed, docs/server.md).
async function put(ticket, file, onProgress) {
  for (let attempt = 1; ; ++attempt) {
    try {
      return await putOnce(ticket, file, onProgress);
    } catch (err) {
      // A resend after a lost answer meets its own first PUT (409 here,
      // 412 on S3): the upload's record says whether the bytes arrived.
      if (attempt > 1 && (err.status === 409 || err.status === 412)) {
        const upload = (await call('GET', `/v1/uploads/${enc(ticket.uploadId)}`)).json;
        if (upload.received) return undefined;
      }
      if (!err.transient || attempt === 5) throw err;
      await sleep(err.retryAfterMs ?? 500 * 2 ** attempt);
    }
  }
}

// A local upload URL is this server's route: sent to this origin, whatever
// host name the page was opened with.
function putOnce(ticket, file, onProgress) {
  const url = new URL(ticket.url, location.href);
  const target = url.pathname.startsWith('/v1/uploads/') ? url.pathname + url.search : url.href;
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open(ticket.method, target);
    for (const [k, v] of Object.entries(ticket.headers ?? {})) {
      if (k.toLowerCase() !== 'content-length') xhr.setRequestHeader(k, v);
    }
    xhr.upload.onprogress = (e) => onProgress(e.loaded);
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) return resolve();
      let problem = null;
      try { problem = JSON.parse(xhr.responseText); } catch { /* not a problem document */ }
      reject(new ApiError(xhr.status, problem));
    };
    xhr.onerror = () => reject(new ApiError(0, { code: 'unavailable', detail: 'the upload could not be sent' }));
    xhr.send(file);
  });
}
