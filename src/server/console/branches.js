// Branches: the list, create one, compare one with main (each table's rows
// on both), and merge it with its checks, showing what each check found.
import { get, getLines, postJson, enc } from './api.js';
import { h, fill, table, field, problemBox, newKey } from './dom.js';

export async function branchesPage() {
  const out = [h('h1', {}, 'Branches')];
  let branches;
  try {
    branches = (await get('/v1/branches?limit=1000')).branches;
  } catch (err) {
    out.push(problemBox(err));
    return out;
  }
  out.push(table('Branches', ['Branch', 'Version', 'Created from', 'Protected'], branches.map((b) => [
    b.name, b.version, b.parent ? `${b.parent} at ${b.parentVersion}` : '', b.protected ? 'yes' : 'no'])));
  const others = branches.filter((b) => b.parent);
  out.push(createForm(branches), compareSection(others), mergeSection(others));
  return out;
}

function branchSelect(id, branches) {
  return h('select', { id }, branches.map((b) => h('option', { value: b.name }, b.name)));
}

function createForm(branches) {
  const name = h('input', { id: 'branch-name', required: true, autocomplete: 'off' });
  const from = branchSelect('branch-from', branches);
  const status = h('div', { 'aria-live': 'polite' });
  const create = async (e) => {
    e.preventDefault();
    try {
      await postJson('/v1/branches', { name: name.value.trim(), from: from.value }, { ok: [201] });
      window.dispatchEvent(new HashChangeEvent('hashchange'));
    } catch (err) {
      fill(status, problemBox(err));
    }
  };
  return h('section', { 'aria-labelledby': 'create-h' }, h('h2', { id: 'create-h' }, 'Create a branch'),
    h('form', { class: 'row', onsubmit: create }, field('Name', name), field('From', from),
      h('button', { type: 'submit' }, 'Create branch')), status);
}

// A table's row count on a branch (main when none); "absent" when the branch
// has no such table.
const count = async (name, branch) => {
  const body = { query: `SELECT count(*) FROM "${name.replace(/"/g, '""')}"`, ...(branch && { branch }) };
  try {
    const lines = await getLines('POST', '/v1/sql', {
      body: JSON.stringify(body), headers: { 'content-type': 'application/json' },
    });
    return lines[1][0];
  } catch (err) {
    if (err.code === 'not_found' || /no such table/.test(err.detail)) return 'absent';
    throw err;
  }
};

function compareSection(branches) {
  const pick = branchSelect('compare-branch', branches);
  const result = h('div', { id: 'compare', 'aria-live': 'polite' });
  const compare = async (e) => {
    e.preventDefault();
    try {
      const tables = (await get('/v1/tables?limit=1000')).tables;
      const rows = [];
      for (const t of tables) {  // one statement at a time: admission counts them
        const [onMain, onBranch] = [await count(t.name), await count(t.name, pick.value)];
        rows.push([t.name, onMain, onBranch, onMain === onBranch ? 'same count' : 'differs']);
      }
      fill(result, table(`Rows on main and on ${pick.value}`, ['Table', 'main', pick.value, ''], rows));
    } catch (err) {
      fill(result, problemBox(err));
    }
  };
  return h('section', { 'aria-labelledby': 'compare-h' }, h('h2', { id: 'compare-h' }, 'Compare with main'),
    h('form', { class: 'row', onsubmit: compare }, field('Branch', pick),
      h('button', { type: 'submit', disabled: branches.length === 0 }, 'Compare')), result);
}

// POST /v1/branches/{name}/merge into the branch it was created from; the
// Idempotency-Key is the merge id, so a retry after a lost answer answers
// the same merge.
function mergeSection(branches) {
  const pick = branchSelect('merge-branch', branches);
  const checks = h('textarea', { id: 'merge-checks', rows: 4, spellcheck: 'false' }, '[]');
  const result = h('div', { id: 'merge-result', 'aria-live': 'polite' });
  const merge = async (e) => {
    e.preventDefault();
    let parsed;
    try {
      parsed = JSON.parse(checks.value || '[]');
    } catch (err) {
      return fill(result, problemBox({ code: 'invalid_argument', detail: `checks: not JSON: ${err.message}` }));
    }
    const into = branches.find((b) => b.name === pick.value).parent;
    if (!window.confirm(`Merge ${pick.value} into ${into}?`)) return;
    try {
      const m = (await postJson(`/v1/branches/${enc(pick.value)}/merge`, { into, checks: parsed },
        { ok: [200], headers: { 'idempotency-key': newKey() } })).json;
      fill(result, h('p', { class: 'notice' }, `Merged into ${m.into}: ${m.mergeId}, version `,
        `${m.workspaceVersion}; ${parsed.length} checks passed.`),
      table('Merged tables', ['Table', 'Change', 'Version', 'Rows'],
        m.tables.map((t) => [t.name, t.change, t.tableVersion, t.rowCount ?? ''])));
    } catch (err) {
      fill(result, problemBox(err), err.problem?.check ? h('p', {}, `Failed check: ${err.problem.check}`) : null);
    }
  };
  return h('section', { 'aria-labelledby': 'merge-h' }, h('h2', { id: 'merge-h' }, 'Merge'),
    h('form', { onsubmit: merge }, field('Branch', pick),
      field('Checks (JSON)', checks, '[{"name": "rows", "table": "t", "minRows": 1}, {"name": "no nulls", "sql": "…"}]'),
      h('button', { type: 'submit', disabled: branches.length === 0 }, 'Merge')), result);
}
