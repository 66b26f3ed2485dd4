// Validates docs/openapi.yaml as an OpenAPI 3.1 document, then runs the
// server's HTTP tests (the server_test binary, argv[2]) recording every answer
// they receive, and checks each against the document: a declared status, a
// declared content type, and a body that matches its schema.
import SwaggerParser from '@apidevtools/swagger-parser';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const docPath = join(here, '..', '..', 'docs', 'openapi.yaml');
const binary = process.argv[2];
if (!binary) throw new Error('usage: node validate.mjs SERVER_TEST_BINARY');

await SwaggerParser.validate(docPath);
const doc = await SwaggerParser.dereference(docPath);
console.log(`docs/openapi.yaml: a valid OpenAPI ${doc.openapi} document, ${Object.keys(doc.paths).length} paths`);

const dir = mkdtempSync(join(tmpdir(), 'loam-openapi-'));
const record = join(dir, 'answers.jsonl');
execFileSync(binary, ['--gtest_filter=ApiTest.*:AuthHttpTest.*'], {
  env: { ...process.env, LOAM_API_RECORD: record },
  stdio: ['ignore', 'ignore', 'inherit'],
});
const answers = readFileSync(record, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
rmSync(dir, { recursive: true, force: true });

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
const failures = [];
const checked = new Set();
for (const a of answers) {
  const where = `${a.method} ${a.pattern} ${a.status}`;
  const op = doc.paths[a.pattern]?.[a.method.toLowerCase()];
  const response = op?.responses?.[String(a.status)];
  if (!response) { failures.push(`${where}: not declared`); continue; }
  const media = (a.contentType ?? '').split(';')[0].trim();
  if (!response.content) {
    if (media) failures.push(`${where}: declares no body, got ${media}`);
    continue;
  }
  const content = response.content[media];
  if (!content) { failures.push(`${where}: ${media || 'no content type'} not declared`); continue; }
  checked.add(where);
  if (media === 'application/x-ndjson') {
    for (const line of a.body.split('\n').filter(Boolean)) {
      try { JSON.parse(line); } catch { failures.push(`${where}: a line is not JSON`); break; }
    }
    continue;
  }
  if (!media.endsWith('json')) continue;
  const validate = ajv.compile(content.schema);
  if (!validate(JSON.parse(a.body))) {
    failures.push(`${where}: ${ajv.errorsText(validate.errors)} in ${a.body.slice(0, 300)}`);
  }
}
console.log(`${answers.length} answers checked; ${checked.size} distinct route/status pairs`);
if (failures.length) {
  console.error([...new Set(failures)].join('\n'));
  process.exit(1);
}
