// The JS client against a real `loam serve` (LOAM_BINARY): uploads, a run
// followed to its end, replays, the 429 retry with the same key, a resent
// PUT confirmed, and a submission that died resumed from its state store.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { createHash, randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LoamClient, LoamError, FileStateStore, MemoryStateStore } from '../index.js';

const bin = process.env.LOAM_BINARY;
if (!bin) throw new Error('set LOAM_BINARY to the loam command');

let dir, server, baseUrl, client, pipelineId, token;
const env = { ...process.env, USER: 'owner', LOAM_PRINCIPAL: '', LOAM_ROOT: '' };
const loam = (...args) => execFileSync(bin, args, { cwd: dir, env }).toString();

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'loam-js-'));
  loam('init');
  loam('table', 'create', 't', '--column', 'id:int64:not-null', '--column', 'v:string', '--key', 'id');
  writeFileSync(join(dir, 'secret'), 'a-js-client-test-secret-of-32-bytes+\n');
  // One submission per second per principal: the second in a row meets a 429.
  writeFileSync(join(dir, 'config.json'),
                JSON.stringify({ admission: { principalBurst: 1, principalRequestsPerSecond: 1 } }));
  server = spawn(bin, ['serve', '--listen', '127.0.0.1:0', '--auth-hs256-secret-file', 'secret',
                       '--config', 'config.json', '--no-access-log'], { cwd: dir, env });
  baseUrl = await new Promise((resolve, reject) => {
    let out = '';
    server.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/[0-9.:]+)/);
      if (m) resolve(m[1]);
    });
    server.on('exit', (code) => reject(new Error(`loam serve exited ${code}`)));
  });
  token = loam('token', '--secret-file', 'secret', '--sub', 'owner').trim();
  client = new LoamClient({ baseUrl, token, retryForMs: 60_000, stateStore: new MemoryStateStore() });
  const res = await fetch(`${baseUrl}/v1/pipelines`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'js', table: 't', mode: 'upsert', format: 'csv' }),
  });
  assert.equal(res.status, 201);
  pipelineId = (await res.json()).id;
});

after(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server.on('exit', resolve));
    server.kill('SIGTERM');
    assert.equal(await exited, 0);
  }
  rmSync(dir, { recursive: true, force: true });
});

async function stage(csv) {
  const bytes = Buffer.from(csv);
  const ticket = await client.createUpload(pipelineId, {
    size: bytes.length,
    sha256: createHash('sha256').update(bytes).digest('hex'),
  });
  await client.upload(ticket, bytes);
  return ticket.uploadId;
}

test('a run is submitted, replayed with its key, and followed to its end', async () => {
  const uploadId = await stage('id,v\n1,a\n2,b\n3,c\n');
  const key = randomUUID();
  const body = { uploads: [uploadId], source: { id: 'js-1' } };
  const { run, replayed } = await client.submitRun(pipelineId, body, { idempotencyKey: key });
  assert.equal(replayed, false);
  assert.equal(run.state, 'queued');
  const again = await client.submitRun(pipelineId, body, { idempotencyKey: key });
  assert.equal(again.run.id, run.id);
  assert.equal(again.replayed, true);
  const done = await client.waitForRun(run.id);
  assert.equal(done.state, 'succeeded');
  assert.equal(done.counters.inserted, 3);
  await assert.rejects(client.submitRun(pipelineId, { uploads: [uploadId], reload: true }, { idempotencyKey: key }),
                       (err) => err instanceof LoamError && err.code === 'idempotency_key_reused');
});

test('a 429 is waited out and the same request is repeated', async () => {
  const first = await stage('id,v\n10,x\n');
  const second = await stage('id,v\n11,y\n');
  const retries = [];
  const a = await client.submitRun(pipelineId, { uploads: [first] }, { idempotencyKey: randomUUID() });
  const b = await client.submitRun(pipelineId, { uploads: [second] }, {
    idempotencyKey: randomUUID(),
    onRetry: (r) => retries.push(r),
  });
  assert.ok(retries.length >= 1, 'the second submission met admission');
  assert.equal(retries[0].why, 'HTTP 429');
  assert.ok(retries[0].waitMs >= 1000, `waited Retry-After, not ${retries[0].waitMs} ms`);
  assert.notEqual(a.run.id, b.run.id);
  assert.equal((await client.waitForRun(b.run.id)).state, 'succeeded');
});

// A fetch that loses the answer to the next PUT after it landed, as a broken
// connection would.
function lossyFetch() {
  const control = { losePut: false, losePost: false };
  control.fetch = async (url, init) => {
    const res = await fetch(url, init);
    const lose = init?.method === 'PUT' ? 'losePut' : init?.method === 'POST' ? 'losePost' : null;
    if (lose && control[lose]) {
      control[lose] = false;
      await res.text();
      throw new TypeError('fetch failed', { cause: { code: 'ECONNRESET' } });
    }
    return res;
  };
  return control;
}

test('a PUT whose answer was lost is resent, confirmed received, and the run goes on', async () => {
  const lossy = lossyFetch();
  const c = new LoamClient({ baseUrl, token, retryForMs: 60_000, fetchImpl: lossy.fetch,
                             stateStore: new MemoryStateStore() });
  lossy.losePut = true;
  const retries = [];
  const { run } = await c.submitFiles(pipelineId, [{ bytes: Buffer.from('id,v\n20,p\n') }],
                                      { onRetry: (r) => retries.push(r) });
  assert.ok(retries.some((r) => r.why === 'connection: ECONNRESET'), JSON.stringify(retries));
  assert.equal(run.uploads.length, 1);
  const upload = await c.getUpload(run.uploads[0]);
  assert.equal(upload.received, true);
  assert.equal((await c.waitForRun(run.id)).state, 'succeeded');
});

test('a submission whose process died after its PUT is resumed from the state store', async () => {
  const stateDir = mkdtempSync(join(tmpdir(), 'loam-js-state-'));
  // Dies (throws) when it would record the upload as received: the PUT landed.
  class DyingStore extends FileStateStore {
    async save(key, state) {
      if (state.files.some((f) => f.uploaded)) throw new Error('killed');
      return super.save(key, state);
    }
  }
  const files = [{ bytes: Buffer.from('id,v\n30,q\n31,r\n'), fileName: 'q.csv' }];
  const dying = new LoamClient({ baseUrl, token, retryForMs: 60_000, stateStore: new DyingStore(stateDir) });
  const key = randomUUID();
  await assert.rejects(dying.submitFiles(pipelineId, files, { idempotencyKey: key, sourceId: 'js-q' }),
                       /killed/);
  const store = new FileStateStore(stateDir);
  const kept = await store.load(key);
  const uploadId = kept.files[0].ticket.uploadId;
  assert.equal((await client.getUpload(uploadId)).received, true);
  const again = new LoamClient({ baseUrl, token, retryForMs: 60_000, stateStore: store });
  const { run } = await again.resume(key, files);
  assert.deepEqual(run.uploads, [uploadId]);  // the same upload, sent again (409) and confirmed
  assert.deepEqual(await store.keys(), []);   // answered: nothing kept
  assert.equal((await again.waitForRun(run.id)).state, 'succeeded');
  rmSync(stateDir, { recursive: true, force: true });
});

test('a submission whose retries run out is kept for resume', async () => {
  // The server answers every submission 503 (an outage): the uploads go, the
  // submission does not, and its state stays to be resumed once it is back.
  let down = true;
  const flaky = async (url, init) => {
    if (down && init?.method === 'POST' && String(url).endsWith('/runs')) {
      return new Response('{"code":"unavailable","detail":"down"}',
                          { status: 503, headers: { 'content-type': 'application/problem+json' } });
    }
    return fetch(url, init);
  };
  const store = new MemoryStateStore();
  // Long enough to wait out the 1 request/s admission of the uploads and the
  // resumed submission (a Retry-After of a few seconds on a loaded machine), short
  // for the outage.
  const c = new LoamClient({ baseUrl, token, retryForMs: 8000, fetchImpl: flaky, stateStore: store });
  const files = [{ bytes: Buffer.from('id,v\n40,s\n') }];
  const key = randomUUID();
  await assert.rejects(c.submitFiles(pipelineId, files, { idempotencyKey: key }),
                       (err) => err instanceof LoamError && err.code === 'unavailable');
  assert.deepEqual(await store.keys(), [key]);
  assert.ok((await store.load(key)).request, 'the exact request is kept');
  down = false;
  const { run } = await c.resume(key, files);
  assert.equal((await c.waitForRun(run.id)).state, 'succeeded');
  assert.deepEqual(await store.keys(), []);
});

test('validateFirst loads the same upload only after its validation succeeded', async () => {
  const c = new LoamClient({ baseUrl, token, retryForMs: 60_000, stateStore: new MemoryStateStore() });
  const bad = await c.submitFiles(pipelineId, [{ bytes: Buffer.from('id,v\n50,a\nx,b\n') }],
                                  { validateFirst: true });
  assert.equal(bad.run.state, 'failed');
  assert.equal(bad.run.validationOnly, true);
  assert.equal(bad.run.errorCode, 'validation_failed');
  const good = await c.submitFiles(pipelineId, [{ bytes: Buffer.from('id,v\n51,a\n') }],
                                   { validateFirst: true });
  assert.equal(good.run.validationOnly, false);
  const done = await c.waitForRun(good.run.id);
  assert.equal(done.state, 'succeeded');
  assert.equal(done.counters.inserted, 1);
});

test('runErrors lists every invalid row of a failed run', async () => {
  const c = new LoamClient({ baseUrl, token, retryForMs: 60_000, stateStore: new MemoryStateStore() });
  const { run } = await c.submitFiles(pipelineId, [{ bytes: Buffer.from('id,v\nx,a\n70,b\ny,c\n') }]);
  const done = await c.waitForRun(run.id);
  assert.equal(done.state, 'failed');
  assert.equal(done.counters.errorCount, 2);
  const errors = await c.runErrors(run.id);
  assert.deepEqual(errors.map((e) => [e.line, e.column, e.code]),
                   [[2, 'id', 'validation_failed'], [4, 'id', 'validation_failed']]);
  await assert.rejects(c.runErrors('01J00000000000000000000000'),
                       (err) => err instanceof LoamError && err.code === 'not_found');
});

test('usage shows the caller against the admission limits', async () => {
  const u = await client.usage();
  assert.equal(u.principal, 'owner');
  assert.equal(u.requests.burst, 1);
  assert.ok(u.requests.tokens <= 1);
  assert.ok(pipelineId in u.pipelines, JSON.stringify(u));
});

test('a pipeline changes only from the state its ETag names', async () => {
  const { etag: first } = await client.getPipeline(pipelineId);
  const { pipeline, etag: second } = await client.updatePipeline(pipelineId, { limits: { maxConcurrentRuns: 64 } },
                                                                  { ifMatch: first });
  assert.equal(pipeline.limits.maxConcurrentRuns, 64);
  assert.notEqual(first, second);
  await assert.rejects(client.updatePipeline(pipelineId, { limits: { maxConcurrentRuns: 32 } }, { ifMatch: first }),
                       (err) => err instanceof LoamError && err.status === 412 && err.code === 'precondition_failed');
  assert.equal((await client.getPipeline(pipelineId)).pipeline.limits.maxConcurrentRuns, 64);
});

test('refusals carry the stable code', async () => {
  await assert.rejects(client.getRun('01ARZ3NDEKTSV4RRFFQ69G5FAV'),
                       (err) => err instanceof LoamError && err.status === 404 && err.code === 'not_found');
  await assert.rejects(client.submitRun(pipelineId, { uploads: ['nope'] }, {}), TypeError);
});

test('sql answers a statement and refuses a write with its code', async () => {
  const answer = await client.sql('SELECT count(*) AS n, 1.5 AS x, NULL AS z FROM t');
  assert.deepEqual(answer.columns, [{ name: 'n', type: 'INTEGER' }, { name: 'x', type: 'REAL' },
                                    { name: 'z', type: 'NULL' }]);
  assert.equal(answer.rows.length, 1);
  assert.equal(answer.truncated, false);
  const cut = await client.sql('WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r',
                               { limit: 3 });
  assert.deepEqual(cut.rows, [[1], [2], [3]]);
  assert.equal(cut.truncated, true);
  await assert.rejects(client.sql('DELETE FROM t'),
                       (err) => err instanceof LoamError && err.status === 403 && err.code === 'permission_denied');
});

test('runs list newest first, a page at a time, with filters', async () => {
  const collect = async (filters) => {
    const ids = [];
    for await (const run of client.listRuns(filters)) ids.push(run.id);
    return ids;
  };
  const newest = await collect({ pipeline: pipelineId, pageSize: 1 });
  assert.ok(newest.length >= 2, JSON.stringify(newest));
  assert.deepEqual(newest, [...newest].sort().reverse());
  assert.deepEqual(await collect({ pipeline: pipelineId, order: 'oldest' }), [...newest].reverse());
  assert.deepEqual(await collect({ since: new Date(Date.now() + 3600e3) }), []);
  await assert.rejects(client.listRuns({ order: 'sideways' }).next(),
                       (err) => err instanceof LoamError && err.status === 400 && err.code === 'invalid_argument');
});

test('a paused pipeline refuses new work with pipeline_paused until resumed', async () => {
  const { pipeline, etag } = await client.pausePipeline(pipelineId);
  assert.equal(pipeline.paused, true);
  const stop = new Error('stop retrying');
  let seen;
  await assert.rejects(client.createUpload(pipelineId, { size: 3 }, { onRetry: (r) => { seen = r; throw stop; } }),
                       (err) => err === stop);
  assert.equal(seen.why, 'HTTP 429');
  assert.equal(seen.waitMs, 30_000);  // the pause's Retry-After
  const resumed = await client.resumePipeline(pipelineId, { ifMatch: etag });
  assert.equal(resumed.pipeline.paused, false);
  assert.equal((await client.getPipeline(pipelineId)).pipeline.paused, false);
});

test('a create whose answer was lost is retried under its key and made once', async () => {
  const lossy = lossyFetch();
  const c = new LoamClient({ baseUrl, token, retryForMs: 60_000, fetchImpl: lossy.fetch,
                             stateStore: new MemoryStateStore() });
  const spec = { name: 'js-keys', table: 't', format: 'csv' };
  lossy.losePost = true;
  const retries = [];
  const created = await c.createPipeline(spec, { onRetry: (r) => retries.push(r) });
  assert.deepEqual(retries.map((r) => r.why), ['connection: ECONNRESET']);
  assert.equal(created.name, 'js-keys');
  await assert.rejects(c.createPipeline(spec),  // a new key: a second pipeline of the name
                       (err) => err instanceof LoamError && err.status === 409);
  const { run } = await c.submitFiles(created.id, [{ bytes: Buffer.from('id,v\n91,a\n') }]);
  assert.equal((await c.waitForRun(run.id)).state, 'succeeded');
  lossy.losePost = true;
  const reverted = await c.revertRun(run.id, { idempotencyKey: 'js-revert-1' });
  assert.equal(reverted.revertedRun, run.id);
  assert.deepEqual(await c.revertRun(run.id, { idempotencyKey: 'js-revert-1' }), reverted);
  await assert.rejects(c.cancelRun(run.id, { idempotencyKey: 'js-revert-1' }),
                       (err) => err instanceof LoamError && err.status === 422 && err.code === 'idempotency_key_reused');
});

test('a delete whose answer was lost is retried under its key and deletes once', async () => {
  const lossy = lossyFetch();
  const c = new LoamClient({ baseUrl, token, retryForMs: 60_000, fetchImpl: lossy.fetch,
                             stateStore: new MemoryStateStore() });
  const { run } = await c.submitFiles(pipelineId, [{ bytes: Buffer.from('id,v\n71,a\n72,b\n73,c\n') }]);
  assert.equal((await c.waitForRun(run.id)).state, 'succeeded');
  const body = { keys: [{ id: 71 }, { id: 72 }] };
  const first = await c.deleteRows('t', body, { idempotencyKey: 'js-delete-1' });  // may wait out a 429
  lossy.losePost = true;  // the repeat's answer is lost: its retry replays the same run
  const retries = [];
  const again = await c.deleteRows('t', body, { idempotencyKey: 'js-delete-1', onRetry: (r) => retries.push(r) });
  assert.deepEqual(retries.map((r) => r.why), ['connection: ECONNRESET']);
  assert.equal(again.run.id, first.run.id);
  assert.equal(again.replayed, true);
  const done = await c.waitForRun(first.run.id);
  assert.equal(done.state, 'succeeded');
  assert.equal(done.counters.deleted, 2);
  const byFilter = await c.deleteRows('t', { where: ['id = 73'] });
  assert.equal((await c.waitForRun(byFilter.run.id)).counters.deleted, 1);
  await assert.rejects(c.deleteRows('t', { where: ['nope = 1'] }),
                       (err) => err instanceof LoamError && err.status === 400 && /delete filter/.test(err.message));
});

test('write, audit, publish: a branch loaded by a pipeline is merged once, after its checks', async () => {
  const lossy = lossyFetch();
  const c = new LoamClient({ baseUrl, token, retryForMs: 60_000, fetchImpl: lossy.fetch,
                             stateStore: new MemoryStateStore() });
  const day = await c.createBranch('js-day');
  assert.equal(day.parent, 'main');
  assert.ok((await c.listBranches()).some((b) => b.name === 'js-day'));
  const p = await c.createPipeline({ name: 'js-day', table: 't', format: 'csv', branch: 'js-day' });
  assert.equal(p.branch, 'js-day');
  const { run } = await c.submitFiles(p.id, [{ bytes: Buffer.from('id,v\n501,a\n502,b\n') }]);
  assert.equal((await c.waitForRun(run.id)).state, 'succeeded');
  await assert.rejects(c.mergeBranch('js-day', { checks: [{ name: 'plenty', table: 't', minRows: 100000 }] }),
                       (err) => err instanceof LoamError && err.status === 422 && err.code === 'merge_check_failed');
  const checks = [{ name: 'ids', table: 't', unique: ['id'] }];
  lossy.losePost = true;  // the merge's answer is lost: its retry gets the same merge
  const retries = [];
  const merged = await c.mergeBranch('js-day', { checks, idempotencyKey: 'js-merge-1',
                                                 onRetry: (r) => retries.push(r) });
  assert.deepEqual(retries.map((r) => r.why), ['connection: ECONNRESET']);
  assert.equal(merged.mergeId, 'js-merge-1');
  assert.deepEqual(merged.tables.map((t) => [t.name, t.change]), [['t', 'updated']]);
  const { rows } = await c.sql('SELECT count(*) FROM t WHERE id IN (501, 502)');
  assert.deepEqual(rows, [[2]]);
  lossy.losePost = true;  // the revert's answer is lost: its retry answers the first revert
  const reverted = await c.revertMerge('js-merge-1');
  assert.equal(reverted.alreadyReverted, true);
  assert.deepEqual(reverted.tables.map((t) => [t.name, t.change]), [['t', 'restored']]);
  assert.deepEqual((await c.sql('SELECT count(*) FROM t WHERE id IN (501, 502)')).rows, [[0]]);
  await assert.rejects(c.revertMerge('nope'), (err) => err instanceof LoamError && err.status === 404);
  await c.deleteBranch('js-day');
  await assert.rejects(c.getBranch('js-day'), (err) => err instanceof LoamError && err.status === 404);
});
