// Building the page: elements from data, text always as text (never parsed
// as HTML), and the few formats every page shares.

// h('a', {href: '#/'}, 'home', child...): attributes starting with "on" are
// listeners; null, undefined and false children are skipped.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else if (name === 'class') el.className = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

// Replaces what `el` holds.
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// A table with a caption and a header row; each row an array of cells.
export function table(caption, headers, rows) {
  return h('table', {},
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, headers.map((x) => h('th', { scope: 'col' }, x)))),
    h('tbody', {}, rows.length === 0
      ? h('tr', {}, h('td', { colspan: headers.length, class: 'empty' }, 'none'))
      : rows.map((r) => h('tr', {}, r.map((c) => h('td', {}, c))))));
}

// A definition list of [term, value] pairs.
export function facts(pairs) {
  return h('dl', { class: 'facts' },
    pairs.filter(([, v]) => v !== undefined && v !== null && v !== '')
      .map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

export const link = (href, text) => h('a', { href }, text);
export const tableLink = (name) => link(`#/tables/${encodeURIComponent(name)}`, name);
export const pipelineLink = (id, text = id) => link(`#/pipelines/${encodeURIComponent(id)}`, text);
export const runLink = (id) => link(`#/runs/${encodeURIComponent(id)}`, id);

export function when(rfc3339) {
  if (!rfc3339) return '';
  const d = new Date(rfc3339);
  return h('time', { datetime: rfc3339, title: rfc3339 }, d.toLocaleString());
}

export function bytes(n) {
  if (n === undefined || n === null) return '';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = Number(n);
  while (v >= 1024 && i < units.length - 1) { v /= 1024; ++i; }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

export const stateBadge = (state) => h('span', { class: `state state-${state}` }, state);

// A problem (or any error) shown where the page would have been.
export function problemBox(err) {
  const code = err.code ? `${err.code}: ` : '';
  return h('p', { class: 'problem', role: 'alert' }, code + (err.detail ?? err.message ?? String(err)));
}

// A labelled form field: the label's `for` names the control's id.
export function field(label, control, hint) {
  return h('div', { class: 'field' }, h('label', { for: control.id }, label), control,
    hint ? h('small', {}, hint) : null);
}

// Random ids for Idempotency-Key: crypto.randomUUID needs a secure context,
// getRandomValues does not.
export function newKey() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}
