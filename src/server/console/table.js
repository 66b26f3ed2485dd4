// A table: schema, key, row count, grants, its history with who and when,
// a preview of its rows at any version or branch, and a SQL box.
import { get, getLines, enc } from './api.js';
import { h, fill, table, facts, field, when, runLink, problemBox } from './dom.js';

export async function tablePage(name, params) {
  const out = [h('h1', {}, `Table ${name}`)];
  try {
    const [t, history] = await Promise.all([get(`/v1/tables/${enc(name)}`),
      get(`/v1/tables/${enc(name)}/history`)]);
    out.push(
      facts([['Rows', t.rowCount], ['Version', t.version], ['Workspace version', t.manifestVersion],
        ['Key', t.keys.join(', ') || 'none'],
        ['Schema version', t.schemaVersion], ['Table id', t.tableId],
        ['Additive schema', t.additiveSchema ? 'yes' : 'no']]),
      table('Columns', ['Column', 'Type', 'Nullable'], t.columns.map((c) => [
        c.name, c.type, c.nullable === false ? 'no' : 'yes'])),
      table('Grants', ['Principal', 'Role'], (t.grants ?? []).map((g) => [g.principal, g.role])),
      table('History', ['Version', 'Event', 'Rows', 'By', 'When', 'Runs'], history.history.slice().reverse()
        .map((e) => [e.tableVersion, e.event + (e.detail ? ` (${e.detail})` : ''), e.rowCount ?? '',
          e.actor, when(e.createdAt), (e.runIds ?? []).flatMap((id, i) => (i ? [' ', runLink(id)] : [runLink(id)]))])),
    );
  } catch (err) {
    out.push(problemBox(err));
    return out;
  }
  out.push(previewSection(name, params), sqlSection(name, params));
  return out;
}

// GET /v1/tables/{name}/rows at a workspace (manifest) version or on a
// branch.
function previewSection(name, params) {
  const branch = h('input', { id: 'preview-branch', value: params.get('branch') ?? '', placeholder: 'main' });
  const version = h('input', { id: 'preview-version', inputmode: 'numeric', value: params.get('version') ?? '',
    placeholder: 'latest' });
  const limit = h('input', { id: 'preview-limit', inputmode: 'numeric', value: '50' });
  const result = h('div', { id: 'preview', 'aria-live': 'polite' });
  const show = async (e) => {
    e?.preventDefault();
    const q = new URLSearchParams({ limit: limit.value || '50' });
    if (branch.value.trim()) q.set('branch', branch.value.trim());
    if (version.value.trim()) q.set('version', version.value.trim());
    try {
      const rows = await getLines('GET', `/v1/tables/${enc(name)}/rows?${q}`);
      const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
      fill(result, table(`${rows.length} rows`, columns, rows.map((r) => columns.map((c) => show1(r[c])))));
    } catch (err) {
      fill(result, problemBox(err));
    }
  };
  const section = h('section', { 'aria-labelledby': 'preview-h' }, h('h2', { id: 'preview-h' }, 'Rows'),
    h('form', { class: 'row', onsubmit: show }, field('Branch', branch), field('Workspace version', version),
      field('Limit', limit), h('button', { type: 'submit' }, 'Show rows')),
    result);
  show();
  return section;
}

function show1(v) {
  if (v === null || v === undefined) return h('span', { class: 'null' }, 'null');
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}

// POST /v1/sql: one read-only statement at the caller's grants.
function sqlSection(name, params) {
  const text = h('textarea', { id: 'sql', rows: 3, spellcheck: 'false' },
    `SELECT * FROM "${name.replace(/"/g, '""')}" LIMIT 20`);
  const branch = h('input', { id: 'sql-branch', value: params.get('branch') ?? '', placeholder: 'main' });
  const result = h('div', { id: 'sql-result', 'aria-live': 'polite' });
  const run = async (e) => {
    e.preventDefault();
    const body = { query: text.value };  // the server caps the rows (sqlMaxRows)
    if (branch.value.trim()) body.branch = branch.value.trim();
    try {
      const lines = await getLines('POST', '/v1/sql', {
        body: JSON.stringify(body), headers: { 'content-type': 'application/json' },
      });
      const end = lines.at(-1)?.end;
      const columns = lines[0].columns.map((c) => c.name);
      fill(result, table(`${lines.length - 2} rows${end?.truncated ? ' (truncated)' : ''}`, columns,
        lines.slice(1, -1).map((r) => r.map(show1))));
    } catch (err) {
      fill(result, problemBox(err));
    }
  };
  return h('section', { 'aria-labelledby': 'sql-h' }, h('h2', { id: 'sql-h' }, 'SQL'),
    h('form', { onsubmit: run }, field('Statement', text, 'read-only; every table you may read'),
      field('Branch', branch), h('button', { type: 'submit' }, 'Run')),
    result);
}
