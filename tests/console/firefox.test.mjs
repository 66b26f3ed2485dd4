// The console's main path in Debian's Firefox ESR (puppeteer-core over
// WebDriver BiDi): sign in through the link, create a pipeline, drop a file,
// watch its run succeed and see its rows; each page checked by axe-core.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launch, tab, check, text, heading, dropFile, createPipeline } from './harness.mjs';

let s, browser;
before(async () => {
  s = await startServer();
  browser = await launch('firefox');
});
after(async () => {
  await browser?.close();
  await s?.stop();
});

test('firefox: signs in, loads a dropped file and shows its rows', async () => {
  const page = await tab(browser);
  await page.goto(s.link('owner'));
  await heading(page, 'Overview');
  assert.equal(await text(page, '#principal'), 'signed in as owner');
  assert.equal(page.url(), `${s.baseUrl}/console/#/`);
  await check(page, 'firefox-overview');
  await createPipeline(page, 'ff');
  await dropFile(page, 'ff.csv', 'id,v\n7,seven\n');
  await page.waitForSelector('.state-succeeded');
  await check(page, 'firefox-run');
  await page.goto(`${s.baseUrl}/console/#/tables/t`);
  await heading(page, 'Table t');
  await page.waitForSelector('#preview table');
  assert.deepEqual(await page.$$eval('#preview tbody tr', (r) => r.map((x) => x.textContent)), ['7seven']);
  await check(page, 'firefox-table');
  assert.equal(s.count('SELECT count(*) FROM t'), '1');
  await page.close();
});
