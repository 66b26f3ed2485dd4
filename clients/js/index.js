// A dependency-free client of the Loam ingestion API (docs/server.md), for
// Node 18+ (global fetch). Every call follows the retry contract: on 429 /
// 5xx / a broken connection the *same* request (for a submission, the same
// body with the same idempotency key) after Retry-After (429) or a jittered
// exponential backoff. submitFiles keeps each submission in a state store (a
// file per submission by default) until it is answered, so a process that
// dies finishes it with resume(), exactly as `loam submit --resume` does.
import { createHash, randomUUID } from 'node:crypto';
import { FileStateStore } from './state.js';

export { FileStateStore, MemoryStateStore, defaultStateDir } from './state.js';

export class LoamError extends Error {
  constructor(status, problem) {
    super(`HTTP ${status}: ${problem?.detail ?? 'request failed'}`);
    this.status = status;
    this.code = problem?.code;      // the stable error code (docs/errors.md)
    this.problem = problem;
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export class LoamClient {
  // baseUrl: "http://127.0.0.1:8080"; token: a bearer token (JWT); stateStore:
  // where submitFiles keeps submissions (default: a FileStateStore).
  constructor({ baseUrl, token, retryForMs = 15 * 60 * 1000, fetchImpl = globalThis.fetch,
                stateStore } = {}) {
    this.baseUrl = baseUrl.replace(/\/$/, '');
    this.token = token;
    this.retryForMs = retryForMs;
    this.fetch = fetchImpl;
    this.stateStore = stateStore ?? new FileStateStore();
  }

  async #request(method, url, { body, headers = {}, auth = true } = {}) {
    const res = await this.fetch(url, {
      method,
      headers: auth ? { authorization: `Bearer ${this.token}`, ...headers } : headers,
      body,
    });
    const text = await res.text();
    const type = res.headers.get('content-type') ?? '';
    let json;
    if (type.includes('json') && text) {
      try { json = JSON.parse(text); } catch { json = { detail: text }; }
    } else if (text && !res.ok) {
      json = { detail: text };  // S3 answers XML
    }
    return { status: res.status, headers: res.headers, json, text };
  }

  // Sends one request until it is answered with something other than 429,
  // 5xx or a 409 carrying Retry-After, or a broken connection; resolves to
  // that answer. Throws `unavailable` once retrying would pass retryForMs.
  async #retrying(method, url, options = {}, onRetry) {
    const deadline = Date.now() + this.retryForMs;
    let backoff = 200;
    for (let attempt = 1; ; attempt++) {
      let r;
      let why;
      try {
        r = await this.#request(method, url, options);
      } catch (err) {
        why = `connection: ${err.cause?.code ?? err.message}`;
      }
      const retryAfter = r?.headers.get('retry-after');
      const retryable = !r || r.status === 429 || r.status >= 500 || (r.status === 409 && retryAfter);
      if (!retryable) return r;
      why ??= `HTTP ${r.status}`;
      let wait;
      // Retry-After is seconds or an HTTP date.
      const seconds = Number(retryAfter);
      const date = Date.parse(retryAfter ?? '');
      if (retryAfter && Number.isFinite(seconds)) {
        wait = seconds * 1000;
      } else if (retryAfter && Number.isFinite(date)) {
        wait = Math.max(0, date - Date.now());
      } else {
        wait = backoff / 2 + Math.random() * (backoff / 2);
        backoff = Math.min(backoff * 2, 30_000);
      }
      if (Date.now() + wait > deadline) {
        throw new LoamError(r?.status ?? 0, { code: 'unavailable', detail: `${why} after ${attempt} attempts` });
      }
      onRetry?.({ attempt, why, waitMs: wait });
      await sleep(wait);
    }
  }

  async #answer(method, path, ok, options, onRetry) {
    const r = await this.#retrying(method, this.baseUrl + path, options, onRetry);
    if (!ok.includes(r.status)) throw new LoamError(r.status, r.json);
    return r.json;
  }

  // Each creating call sends one Idempotency-Key on all its retries, so a
  // retry after a lost answer gets the first answer instead of a second
  // pipeline, upload, cancel or revert.
  #keyedPost(path, ok, doc, idempotencyKey, onRetry) {
    const headers = { 'content-type': 'application/json', 'idempotency-key': idempotencyKey };
    return this.#answer('POST', path, ok, { body: doc === undefined ? '' : JSON.stringify(doc), headers },
                        onRetry);
  }

  // spec: {name, table, mode, format, ...}; resolves to the pipeline.
  createPipeline(spec, { idempotencyKey = randomUUID(), onRetry } = {}) {
    return this.#keyedPost('/v1/pipelines', [201], spec, idempotencyKey, onRetry);
  }

  // A signed place for `size` bytes: {uploadId, url, method, headers, expiresAt}.
  createUpload(pipelineId, { size, sha256, fileName } = {}, { idempotencyKey = randomUUID(), onRetry } = {}) {
    return this.#keyedPost(`/v1/pipelines/${encodeURIComponent(pipelineId)}/uploads`, [201],
                           { size, ...(sha256 && { sha256 }), ...(fileName && { fileName }) },
                           idempotencyKey, onRetry);
  }

  // A queued run cancelled, or a started one asked to stop (not yet
  // terminal, with cancelRequest: wait for it); resolves to the run.
  cancelRun(runId, { idempotencyKey = randomUUID(), onRetry } = {}) {
    return this.#keyedPost(`/v1/runs/${encodeURIComponent(runId)}/cancel`, [200, 202], undefined, idempotencyKey,
                           onRetry);
  }

  // One new commit that undoes a succeeded run: {revertedRun, commitId, manifestVersion, tableVersion}.
  revertRun(runId, { idempotencyKey = randomUUID(), onRetry } = {}) {
    return this.#keyedPost(`/v1/runs/${encodeURIComponent(runId)}/revert`, [200], undefined, idempotencyKey,
                           onRetry);
  }

  // Branches (docs/branches.md): the owner creates and deletes them; anyone
  // lists them. {name, version, parent?, parentVersion?}.
  createBranch(name, { from, version, onRetry } = {}) {
    return this.#answer('POST', '/v1/branches', [201], {
      body: JSON.stringify({ name, ...(from && { from }), ...(version !== undefined && { version }) }),
      headers: { 'content-type': 'application/json' },
    }, onRetry);
  }

  async listBranches() {
    return (await this.#answer('GET', '/v1/branches', [200])).branches;
  }

  getBranch(name) {
    return this.#answer('GET', `/v1/branches/${encodeURIComponent(name)}`, [200]);
  }

  async deleteBranch(name) {
    await this.#answer('DELETE', `/v1/branches/${encodeURIComponent(name)}`, [204]);
  }

  // Publishes the branch on the one it was created from in one commit, once
  // `checks` ([{name, table, minRows?, maxRows?, unique?} | {name, sql}]) pass
  // on its pinned state. The idempotency key is the merge id: a retry answers
  // the same merge (alreadyMerged). Resolves to the merge.
  mergeBranch(name, { into, checks, idempotencyKey = randomUUID(), onRetry } = {}) {
    return this.#keyedPost(`/v1/branches/${encodeURIComponent(name)}/merge`, [200],
                           { ...(into && { into }), ...(checks && { checks }) }, idempotencyKey, onRetry);
  }

  // Undoes the merge `mergeId` into `into` (default main) as one unit, in one
  // commit. The merge id names the revert: a retry answers the first
  // (alreadyReverted). Resolves to the revert.
  revertMerge(mergeId, { into, onRetry } = {}) {
    return this.#answer('POST', `/v1/merges/${encodeURIComponent(mergeId)}/revert`, [200], {
      body: JSON.stringify({ ...(into && { into }) }),
      headers: { 'content-type': 'application/json' },
    }, onRetry);
  }

  // {pipeline, etag}: the ETag names this state for updatePipeline's ifMatch.
  async getPipeline(pipelineId) {
    const r = await this.#retrying('GET', `${this.baseUrl}/v1/pipelines/${encodeURIComponent(pipelineId)}`);
    if (r.status !== 200) throw new LoamError(r.status, r.json);
    return { pipeline: r.json, etag: r.headers.get('etag') };
  }

  // Changes fields other than name and table; with ifMatch only if the
  // pipeline still has that state (else 412 precondition_failed, nothing
  // changed). Resolves to {pipeline, etag}.
  async updatePipeline(pipelineId, patch, { ifMatch } = {}) {
    const headers = { 'content-type': 'application/json', ...(ifMatch && { 'if-match': ifMatch }) };
    const r = await this.#retrying('PATCH', `${this.baseUrl}/v1/pipelines/${encodeURIComponent(pipelineId)}`,
                                   { body: JSON.stringify(patch), headers });
    if (r.status !== 200) throw new LoamError(r.status, r.json);
    return { pipeline: r.json, etag: r.headers.get('etag') };
  }

  // Paused, a pipeline refuses new uploads and submissions with 429
  // pipeline_paused (which this client retries after Retry-After, like any
  // 429) and its queued runs wait; resumed, they go on. {pipeline, etag}.
  pausePipeline(pipelineId, { ifMatch } = {}) {
    return this.updatePipeline(pipelineId, { paused: true }, { ifMatch });
  }

  resumePipeline(pipelineId, { ifMatch } = {}) {
    return this.updatePipeline(pipelineId, { paused: false }, { ifMatch });
  }

  // The upload as its creator sees it, with `received`.
  getUpload(uploadId) {
    return this.#answer('GET', `/v1/uploads/${encodeURIComponent(uploadId)}`, [200]);
  }

  // Sends exactly the ticket's method, headers and `bytes` to its url. A PUT
  // resent after its answer was lost finds the upload received (409 from
  // loam serve, 412 from S3): that is success once the upload confirms its
  // bytes arrived.
  async upload(ticket, bytes, { onRetry } = {}) {
    const headers = { ...ticket.headers };
    delete headers['content-length'];  // fetch sets it from the body
    const r = await this.#retrying(ticket.method, ticket.url, { body: bytes, headers, auth: false },
                                   onRetry);
    if (r.status >= 200 && r.status < 300) return;
    if (r.status === 409 || r.status === 412) {
      const seen = await this.getUpload(ticket.uploadId);
      if (seen.received) return;
      // Refused, yet not received: retryable, never the end of a submission.
      throw new LoamError(0, {
        code: 'unavailable',
        detail: `the PUT of upload ${ticket.uploadId} answered HTTP ${r.status} but its bytes were not received`,
      });
    }
    throw new LoamError(r.status, r.json);
  }

  // Submits a run. `body` is an object or its exact JSON text; the text is
  // fixed once and resent unchanged with `idempotencyKey` on every retry.
  // Resolves to {run, replayed}.
  async submitRun(pipelineId, body, { idempotencyKey, onRetry } = {}) {
    if (!idempotencyKey) throw new TypeError('submitRun needs an idempotencyKey (one per logical submission)');
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    const r = await this.#retrying('POST', `${this.baseUrl}/v1/pipelines/${encodeURIComponent(pipelineId)}/runs`, {
      body: text,
      headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
    }, onRetry);
    if (r.status !== 202) throw new LoamError(r.status, r.json);
    return { run: r.json, replayed: r.headers.get('idempotency-replayed') === 'true' };
  }

  // Deletes `table`'s rows as a run: `body` is {where: [filter...]} or
  // {keys: [{column: value...}...], keyColumns?}, with errorPolicy? and
  // expectedTableVersion?; resent unchanged with `idempotencyKey` on every
  // retry. Resolves to {run, replayed}; waitForRun tells its end.
  async deleteRows(table, body, { idempotencyKey = randomUUID(), onRetry } = {}) {
    const r = await this.#retrying('POST', `${this.baseUrl}/v1/tables/${encodeURIComponent(table)}/deletes`, {
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
    }, onRetry);
    if (r.status !== 202) throw new LoamError(r.status, r.json);
    return { run: r.json, replayed: r.headers.get('idempotency-replayed') === 'true' };
  }

  // Uploads `files` ([{bytes, fileName?}]) and submits them as one run, with
  // the state kept in the state store at every step (the ticket before its
  // bytes go, each upload once received, the exact request before it is
  // sent) and removed once the submission is answered. Resolves to
  // {run, replayed, idempotencyKey}. A call that dies is finished by
  // resume(idempotencyKey, files) with the same bytes. With validateFirst, a
  // validationOnly run of the uploads goes first (key + ':validate'), and the
  // load of the same uploads only if it succeeds; otherwise `run` is that
  // validation, terminal, and nothing is loaded.
  async submitFiles(pipelineId, files, { idempotencyKey = randomUUID(), sourceId, validateFirst = false,
                                         onRetry } = {}) {
    if (validateFirst && idempotencyKey.length > 246) {
      throw new TypeError('with validateFirst an idempotency key is at most 246 characters (":validate" is added)');
    }
    let state = await this.stateStore.load(idempotencyKey);
    if (!state) {
      state = {
        version: 1,
        key: idempotencyKey,
        pipeline: pipelineId,
        sourceId,
        validateFirst,
        files: files.map((f) => ({
          size: f.bytes.length,
          sha256: createHash('sha256').update(f.bytes).digest('hex'),
          fileName: f.fileName,
        })),
      };
      await this.stateStore.save(idempotencyKey, state);
    }
    return this.#finish(state, files, onRetry);
  }

  // Finishes a submission kept in the state store; `files` as given to
  // submitFiles (needed only while some are not uploaded yet).
  async resume(idempotencyKey, files = [], { onRetry } = {}) {
    const state = await this.stateStore.load(idempotencyKey);
    if (!state) throw new LoamError(0, { code: 'not_found', detail: `no submission ${idempotencyKey} is kept` });
    return this.#finish(state, files, onRetry);
  }

  async #finish(state, files, onRetry) {
    try {
      const answer = await this.#send(state, files, onRetry);
      await this.stateStore.remove(state.key);
      return answer;
    } catch (err) {
      // A refusal ends the submission; retries that ran out, or a refused
      // token (a new one may finish it), keep it for resume().
      if (err instanceof LoamError && err.code !== 'unavailable' && err.status !== 401 &&
          err.status !== 403) {
        await this.stateStore.remove(state.key);
      }
      throw err;
    }
  }

  async #send(state, files, onRetry) {
    const key = state.key;
    for (const [i, f] of state.files.entries()) {
      if (f.uploaded) continue;
      const bytes = files[i]?.bytes;
      if (!bytes || bytes.length !== f.size ||
          createHash('sha256').update(bytes).digest('hex') !== f.sha256) {
        throw new TypeError(`file ${i} is not the bytes this submission was started with`);
      }
      const usable = f.ticket && Date.parse(f.ticket.expiresAt) > Date.now() + 60_000;
      if (!usable) {
        f.ticket = await this.createUpload(state.pipeline, f, { onRetry });
        await this.stateStore.save(key, state);  // before the bytes go
      }
      await this.upload(f.ticket, bytes, { onRetry });
      f.uploadId = f.ticket.uploadId;
      f.uploaded = true;
      delete f.ticket;  // it was a capability; what is left is the upload id
      await this.stateStore.save(key, state);
    }
    if (!state.request) {
      const uploads = state.files.map((f) => f.uploadId);
      if (state.validateFirst) {
        state.validateRequest = JSON.stringify({ uploads, errorPolicy: 'validationOnly' });
      }
      const body = { uploads };
      if (state.sourceId) body.source = { id: state.sourceId };
      state.request = JSON.stringify(body);  // the exact bytes, resent on every retry
      await this.stateStore.save(key, state);
    }
    if (state.validateFirst && !state.validated) {
      const { run } = await this.submitRun(state.pipeline, state.validateRequest,
                                           { idempotencyKey: `${key}:validate`, onRetry });
      const checked = await this.waitForRun(run.id);
      if (checked.state !== 'succeeded') return { run: checked, replayed: false, idempotencyKey: key };
      state.validated = true;
      await this.stateStore.save(key, state);
    }
    const answer = await this.submitRun(state.pipeline, state.request, { idempotencyKey: key, onRetry });
    return { ...answer, idempotencyKey: key };
  }

  // The run now; with `waitSeconds` (1 to 60) the server answers when the
  // run is terminal or when the wait ends, whichever is first.
  getRun(runId, { waitSeconds } = {}) {
    const wait = waitSeconds ? `?wait=${waitSeconds}` : '';
    return this.#answer('GET', `/v1/runs/${encodeURIComponent(runId)}${wait}`, [200]);
  }

  // Every error the run kept, in input order: [{file, reason, code, line,
  // offset, column}] (line, offset and column when the error is about one row).
  async runErrors(runId, { onRetry } = {}) {
    const r = await this.#retrying('GET', `${this.baseUrl}/v1/runs/${encodeURIComponent(runId)}/errors`, {},
                                   onRetry);
    if (r.status !== 200) throw new LoamError(r.status, r.json);
    return r.text.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
  }

  // Every run matching `filters` (pipeline, table, state, since, until as
  // RFC 3339 or Date, order 'newest' (default) or 'oldest'), a page of
  // `pageSize` at a time: `for await (const run of client.listRuns({table}))`.
  async *listRuns({ pageSize = 100, ...filters } = {}) {
    const query = new URLSearchParams({ limit: String(pageSize) });
    for (const [name, value] of Object.entries(filters)) {
      if (value !== undefined) query.set(name, value instanceof Date ? value.toISOString() : String(value));
    }
    for (;;) {
      const page = await this.#answer('GET', `/v1/runs?${query}`, [200]);
      yield* page.runs;
      if (page.nextCursor === null) return;
      query.set('cursor', page.nextCursor);
    }
  }

  // What admission counts for the caller next to its limits (docs/service.md, "Usage").
  usage() {
    return this.#answer('GET', '/v1/usage', [200]);
  }

  // One read-only SQL statement over the tables at one state (docs/sql.md):
  // {columns: [{name, type}], rows: [[...]], truncated}. `version` reads every
  // table as of that manifest version; `limit` caps the rows.
  async sql(query, { branch, version, limit, onRetry } = {}) {
    const body = JSON.stringify({ query, ...(branch && { branch }),
                                  ...(version !== undefined && { version }),
                                  ...(limit !== undefined && { limit }) });
    const r = await this.#retrying('POST', `${this.baseUrl}/v1/sql`,
                                   { body, headers: { 'content-type': 'application/json' } }, onRetry);
    if (r.status !== 200) throw new LoamError(r.status, r.json);
    const lines = r.text.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
    const end = lines.at(-1)?.end;
    // A body cut short after its first chunk lacks the end line.
    if (!end) throw new LoamError(r.status, { code: 'unavailable', detail: 'the SQL answer was cut short' });
    return { columns: lines[0].columns, rows: lines.slice(1, -1), truncated: end.truncated };
  }

  // Resolves to the run once terminal (succeeded, failed, partial,
  // cancelled): long-polls, so the answer comes as the run ends. A server
  // that takes no such wait (400) is polled with a growing pause instead.
  async waitForRun(runId, { timeoutMs = 10 * 60 * 1000, onProgress } = {}) {
    const deadline = Date.now() + timeoutMs;
    let longPoll = true;
    let pause = 100;
    for (;;) {
      const left = Math.ceil((deadline - Date.now()) / 1000);
      let run;
      try {
        run = await this.getRun(runId, longPoll ? { waitSeconds: Math.max(1, Math.min(30, left)) } : {});
      } catch (err) {
        if (!(longPoll && err instanceof LoamError && err.status === 400)) throw err;
        longPoll = false;
        continue;
      }
      onProgress?.(run);
      if (['succeeded', 'failed', 'partial', 'cancelled'].includes(run.state)) return run;
      if (Date.now() >= deadline) throw new Error(`run ${runId} still ${run.state} after ${timeoutMs} ms`);
      if (!longPoll) {
        await sleep(pause);
        pause = Math.min(pause * 2, 2000);
      }
    }
  }
}
