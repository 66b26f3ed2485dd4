// The production-shaped mix of bench/readiness (documented in
// docs/benchmarks.md, "Readiness"): what each submission loads, how big, in
// which format, and which of them are invalid, validation-only, retried, or
// resent after a dropped answer. Deterministic per submission number.

export function parseOptions(argv) {
  const o = {
    backend: 'local', processes: 1, clients: 64, seconds: 60, rate: 8, profile: 'mix',
    overload: 0, faults: false, killEvery: 5000, killTrials: 0, storeFaults: 0, slowloris: 0,
    storeLatency: '', largeDuring: 0, inline: false, rows: 0, pipelines: 0, admission: '', unkeyed: false,
    workers: 2, smallWorkers: -1, leaseSeconds: 5, maxMib: 100, largeMib: 20, seed: 1, keep: false,
    openLoop: false, inlineRecordBytes: -1,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const name = a.replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    if (!(name in o)) throw new Error(`unknown option ${a} (see bench/readiness)`);
    if (typeof o[name] === 'boolean') { o[name] = true; continue; }
    const v = argv[++i];
    o[name] = typeof o[name] === 'number' ? Number(v) : v;
    if (typeof o[name] === 'number' && !Number.isFinite(o[name])) throw new Error(`${a}: a number`);
  }
  if (!['local', 's3'].includes(o.backend)) throw new Error('--backend local|s3');
  if (!['mix', 'small', 'large'].includes(o.profile)) throw new Error('--profile mix|small|large');
  // Admission: the scale profiles lift it unless told otherwise.
  o.admission ||= o.profile === 'mix' ? 'default' : 'lifted';
  if (!['default', 'lifted'].includes(o.admission)) throw new Error('--admission default|lifted');
  if (o.killTrials > 0) { o.faults = true; o.killEvery = Math.min(o.killEvery, 300); }
  // Store faults wrap the store, which hides the S3 presigner (uploads would
  // go through the server): on S3 they stay off unless asked for.
  if (o.faults && o.storeFaults === 0 && o.killTrials === 0 && o.backend === 'local') o.storeFaults = 0.002;
  return o;
}

// Share of submissions, table, mode and format per kind; `pipelines` of each.
export const MIX = [
  { name: 'append-csv', table: 'events', mode: 'append', format: 'csv', share: 0.40, pipelines: 4 },
  { name: 'append-jsonl', table: 'events_json', mode: 'append', format: 'jsonl', share: 0.20, pipelines: 2 },
  { name: 'upsert-csv', table: 'accounts', mode: 'upsert', format: 'csv', share: 0.25, pipelines: 2 },
  { name: 'replace-csv', table: 'snapshot', mode: 'replace', format: 'csv', share: 0.05, pipelines: 1 },
  // loader-r's table: its grant is revoked mid-run (--faults).
  { name: 'guarded', table: 'guarded', mode: 'append', format: 'csv', share: 0.05, pipelines: 1 },
  // Dropped mid-run (--faults).
  { name: 'doomed', table: 'doomed', mode: 'append', format: 'csv', share: 0.05, pipelines: 1 },
];

// A uniform number in [0, 1) for (seed, n, salt).
function unit(seed, n, salt) {
  const mix = (h) => {
    h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
    h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
    return (h ^ (h >>> 16)) >>> 0;
  };
  return mix(mix(mix(salt + 0x9e3779b9) ^ n) ^ seed) / 2 ** 32;
}

export function pick(opt, n) {
  if (opt.profile !== 'mix') return { ...MIX[0] };
  let u = unit(opt.seed, n, 1);
  let kind = MIX[MIX.length - 1];
  for (const k of MIX) {
    if (u < k.share) { kind = k; break; }
    u -= k.share;
  }
  const flag = (salt, p) => unit(opt.seed, n, salt) < p;
  return {
    ...kind,
    gzip: flag(2, 0.30),
    invalid: flag(3, 0.05),
    validationOnly: flag(4, 0.03),
    retry: flag(5, 0.05),
    dropResponse: flag(6, 0.03),
    sourceId: flag(7, 0.30),
  };
}

// Bytes of input: 70 % 1–16 KiB, 20 % 16 KiB–1 MiB, 8 % 1–10 MiB, 2 % 10–100
// MiB (log-uniform within each class, capped at --max-mib).
export function sizeOf(opt, n) {
  if (opt.rows > 0) return opt.rows * 52;  // about `rows` rows of CSV
  if (opt.profile === 'small') return 1024;
  if (opt.profile === 'large') return opt.largeMib << 20;
  const classes = [[0.70, 1 << 10, 16 << 10], [0.20, 16 << 10, 1 << 20], [0.08, 1 << 20, 10 << 20], [0.02, 10 << 20, 100 << 20]];
  let u = unit(opt.seed, n, 8);
  for (const [share, lo, hi] of classes) {
    if (u < share || share === 0.02) {
      const x = Math.exp(Math.log(lo) + unit(opt.seed, n, 9) * (Math.log(hi) - Math.log(lo)));
      return Math.min(Math.round(x), opt.maxMib << 20);
    }
    u -= share;
  }
}

export const ROW_ID_SPAN = 1e7;  // row ids: submission * span + row

// The input of submission `n`, about `bytes` long: rows with ids n*span+i.
// An invalid input has a bad amount in its last row.
export function makeRows(kind, n, bytes, invalid) {
  const pad = 'x'.repeat(24);
  const rowBytes = kind.format === 'csv' ? 52 : 79;  // about, for ids of 10 digits
  const rows = Math.max(1, Math.min(ROW_ID_SPAN - 1, Math.floor(bytes / rowBytes)));
  const parts = [kind.format === 'csv' ? 'id,amount,note\n' : ''];
  let chunk = [];
  for (let i = 0; i < rows; i++) {
    const id = n * ROW_ID_SPAN + i;
    const amount = invalid && i === rows - 1 ? 'not-a-number' : `${i % 100000}.${String(i % 100).padStart(2, '0')}`;
    chunk.push(kind.format === 'csv'
      ? `${id},${amount},${pad}${i}\n`
      : `{"id":${id},"amount":${invalid && i === rows - 1 ? '"oops"' : amount},"note":"${pad}${i}"}\n`);
    if (chunk.length === 10000) { parts.push(chunk.join('')); chunk = []; }
  }
  parts.push(chunk.join(''));
  return { data: Buffer.from(parts.join('')), rows };
}
