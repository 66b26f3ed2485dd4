// The web console in a real browser: Debian's chromium driven by
// puppeteer-core against a real `loam serve` on loopback (LOAM_BINARY).
// Sign in through the link, create a pipeline, drop a file, watch its run
// succeed, see the rows, open a failing run's errors, revert a run, and an
// expired token and a reader see what they may and nothing more. Every page
// is checked by axe-core (no serious or critical violation) and for
// Content-Security-Policy refusals, and saved as a screenshot under
// LOAM_CONSOLE_SHOTS.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, launch, tab as newTab, check, text, heading, jwt, dropFile, createPipeline } from './harness.mjs';

let s, browser;
before(async () => {
  s = await startServer();
  browser = await launch('chromium');
});
after(async () => {
  await browser?.close();
  await s?.stop();
});

const tab = () => newTab(browser);
async function signIn(sub) {
  const page = await tab();
  await page.goto(s.link(sub));
  await page.waitForSelector('#principal');
  return page;
}

let pipelineUrl, succeededRun;

test('signs in through the link; the token leaves the address bar and is sent only as a bearer token', async () => {
  const signInLink = s.link('owner');
  assert.match(signInLink, new RegExp(`^${s.baseUrl}/console/#token=[A-Za-z0-9._-]+$`));
  const page = await tab();
  await page.goto(signInLink);
  await heading(page, 'Overview');
  assert.equal(await text(page, '#principal'), 'signed in as owner');
  assert.match(await text(page, '#expiry'), /token expires .* \(in (59|60) min\)/);
  assert.equal(page.url(), `${s.baseUrl}/console/#/`);
  const kept = await page.evaluate(() => sessionStorage.getItem('loam.token'));
  assert.equal(kept, signInLink.split('#token=')[1]);
  // No address the page asked for, and no Referer, holds it: the fragment
  // never leaves the browser.
  assert.ok(page.requests.length > 5);
  assert.deepEqual(page.requests.filter((r) => r.includes(kept)), []);
  assert.match(s.log, /"route":"\/console\/"/);
  // The tables the owner may see, each with its row count.
  const tables = await page.$$eval('main table:first-of-type tbody tr', (rows) => rows.map((r) => r.textContent));
  assert.deepEqual(tables.length, 2);
  await check(page, 'overview');
  await page.close();
});

test('creates a pipeline, drops a file on it and watches the run succeed', async () => {
  const page = await signIn('owner');
  await createPipeline(page, 'events', 'upsert');
  pipelineUrl = page.url();
  await check(page, 'pipeline');
  // A file dropped on the page, as a browser delivers it.
  await dropFile(page, 'two.csv', 'id,v\n1,one\n2,two\n');
  await page.waitForFunction(() => /^Run /.test(document.querySelector('main h1')?.textContent ?? ''));
  await page.waitForSelector('.state-succeeded');
  succeededRun = page.url().split('#/runs/')[1];
  const counters = await page.$$eval('main table:first-of-type tbody td', (c) => c.map((x) => x.textContent));
  assert.deepEqual(counters.slice(0, 2), ['2', '2']);  // rows read, inserted
  assert.ok(await page.$('#revert'));
  await check(page, 'run');
  await page.close();
});

test('shows the rows, the history with who and when, and answers SQL', async () => {
  const page = await signIn('owner');
  await page.goto(`${s.baseUrl}/console/#/tables/t`);
  await heading(page, 'Table t');
  await page.waitForSelector('#preview table');
  const rows = await page.$$eval('#preview tbody tr', (r) => r.map((x) => x.textContent));
  assert.deepEqual(rows, ['1one', '2two']);
  const history = await page.$$eval('main table:nth-of-type(3) tbody tr', (r) => r.map((x) => x.textContent));
  assert.ok(history[0].includes('owner') && history[0].includes(succeededRun), history[0]);
  await page.$eval('#sql', (e) => { e.value = ''; });
  await page.type('#sql', 'SELECT v FROM t WHERE id = 2');
  await page.click('#sql-h ~ form button');
  await page.waitForSelector('#sql-result table');
  assert.deepEqual(await page.$$eval('#sql-result tbody td', (c) => c.map((x) => x.textContent)), ['two']);
  // The workspace version before the load's: no rows.
  const loaded = Number(await page.$$eval('.facts dt', (dts) =>
    dts.find((d) => d.textContent === 'Workspace version').nextElementSibling.textContent));
  await page.$eval('#preview-version', (e, v) => { e.value = String(v); }, loaded - 1);
  await page.click('#preview-h ~ form button');
  await page.waitForFunction(() => document.querySelector('#preview caption')?.textContent === '0 rows');
  await check(page, 'table');
  await page.close();
});

test('a failing run shows every error with its line and column', async () => {
  const page = await signIn('owner');
  await page.goto(pipelineUrl);
  await heading(page, 'Pipeline events');
  const input = await page.$('#files');
  const bad = join(s.dir, 'bad.csv');
  writeFileSync(bad, 'id,v\n3,three\nx,four\n');
  await input.uploadFile(bad);
  await page.waitForSelector('.state-failed');
  await page.waitForSelector('#run-errors table');
  const cells = await page.$$eval('#run-errors tbody td', (c) => c.map((x) => x.textContent));
  assert.equal(cells[1], '3');     // the line of the bad row
  assert.equal(cells[2], 'id');    // its column
  assert.equal(await page.$('#revert'), null);
  await check(page, 'run-failed');
  await page.close();
});

test('reverts a run after confirmation', async () => {
  const page = await signIn('owner');
  await page.goto(`${s.baseUrl}/console/#/runs/${succeededRun}`);
  await page.waitForSelector('#revert');
  page.once('dialog', (d) => d.dismiss());
  await page.click('#revert');
  page.once('dialog', (d) => d.dismiss());
  await page.click('#revert');  // the first dismissal has been handled by now
  assert.equal(await page.$('#action-result'), null);  // dismissed: nothing done
  assert.deepEqual(page.apiCalls.filter((c) => c.startsWith('POST')), []);
  page.once('dialog', (d) => d.accept());
  await page.click('#revert');
  await page.waitForSelector('#action-result');
  assert.match(await text(page, '#action-result'), /^Reverted: commit /);
  assert.equal(s.count('SELECT count(*) FROM t'), '0');
  await page.close();
});

test('a queued run is followed live and cancelled after confirmation', async () => {
  const idle = await startServer(['--workers', '0']);  // runs stay queued
  try {
    const page = await newTab(browser);
    await page.goto(idle.link('owner'));
    await createPipeline(page, 'waits');
    await dropFile(page, 'one.csv', 'id,v\n1,one\n');
    await page.waitForSelector('.state-queued');
    assert.equal(await page.$('#revert'), null);
    page.once('dialog', (d) => d.accept());
    await page.click('#cancel');
    // The long-poll already waiting on the run brings its end.
    await page.waitForSelector('.state-cancelled');
    await page.waitForSelector('#action-result');  // the long-poll may answer first
    assert.match(await text(page, '#action-result'), /^Cancel requested: the run is cancelled/);
    assert.equal(await page.$('#cancel'), null);
    assert.equal(idle.count('SELECT count(*) FROM t'), '0');
    await check(page, 'run-cancelled');
    await page.close();
  } finally {
    await idle.stop();
  }
});

test('branches: create one, compare it with main, and a merge check that fails is shown', async () => {
  const page = await signIn('owner');
  await page.goto(`${s.baseUrl}/console/#/branches`);
  await heading(page, 'Branches');
  await page.type('#branch-name', 'dev');
  await page.click('#create-h ~ form button');
  await page.waitForFunction(() => [...document.querySelectorAll('#merge-branch option')].some((o) => o.value === 'dev'));
  await page.click('#compare-h ~ form button');
  await page.waitForSelector('#compare table');
  assert.deepEqual(await page.$$eval('#compare tbody tr', (r) => r.map((x) => x.textContent)),
    ['hidden00same count', 't00same count']);
  await page.$eval('#merge-checks', (e) => { e.value = '[{"name":"enough","table":"t","minRows":100}]'; });
  page.once('dialog', (d) => d.accept());
  await page.click('#merge-h ~ form button');
  await page.waitForSelector('#merge-result .problem');
  assert.match(await text(page, '#merge-result'), /merge_check_failed: .*Failed check: enough/);
  await check(page, 'branches');
  await page.goto(`${s.baseUrl}/console/#/limits`);
  await heading(page, 'Limits and usage');
  await check(page, 'limits');
  await page.close();
});

test('an expired token sees nothing but the way to sign in again', async () => {
  const now = Math.floor(Date.now() / 1000);
  const workspace = JSON.parse(Buffer.from(s.link('owner').split('#token=')[1].split('.')[1], 'base64url')).loam_workspace;
  const expired = jwt({ sub: 'owner', loam_workspace: workspace, iat: now - 7200, exp: now - 3600 });
  const page = await tab();
  await page.goto(`${s.baseUrl}/console/#token=${expired}`);
  await heading(page, 'Token expired');
  assert.match(await text(page, '#expiry'), /^token expired at /);
  assert.deepEqual(page.apiCalls, []);
  assert.equal(await page.$('main table'), null);
  await check(page, 'expired');
  // A new link opened in the same tab (only the fragment changes) signs in.
  const fresh = s.link('owner');
  await page.goto(fresh);
  await heading(page, 'Overview');
  assert.equal(page.url(), `${s.baseUrl}/console/#/`);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('loam.token')), fresh.split('#token=')[1]);
  await page.close();
});

test('a reader without a writer grant sees what it may and nothing more', async () => {
  const page = await signIn('rex');
  await heading(page, 'Overview');
  const tables = await page.$$eval('main table:first-of-type tbody tr td:first-child', (c) => c.map((x) => x.textContent));
  assert.deepEqual(tables, ['t']);
  await page.goto(`${s.baseUrl}/console/#/tables/hidden`);
  await page.waitForSelector('main .problem');
  assert.match(await text(page, 'main .problem'), /^(permission_denied|not_found): /);
  // Its rows, yes; a load, no.
  await page.goto(pipelineUrl);
  await heading(page, 'Pipeline events');
  await dropFile(page, 'one.csv', 'id,v\n9,nine\n');
  await page.waitForSelector('#upload-status .problem');
  assert.match(await text(page, '#upload-status'), /^permission_denied: /);
  assert.equal(s.count('SELECT count(*) FROM t WHERE id = 9'), '0');
  await check(page, 'reader');
  await page.close();
});

test('edits a pipeline with If-Match: a change made meanwhile is refused, never overwritten', async () => {
  const page = await signIn('owner');
  await page.goto(pipelineUrl);
  await heading(page, 'Pipeline events');
  const save = async (settings) => {
    await page.$eval('#pipeline-settings', (e, v) => { e.value = v; }, JSON.stringify(settings));
    await page.click('#edit-h ~ form button');
  };
  await save({ paused: true });
  await page.waitForFunction(() => document.querySelector('#settings-status').textContent !== '');
  assert.equal(await text(page, '#settings-status'), 'Saved.');
  // Someone else changes it through the API.
  const bearer = { authorization: `Bearer ${s.link('owner').split('#token=')[1]}` };
  const id = pipelineUrl.split('#/pipelines/')[1];
  const now = await fetch(`${s.baseUrl}/v1/pipelines/${id}`, { headers: bearer });
  const other = await fetch(`${s.baseUrl}/v1/pipelines/${id}`, {
    method: 'PATCH',
    headers: { ...bearer, 'content-type': 'application/json', 'if-match': now.headers.get('etag') },
    body: JSON.stringify({ paused: false, errorPolicy: 'validationOnly' }),
  });
  assert.equal(other.status, 200);
  await save({ paused: true });
  await page.waitForSelector('#settings-status .problem');
  assert.match(await text(page, '#settings-status'), /^precondition_failed: /);
  await page.reload();
  await heading(page, 'Pipeline events');
  const fact = (name) => page.$$eval('.facts dt', (dts, n) =>
    dts.find((d) => d.textContent === n).nextElementSibling.textContent, name);
  assert.equal(await fact('Paused'), 'no');
  assert.equal(await fact('Error policy'), 'validationOnly');
  await page.close();
});
