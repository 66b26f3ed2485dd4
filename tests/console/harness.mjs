// What the console's browser tests share: a real `loam serve` on loopback
// over a fresh workspace (LOAM_BINARY), a browser, and the checks every
// page passes (axe-core, no script error, a screenshot under
// LOAM_CONSOLE_SHOTS).
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, rmSync } from 'node:fs';
import { createHmac } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';

const bin = process.env.LOAM_BINARY;
if (!bin) throw new Error('set LOAM_BINARY to the loam command');
const here = dirname(fileURLToPath(import.meta.url));
const axeSource = readFileSync(join(here, 'node_modules/axe-core/axe.min.js'), 'utf8');
const shots = process.env.LOAM_CONSOLE_SHOTS ?? join(tmpdir(), 'loam-console-shots');
mkdirSync(shots, { recursive: true });
const SECRET = 'a-console-test-secret-of-32-bytes-or-more';
export const TIMEOUT = 60_000;

// A workspace with a keyed table `t` (rex may read it) and a table `hidden`,
// served with its access log kept: no token may reach it in an address.
// `flags`: more `loam serve` flags.
export async function startServer(flags = []) {
  const dir = mkdtempSync(join(tmpdir(), 'loam-console-'));
  const env = { ...process.env, USER: 'owner', LOAM_PRINCIPAL: '', LOAM_ROOT: '' };
  const loam = (...args) => execFileSync(bin, args, { cwd: dir, env }).toString();
  loam('init');
  loam('table', 'create', 't', '--column', 'id:int64:not-null', '--column', 'v:string', '--key', 'id');
  loam('table', 'create', 'hidden', '--column', 'id:int64:not-null');
  loam('table', 'grant', 't', 'rex', 'reader');
  writeFileSync(join(dir, 'secret'), `${SECRET}\n`);
  const child = spawn(bin, ['serve', '--listen', '127.0.0.1:0', '--auth-hs256-secret-file', 'secret',
                            ...flags], { cwd: dir, env });
  const s = { dir, loam, log: '' };
  child.stderr.on('data', (d) => { s.log += d; });
  s.baseUrl = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/[0-9.:]+)/);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`loam serve exited ${code}`)));
  });
  s.link = (sub, ...more) =>
    loam('token', '--console', '--server', s.baseUrl, '--secret-file', 'secret', '--sub', sub, ...more).trim();
  s.count = (query) => loam('sql', '--format', 'csv', query).trim().split('\n').at(-1);
  s.stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.on('exit', resolve));
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  return s;
}

// A token signed here, so its expiry can be in the past.
export function jwt(claims) {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const body = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(claims)}`;
  return `${body}.${createHmac('sha256', SECRET).update(body).digest('base64url')}`;
}

// Debian's browsers; root in CI, so Chromium runs without its sandbox.
export function launch(kind) {
  if (kind === 'firefox') {
    return puppeteer.launch({ browser: 'firefox', headless: true,
      executablePath: process.env.LOAM_FIREFOX ?? '/usr/bin/firefox-esr' });
  }
  return puppeteer.launch({ headless: true, executablePath: process.env.LOAM_CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'] });
}

// A fresh tab that records what would break a page: script errors (a
// refusal by the page's policy is one), every request and every API call.
export async function tab(browser) {
  const page = await browser.newPage();
  page.setDefaultTimeout(TIMEOUT);
  await page.setViewport({ width: 1200, height: 900 });
  page.problems = [];
  page.apiCalls = [];
  page.on('pageerror', (e) => page.problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) page.problems.push(m.text());
  });
  page.requests = [];  // every address the page sent (no fragment), with its Referer
  page.on('request', (r) => {
    const sent = new URL(r.url());
    sent.hash = '';
    page.requests.push(`${sent} ${r.headers().referer ?? ''}`);
    if (new URL(r.url()).pathname.startsWith('/v1/')) page.apiCalls.push(`${r.method()} ${r.url()}`);
  });
  return page;
}

// The page as it stands: axe-core finds no serious or critical violation,
// no script failed, and a screenshot is kept.
export async function check(page, name) {
  await page.evaluate(axeSource);  // through the debugger: not subject to the page's policy
  const result = await page.evaluate(() => globalThis.axe.run(document, { resultTypes: ['violations'] }));
  const serious = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
  assert.deepEqual(serious, [], `${name}: accessibility`);
  assert.deepEqual(page.problems, [], `${name}: script errors`);
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

export const text = (page, selector) => page.$eval(selector, (e) => e.textContent);
export const heading = (page, want) =>
  page.waitForFunction((w) => document.querySelector('main h1')?.textContent === w, {}, want);

// A pipeline over table t made through the overview's form; the page ends
// on the new pipeline's page.
export async function createPipeline(page, name, mode = 'append') {
  await heading(page, 'Overview');
  await page.type('#pipeline-name', name);
  await page.select('#pipeline-table', 't');
  await page.select('#pipeline-mode', mode);
  await page.click('form button[type=submit]');
  await heading(page, `Pipeline ${name}`);
}

// A file dropped on the pipeline page's drop zone, as a browser delivers it.
export const dropFile = (page, name, content) => page.evaluate((n, c) => {
  const dt = new DataTransfer();
  dt.items.add(new File([c], n, { type: 'text/csv' }));
  document.getElementById('drop').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true }));
}, name, content);
