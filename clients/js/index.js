// A dependency-free client of the Loam ingestion API (docs/server.md), for
// Node 18+ (global fetch). submitRun follows the retry contract: one
// idempotency key per logical submission, and on 429 / 5xx / a broken
// connection the *same* body with the *same* key, after Retry-After (429)
// or a jittered exponential backoff. It keeps nothing on disk: a caller that
// must survive its own crash persists the key and body itself (as
// `loam submit` does).

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
  // baseUrl: "http://127.0.0.1:8080"; token: a bearer token (JWT).
  constructor({ baseUrl, token, retryForMs = 15 * 60 * 1000, fetchImpl = globalThis.fetch }) {
    this.baseUrl = baseUrl.replace(/\/$/, '');
    this.token = token;
    this.retryForMs = retryForMs;
    this.fetch = fetchImpl;
  }

  async #request(method, path, { body, headers = {} } = {}) {
    const res = await this.fetch(this.baseUrl + path, {
      method,
      headers: { authorization: `Bearer ${this.token}`, ...headers },
      body,
    });
    const text = await res.text();
    const type = res.headers.get('content-type') ?? '';
    const json = type.includes('json') && text ? JSON.parse(text) : undefined;
    return { status: res.status, headers: res.headers, json, text };
  }

  async #answer(method, path, ok, options) {
    const r = await this.#request(method, path, options);
    if (!ok.includes(r.status)) throw new LoamError(r.status, r.json);
    return r.json;
  }

  // A signed place for `size` bytes: {uploadId, url, method, headers, expiresAt}.
  createUpload(pipelineId, { size, sha256 } = {}) {
    const body = JSON.stringify(sha256 ? { size, sha256 } : { size });
    return this.#answer('POST', `/v1/pipelines/${encodeURIComponent(pipelineId)}/uploads`, [201], {
      body,
      headers: { 'content-type': 'application/json' },
    });
  }

  // Sends exactly the ticket's method, headers and `bytes` to its url.
  async upload(ticket, bytes) {
    const headers = { ...ticket.headers };
    delete headers['content-length'];  // fetch sets it from the body
    const res = await this.fetch(ticket.url, { method: ticket.method, headers, body: bytes });
    if (!res.ok) {
      const text = await res.text();
      let problem;
      try { problem = JSON.parse(text); } catch { problem = { detail: text }; }
      throw new LoamError(res.status, problem);
    }
  }

  // Submits a run. `body` is an object or its exact JSON text; the text is
  // fixed once and resent unchanged with `idempotencyKey` on every retry.
  // Resolves to {run, replayed}.
  async submitRun(pipelineId, body, { idempotencyKey, onRetry } = {}) {
    if (!idempotencyKey) throw new TypeError('submitRun needs an idempotencyKey (one per logical submission)');
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    const path = `/v1/pipelines/${encodeURIComponent(pipelineId)}/runs`;
    const headers = { 'content-type': 'application/json', 'idempotency-key': idempotencyKey };
    const deadline = Date.now() + this.retryForMs;
    let backoff = 200;
    for (let attempt = 1; ; attempt++) {
      let r;
      let why;
      try {
        r = await this.#request('POST', path, { body: text, headers });
      } catch (err) {
        why = `connection: ${err.cause?.code ?? err.message}`;
      }
      if (r && r.status === 202) {
        return { run: r.json, replayed: r.headers.get('idempotency-replayed') === 'true' };
      }
      const retryAfter = r?.headers.get('retry-after');
      const retryable = !r || r.status === 429 || r.status >= 500 || (r.status === 409 && retryAfter);
      if (!retryable) throw new LoamError(r.status, r.json);
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

  getRun(runId) {
    return this.#answer('GET', `/v1/runs/${encodeURIComponent(runId)}`, [200]);
  }

  // Polls until the run is terminal (succeeded, failed, partial, cancelled).
  async waitForRun(runId, { timeoutMs = 10 * 60 * 1000, onProgress } = {}) {
    const deadline = Date.now() + timeoutMs;
    let poll = 100;
    for (;;) {
      const run = await this.getRun(runId);
      onProgress?.(run);
      if (['succeeded', 'failed', 'partial', 'cancelled'].includes(run.state)) return run;
      if (Date.now() + poll > deadline) throw new Error(`run ${runId} still ${run.state} after ${timeoutMs} ms`);
      await sleep(poll);
      poll = Math.min(poll * 2, 2000);
    }
  }
}
