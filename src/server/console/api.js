// The API as the console calls it: the caller's bearer token on every call,
// problems (docs/errors.md) thrown as ApiError with their stable code. The
// console has no powers of its own: what a token may not do, it may not.

const TOKEN_KEY = 'loam.token';

export class ApiError extends Error {
  constructor(status, problem, retryAfter = null) {
    super(problem?.detail ?? `HTTP ${status}`);
    this.status = status;
    this.code = problem?.code ?? (status === 0 ? 'unavailable' : 'internal');
    this.detail = problem?.detail ?? this.message;
    this.problem = problem ?? {};
    // How long to wait before asking again, in ms (429 and 503 say).
    this.retryAfterMs = this.problem.retryAfterMillis ?? (retryAfter ? Number(retryAfter) * 1000 : null);
  }

  // Worth asking again with the same request (docs/errors.md): no answer,
  // or one that says "later".
  get transient() {
    if (this.status === 0) return true;
    if (!this.problem.code) return [502, 503, 504].includes(this.status);  // a proxy's answer
    return ['unavailable', 'overloaded', 'request_in_flight', 'pipeline_paused'].includes(this.code);
  }
}

export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY),
  set: (t) => sessionStorage.setItem(TOKEN_KEY, t),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
  // The token's claims (sub, exp), read without checking: the server checks.
  claims() {
    const t = this.get();
    if (!t) return null;
    try {
      const part = t.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
      return JSON.parse(atob(part + '='.repeat((4 - (part.length % 4)) % 4)));
    } catch {
      return {};
    }
  },
};

// One call; resolves to {status, headers, json, text}. Throws ApiError on a
// problem or when the server cannot be reached.
export async function call(method, path, { body, headers = {}, ok = [200], signal } = {}) {
  let res;
  try {
    res = await fetch(path, {
      method,
      headers: { authorization: `Bearer ${token.get()}`, ...headers },
      body,
      cache: 'no-store',
      signal,
    });
  } catch (err) {
    if (signal?.aborted) throw err;
    throw new ApiError(0, { code: 'unavailable', detail: `the server cannot be reached (${err.message})` });
  }
  let text;
  try {
    text = await res.text();
  } catch (err) {  // the connection broke while the answer was read
    if (signal?.aborted) throw err;
    throw new ApiError(0, { code: 'unavailable', detail: `the answer was cut short (${err.message})` });
  }
  let json = null;
  if (/^application\/(problem\+)?json/.test(res.headers.get('content-type') ?? '') && text) {
    json = JSON.parse(text);
  }
  if (!ok.includes(res.status)) throw new ApiError(res.status, json, res.headers.get('retry-after'));
  return { status: res.status, headers: res.headers, json, text };
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// A call that creates or changes something under an Idempotency-Key: sent
// again, the same bytes with the same key, while the answer is lost or says
// "later" (after its Retry-After, else a growing pause), for up to two
// minutes. The server answers a repeat with the first answer.
export async function callRetrying(method, path, options = {}) {
  const deadline = Date.now() + 120_000;
  for (let pause = 500; ; pause = Math.min(pause * 2, 8000)) {
    try {
      return await call(method, path, options);
    } catch (err) {
      if (!(err instanceof ApiError) || !err.transient || Date.now() > deadline) throw err;
      await sleep(err.retryAfterMs ?? pause * (0.5 + Math.random()));
    }
  }
}

export const get = async (path) => (await call('GET', path)).json;

// JSON Lines answers (rows, run errors, SQL) as an array of values.
export async function getLines(method, path, options) {
  const r = await call(method, path, options);
  return r.text.split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l));
}

// A POST of JSON; retried (callRetrying) when it carries an Idempotency-Key.
export const postJson = (path, doc, { ok = [200, 201], headers = {} } = {}) =>
  (headers['idempotency-key'] ? callRetrying : call)('POST', path, {
    body: doc === undefined ? '' : JSON.stringify(doc),
    headers: { 'content-type': 'application/json', ...headers },
    ok,
  });

export const enc = encodeURIComponent;
