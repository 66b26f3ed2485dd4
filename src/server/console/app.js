// The console's shell: sign-in from the link's fragment, the token's expiry,
// and the page for each address (#/, #/tables/NAME, #/pipelines/ID,
// #/runs/ID, #/branches, #/limits).
import { token } from './api.js';
import { h, fill, field } from './dom.js';
import { overviewPage } from './overview.js';
import { tablePage } from './table.js';
import { pipelinePage } from './pipeline.js';
import { runPage } from './run.js';
import { branchesPage } from './branches.js';
import { limitsPage } from './limits.js';

const main = document.getElementById('main');

// `loam token --console` prints .../console/#token=JWT: the fragment never
// reaches the server. The token moves to session storage (gone with the
// tab) and out of the address bar and the history.
function takeTokenFromLink() {
  const m = location.hash.match(/^#token=([A-Za-z0-9._-]+)$/);
  if (!m) return;
  token.set(m[1]);
  history.replaceState(null, '', `${location.pathname}#/`);
}

function secondsLeft() {
  const exp = token.claims()?.exp;
  return typeof exp === 'number' ? exp - Date.now() / 1000 : Infinity;
}

let shownWho = null;  // rebuilt only when its text changes (a live region)

function showWho() {
  const who = document.getElementById('who');
  const claims = token.claims();
  const key = `${token.get()} ${Math.ceil(secondsLeft() / 60)}`;
  if (key === shownWho) return undefined;
  shownWho = key;
  if (!claims) return fill(who, 'not signed in');
  const exp = typeof claims.exp === 'number' ? new Date(claims.exp * 1000) : null;
  const left = secondsLeft();
  const expiry = !exp ? 'no expiry'
    : left <= 0 ? `token expired at ${exp.toLocaleString()}`
      : `token expires ${exp.toLocaleString()} (in ${Math.ceil(left / 60)} min)`;
  fill(who, h('span', { id: 'principal' }, `signed in as ${claims.sub ?? '?'}`), ' · ',
    h('span', { id: 'expiry', class: left <= 0 ? 'expired' : '' }, expiry),
    h('button', { class: 'secondary', type: 'button', onclick: signOut }, 'Sign out'));
}

function signOut() {
  token.clear();
  location.hash = '#/';
  route();
}

function signInPage() {
  const input = h('input', { id: 'token', type: 'password', autocomplete: 'off', required: true });
  return [h('h1', {}, 'Sign in'),
    h('p', {}, 'Open the link ', h('code', {}, 'loam token --console --server URL'),
      ' prints, or paste a bearer token. The console keeps it in this tab only and calls the API ',
      'with it: you see and do exactly what the token may.'),
    h('form', {
      onsubmit: (e) => {
        e.preventDefault();
        token.set(input.value.trim());
        location.hash = '#/';
        route();
      },
    }, field('Bearer token', input), h('button', { type: 'submit' }, 'Sign in'))];
}

function expiredPage() {
  return [h('h1', { id: 'expired' }, 'Token expired'),
    h('p', { class: 'problem', role: 'alert' },
      'Your token has expired: nothing more is shown. Sign in again with a new link from ',
      h('code', {}, 'loam token --console'), '.'),
    h('button', { type: 'button', onclick: signOut }, 'Sign in again')];
}

// Each page gets its address's parts, decoded, and `page`: alive() while it
// is shown, and a signal that aborts its calls once it is not.
const ROUTES = [
  [/^#?\/?$/, () => overviewPage()],
  [/^#\/tables\/([^?]+)(?:\?(.*))?$/, ([name, query]) => tablePage(name, new URLSearchParams(query ?? ''))],
  [/^#\/pipelines\/([^?]+)$/, ([id]) => pipelinePage(id)],
  [/^#\/runs\/([^?]+)$/, ([id], page) => runPage(id, page)],
  [/^#\/branches$/, () => branchesPage()],
  [/^#\/limits$/, () => limitsPage()],
];

function match(hash) {
  for (const [re, page] of ROUTES) {
    const m = hash.match(re);
    if (!m) continue;
    try {
      return { page, parts: m.slice(1).map((p, i) => (i === 0 && p ? decodeURIComponent(p) : p)) };
    } catch {
      return null;  // a malformed %-escape
    }
  }
  return null;
}

let current = 0;  // a page still loading when another is asked for stops
let leaving = new AbortController();

async function route() {
  takeTokenFromLink();  // also a link opened in a tab already showing the console
  const n = ++current;
  leaving.abort();
  leaving = new AbortController();
  const page = { alive: () => n === current, signal: leaving.signal };
  showWho();
  for (const a of document.querySelectorAll('nav a')) {
    const here = a.getAttribute('href') === (location.hash || '#/');
    if (here) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  if (!token.get()) return fill(main, signInPage());
  if (secondsLeft() <= 0) return fill(main, expiredPage());
  const found = match(location.hash);
  if (!found) return fill(main, h('h1', {}, 'Not found'), h('p', {}, 'No console page has this address.'));
  fill(main, h('p', { 'aria-busy': 'true' }, 'Loading…'));
  const content = await found.page(found.parts, page);
  if (n !== current) return;
  fill(main, content);
  document.title = `${main.querySelector('h1')?.textContent ?? 'Console'} · Loam`;
  main.focus();
}

window.addEventListener('hashchange', route);
// The skip link moves the focus, not the address (which names the page).
document.querySelector('.skip').addEventListener('click', (e) => {
  e.preventDefault();
  main.focus();
});
setInterval(() => {
  showWho();
  if (token.get() && secondsLeft() <= 0 && !main.querySelector('#expired')) route();
}, 15_000);
route();
