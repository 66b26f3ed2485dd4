"""Where LoamClient.submit_files keeps a submission while it is under way.

A process that dies finishes it with LoamClient.resume (the contract of
`loam submit --resume`). A store has load(key) -> dict | None, save(key,
state), remove(key) and keys(). FileStateStore, the default, keeps one JSON
file per submission, written to a temporary file, fsynced and renamed,
readable by its owner only.
"""

import base64
import json
import os


def default_state_dir():
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "loam", "python-submissions")


class FileStateStore:
    def __init__(self, directory=None):
        self.directory = directory or default_state_dir()

    def _path(self, key):
        # Keys are the client's idempotency keys: stored under a safe name.
        name = base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")
        return os.path.join(self.directory, name + ".json")

    def load(self, key):
        try:
            with open(self._path(key), encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def save(self, key, state):
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        path = self._path(key)
        tmp = path + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, path)
        dir_fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def remove(self, key):
        try:
            os.remove(self._path(key))
        except FileNotFoundError:
            pass

    def keys(self):
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return []
        out = []
        for name in names:
            if not name.endswith(".json"):
                continue
            stem = name[:-5]
            out.append(base64.urlsafe_b64decode(stem + "=" * (-len(stem) % 4)).decode())
        return sorted(out)


class MemoryStateStore:
    """For tests and short-lived processes: nothing survives the process."""

    def __init__(self):
        self._states = {}

    def load(self, key):
        state = self._states.get(key)
        return json.loads(state) if state is not None else None

    def save(self, key, state):
        self._states[key] = json.dumps(state)

    def remove(self, key):
        self._states.pop(key, None)

    def keys(self):
        return sorted(self._states)
