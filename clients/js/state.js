// Where LoamClient.submitFiles keeps a submission while it is under way, so a
// process that dies can finish it with LoamClient.resume (the same contract
// as `loam submit --resume`). A store is any object with async
// load(key) -> state | undefined, save(key, state), remove(key), keys().
// FileStateStore is Node's default: one JSON file per submission, written to
// a temporary file, fsynced and renamed, readable by its owner only.
import { mkdir, open, readFile, readdir, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

export function defaultStateDir() {
  const base = process.env.XDG_STATE_HOME || join(homedir(), '.local', 'state');
  return join(base, 'loam', 'js-submissions');
}

export class FileStateStore {
  constructor(dir = defaultStateDir()) {
    this.dir = dir;
  }

  #path(key) {
    // Keys are the client's idempotency keys: stored under a name that is
    // always a safe file name.
    return join(this.dir, `${Buffer.from(key).toString('base64url')}.json`);
  }

  async load(key) {
    try {
      return JSON.parse(await readFile(this.#path(key), 'utf8'));
    } catch (err) {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async save(key, state) {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const path = this.#path(key);
    const tmp = `${path}.tmp`;
    const file = await open(tmp, 'w', 0o600);
    try {
      await file.writeFile(JSON.stringify(state));
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(tmp, path);
    const dir = await open(this.dir, 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }

  async remove(key) {
    await rm(this.#path(key), { force: true });
  }

  async keys() {
    let names;
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if (err.code === 'ENOENT') return [];
      throw err;
    }
    return names
      .filter((n) => n.endsWith('.json'))
      .map((n) => Buffer.from(n.slice(0, -5), 'base64url').toString());
  }
}

// Keeps submissions in memory: for callers that persist elsewhere, and tests.
export class MemoryStateStore {
  #states = new Map();
  async load(key) {
    const s = this.#states.get(key);
    return s === undefined ? undefined : JSON.parse(s);
  }
  async save(key, state) {
    this.#states.set(key, JSON.stringify(state));
  }
  async remove(key) {
    this.#states.delete(key);
  }
  async keys() {
    return [...this.#states.keys()];
  }
}
