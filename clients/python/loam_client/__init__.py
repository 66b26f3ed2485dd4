"""A dependency-free client of the Loam ingestion API (docs/server.md).

Every call follows the retry contract: on 429, 5xx or a broken connection
the *same* request (for a submission, the same body with the same
idempotency key) after Retry-After (429) or a jittered exponential backoff.
submit_files keeps each submission in a state store (a file per submission by
default) until it is answered, so a process that dies finishes it with
resume(), exactly as `loam submit --resume` does.
"""

import hashlib
import http.client
import json
import random
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from datetime import datetime
from email.utils import parsedate_to_datetime

from .state import FileStateStore, MemoryStateStore, default_state_dir

__all__ = ["LoamClient", "LoamError", "FileStateStore", "MemoryStateStore",
           "default_state_dir", "TERMINAL_STATES"]

TERMINAL_STATES = ("succeeded", "failed", "partial", "cancelled")


class LoamError(Exception):
    """A refusal: `status` (0 when no answer came), `code` (docs/errors.md)."""

    def __init__(self, status, problem=None):
        problem = problem or {}
        super().__init__(f"HTTP {status}: {problem.get('detail', 'request failed')}")
        self.status = status
        self.code = problem.get("code")
        self.problem = problem


class Answer:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = {k.lower(): v for k, v in headers.items()}
        self.text = body.decode("utf-8", errors="replace")
        self.json = None
        if "json" in self.headers.get("content-type", "") and self.text:
            try:
                self.json = json.loads(self.text)
            except ValueError:
                self.json = {"detail": self.text}
        elif self.text and not 200 <= status < 300:
            self.json = {"detail": self.text}  # S3 answers XML


def urllib_transport(method, url, body, headers, timeout):
    """Sends one request; (status, headers, body bytes). Raises OSError when
    no answer came (refused, reset, timed out)."""
    req = urllib.request.Request(url, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            return res.status, dict(res.headers.items()), res.read()
    except urllib.error.HTTPError as err:
        with err:
            return err.code, dict(err.headers.items()), err.read()
    except urllib.error.URLError as err:
        raise OSError(str(err.reason)) from err
    except http.client.HTTPException as err:  # an answer cut short: no answer
        raise OSError(f"{type(err).__name__}: {err}") from err


def _quote(part):
    return urllib.parse.quote(part, safe="")


class LoamClient:
    """base_url: "http://127.0.0.1:8080"; token: a bearer token (JWT);
    state_store: where submit_files keeps submissions (default: a
    FileStateStore); transport: how one request is sent (urllib_transport)."""

    def __init__(self, base_url, token, retry_for=900.0, state_store=None,
                 transport=urllib_transport, timeout=60.0):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.retry_for = retry_for
        self.state_store = state_store if state_store is not None else FileStateStore()
        self.transport = transport
        self.timeout = timeout

    # -- the retry contract --------------------------------------------------

    def _request(self, method, url, body=None, headers=None, auth=True):
        h = dict(headers or {})
        if auth:
            h["Authorization"] = f"Bearer {self.token}"
        status, got, data = self.transport(method, url, body, h, self.timeout)
        return Answer(status, got, data)

    def _retrying(self, method, url, body=None, headers=None, auth=True, on_retry=None):
        """Sends one request until it is answered with something other than
        429, 5xx or a 409 carrying Retry-After; raises `unavailable` once
        retrying would pass retry_for."""
        deadline = time.monotonic() + self.retry_for
        backoff = 0.2
        attempt = 0
        while True:
            attempt += 1
            answer, why = None, None
            try:
                answer = self._request(method, url, body, headers, auth)
            except OSError as err:
                why = f"connection: {err}"
            retry_after = answer.headers.get("retry-after") if answer else None
            if answer is not None and not (answer.status == 429 or answer.status >= 500 or
                                           (answer.status == 409 and retry_after)):
                return answer
            why = why or f"HTTP {answer.status}"
            wait = _retry_after_seconds(retry_after)
            if wait is None:
                wait = backoff / 2 + random.random() * backoff / 2
                backoff = min(backoff * 2, 30.0)
            if time.monotonic() + wait > deadline:
                raise LoamError(answer.status if answer else 0,
                                {"code": "unavailable", "detail": f"{why} after {attempt} attempts"})
            if on_retry:
                on_retry({"attempt": attempt, "why": why, "wait": wait})
            time.sleep(wait)

    def _answer(self, method, path, ok, body=None, headers=None, on_retry=None):
        r = self._retrying(method, self.base_url + path, body, headers, True, on_retry)
        if r.status not in ok:
            raise LoamError(r.status, r.json)
        return r.json

    def _post_json(self, path, ok, doc, headers=None, on_retry=None):
        h = {"Content-Type": "application/json", **(headers or {})}
        return self._answer("POST", path, ok, json.dumps(doc).encode(), h, on_retry)

    # -- tables, pipelines, uploads ------------------------------------------

    # Each creating call sends one Idempotency-Key on all its retries, so a
    # retry after a lost answer gets the first answer instead of a second
    # pipeline, upload, cancel or revert.

    def create_pipeline(self, spec, idempotency_key=None, on_retry=None):
        """spec: {"name", "table", "mode", "format", ...}; the pipeline."""
        return self._post_json("/v1/pipelines", (201,), spec,
                               {"Idempotency-Key": idempotency_key or str(uuid.uuid4())}, on_retry)

    def get_pipeline(self, pipeline_id):
        """(pipeline, etag): the ETag names this state for update/delete's if_match."""
        r = self._retrying("GET", f"{self.base_url}/v1/pipelines/{_quote(pipeline_id)}")
        if r.status != 200:
            raise LoamError(r.status, r.json)
        return r.json, r.headers.get("etag")

    def update_pipeline(self, pipeline_id, patch, if_match=None):
        """Changes fields other than name and table; with `if_match` (an etag)
        only if the pipeline still has that state (else 412
        precondition_failed, nothing changed). (pipeline, etag)."""
        headers = {"Content-Type": "application/json"}
        if if_match:
            headers["If-Match"] = if_match
        r = self._retrying("PATCH", f"{self.base_url}/v1/pipelines/{_quote(pipeline_id)}",
                           json.dumps(patch).encode(), headers)
        if r.status != 200:
            raise LoamError(r.status, r.json)
        return r.json, r.headers.get("etag")

    def pause_pipeline(self, pipeline_id, if_match=None):
        """Paused, a pipeline refuses new uploads and submissions with 429
        pipeline_paused (retried after Retry-After, like any 429) and its
        queued runs wait. (pipeline, etag)."""
        return self.update_pipeline(pipeline_id, {"paused": True}, if_match)

    def resume_pipeline(self, pipeline_id, if_match=None):
        return self.update_pipeline(pipeline_id, {"paused": False}, if_match)

    def delete_pipeline(self, pipeline_id, if_match=None):
        headers = {"If-Match": if_match} if if_match else {}
        self._answer("DELETE", f"/v1/pipelines/{_quote(pipeline_id)}", (204,), None, headers)

    def create_upload(self, pipeline_id, size, sha256=None, file_name=None, on_retry=None,
                      idempotency_key=None):
        """A signed place for `size` bytes: {uploadId, url, method, headers, expiresAt}."""
        doc = {"size": size}
        if sha256:
            doc["sha256"] = sha256
        if file_name:
            doc["fileName"] = file_name
        return self._post_json(f"/v1/pipelines/{_quote(pipeline_id)}/uploads", (201,), doc,
                               {"Idempotency-Key": idempotency_key or str(uuid.uuid4())}, on_retry)

    def get_upload(self, upload_id):
        """The upload as its creator sees it, with `received`."""
        return self._answer("GET", f"/v1/uploads/{_quote(upload_id)}", (200,))

    def upload(self, ticket, data, on_retry=None):
        """Sends exactly the ticket's method, headers and `data` to its url. A
        PUT resent after its answer was lost finds the upload received (409
        from loam serve, 412 from S3): success once the upload confirms it."""
        headers = dict(ticket.get("headers", {}))
        r = self._retrying(ticket["method"], ticket["url"], bytes(data), headers, False, on_retry)
        if 200 <= r.status < 300:
            return
        if r.status in (409, 412):
            if self.get_upload(ticket["uploadId"]).get("received"):
                return
            raise LoamError(0, {"code": "unavailable",
                                "detail": f"the PUT of upload {ticket['uploadId']} answered HTTP "
                                          f"{r.status} but its bytes were not received"})
        raise LoamError(r.status, r.json)

    # -- runs ----------------------------------------------------------------

    def submit_run(self, pipeline_id, body, idempotency_key, on_retry=None):
        """Submits a run. `body` is a dict or its exact JSON text, fixed once and
        resent unchanged with `idempotency_key` on every retry. Returns
        (run, replayed)."""
        if not idempotency_key:
            raise TypeError("submit_run needs an idempotency_key (one per logical submission)")
        text = body if isinstance(body, str) else json.dumps(body)
        r = self._retrying("POST", f"{self.base_url}/v1/pipelines/{_quote(pipeline_id)}/runs",
                           text.encode(), {"Content-Type": "application/json",
                                           "Idempotency-Key": idempotency_key}, True, on_retry)
        if r.status != 202:
            raise LoamError(r.status, r.json)
        return r.json, r.headers.get("idempotency-replayed") == "true"

    def delete_rows(self, table, body, idempotency_key=None, on_retry=None):
        """Deletes `table`'s rows as a run: `body` is {"where": [filter...]} or
        {"keys": [{column: value...}...], "keyColumns"?}, with "errorPolicy"?
        and "expectedTableVersion"?; resent unchanged with the key on every
        retry. Returns (run, replayed); wait_for_run tells its end."""
        r = self._retrying("POST", f"{self.base_url}/v1/tables/{_quote(table)}/deletes",
                           json.dumps(body).encode(),
                           {"Content-Type": "application/json",
                            "Idempotency-Key": idempotency_key or str(uuid.uuid4())},
                           True, on_retry)
        if r.status != 202:
            raise LoamError(r.status, r.json)
        return r.json, r.headers.get("idempotency-replayed") == "true"

    def submit_files(self, pipeline_id, files, idempotency_key=None, source_id=None,
                     validate_first=False, on_retry=None):
        """Uploads `files` ([(data, file_name or None)]) and submits them as one
        run, keeping the state in the state store at every step (the ticket
        before its bytes go, each upload once received, the exact request
        before it is sent); removed once answered. Returns (run, replayed,
        idempotency_key). A call that dies is finished by resume(key, files).
        With validate_first, a validationOnly run of the uploads goes first
        (key + ":validate") and the load of the same uploads only if it
        succeeds; otherwise `run` is that validation, terminal, and nothing is
        loaded."""
        key = idempotency_key or str(uuid.uuid4())
        if validate_first and len(key) > 246:
            raise TypeError("with validate_first an idempotency key is at most 246 characters "
                            "(\":validate\" is added)")
        state = self.state_store.load(key)
        if state is None:
            state = {"version": 1, "key": key, "pipeline": pipeline_id, "sourceId": source_id,
                     "validateFirst": validate_first,
                     "files": [{"size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                                "fileName": name} for data, name in files]}
            self.state_store.save(key, state)
        return self._finish(state, files, on_retry)

    def resume(self, idempotency_key, files=(), on_retry=None):
        """Finishes a submission kept in the state store; `files` as given to
        submit_files (needed only while some are not uploaded yet)."""
        state = self.state_store.load(idempotency_key)
        if state is None:
            raise LoamError(0, {"code": "not_found",
                                "detail": f"no submission {idempotency_key} is kept"})
        return self._finish(state, list(files), on_retry)

    def _finish(self, state, files, on_retry):
        try:
            answer = self._send(state, files, on_retry)
        except LoamError as err:
            # A refusal ends the submission; retries that ran out, or a refused
            # token (a new one may finish it), keep it for resume().
            if err.code != "unavailable" and err.status not in (401, 403):
                self.state_store.remove(state["key"])
            raise
        self.state_store.remove(state["key"])
        return answer

    def _send(self, state, files, on_retry):
        key = state["key"]
        for i, f in enumerate(state["files"]):
            if f.get("uploaded"):
                continue
            data = files[i][0] if i < len(files) else None
            if data is None or len(data) != f["size"] or \
                    hashlib.sha256(data).hexdigest() != f["sha256"]:
                raise TypeError(f"file {i} is not the bytes this submission was started with")
            ticket = f.get("ticket")
            if not ticket or _expires_within(ticket["expiresAt"], 60):
                f["ticket"] = ticket = self.create_upload(
                    state["pipeline"], f["size"], f["sha256"], f.get("fileName"), on_retry)
                self.state_store.save(key, state)  # before the bytes go
            self.upload(ticket, data, on_retry)
            f["uploadId"] = ticket["uploadId"]
            f["uploaded"] = True
            del f["ticket"]  # it was a capability; what is left is the upload id
            self.state_store.save(key, state)
        if not state.get("request"):
            uploads = [f["uploadId"] for f in state["files"]]
            if state.get("validateFirst"):
                state["validateRequest"] = json.dumps(
                    {"uploads": uploads, "errorPolicy": "validationOnly"})
            body = {"uploads": uploads}
            if state.get("sourceId"):
                body["source"] = {"id": state["sourceId"]}
            state["request"] = json.dumps(body)  # the exact bytes, resent on every retry
            self.state_store.save(key, state)
        if state.get("validateFirst") and not state.get("validated"):
            run, _ = self.submit_run(state["pipeline"], state["validateRequest"],
                                     key + ":validate", on_retry)
            checked = self.wait_for_run(run["id"])
            if checked["state"] != "succeeded":
                return checked, False, key
            state["validated"] = True
            self.state_store.save(key, state)
        run, replayed = self.submit_run(state["pipeline"], state["request"], key, on_retry)
        return run, replayed, key

    def get_run(self, run_id, wait_seconds=None):
        """The run now; with `wait_seconds` (1 to 60) the server answers when the
        run is terminal or when the wait ends, whichever is first."""
        wait = f"?wait={int(wait_seconds)}" if wait_seconds else ""
        return self._answer("GET", f"/v1/runs/{_quote(run_id)}{wait}", (200,))

    def wait_for_run(self, run_id, timeout=600.0, on_progress=None):
        """The run once terminal (TERMINAL_STATES); long-polls, so the answer
        comes as the run ends. A failed run's document carries its error."""
        deadline = time.monotonic() + timeout
        long_poll, pause = True, 0.1
        while True:
            left = max(1, min(30, int(deadline - time.monotonic() + 0.999)))
            try:
                run = self.get_run(run_id, wait_seconds=left if long_poll else None)
            except LoamError as err:
                if not (long_poll and err.status == 400):
                    raise
                long_poll = False  # a server that takes no such wait: poll instead
                continue
            if on_progress:
                on_progress(run)
            if run.get("state") in TERMINAL_STATES:
                return run
            if time.monotonic() >= deadline:
                raise TimeoutError(f"run {run_id} still {run.get('state')} after {timeout} s")
            if not long_poll:
                time.sleep(pause)
                pause = min(pause * 2, 2.0)

    def cancel_run(self, run_id, idempotency_key=None):
        """A queued run cancelled, or a started one asked to stop (not yet
        terminal, with cancelRequest: wait for it): the run."""
        return self._answer("POST", f"/v1/runs/{_quote(run_id)}/cancel", (200, 202), b"",
                            {"Idempotency-Key": idempotency_key or str(uuid.uuid4())})

    # -- branches (docs/branches.md) -------------------------------------------

    def create_branch(self, name, from_branch=None, version=None):
        """A new branch (the workspace owner only): {name, version, parent, parentVersion}."""
        doc = {"name": name}
        if from_branch:
            doc["from"] = from_branch
        if version is not None:
            doc["version"] = version
        return self._post_json("/v1/branches", (201,), doc)

    def list_branches(self):
        """Every branch, main included, by name."""
        return self._answer("GET", "/v1/branches", (200,))["branches"]

    def get_branch(self, name):
        return self._answer("GET", f"/v1/branches/{_quote(name)}", (200,))

    def delete_branch(self, name):
        self._answer("DELETE", f"/v1/branches/{_quote(name)}", (204,))

    def merge_branch(self, name, into=None, checks=None, idempotency_key=None, on_retry=None):
        """Publishes the branch on the one it was created from in one commit,
        once `checks` ([{name, table, minRows?, maxRows?, unique?} | {name,
        sql}]) pass on its pinned state. The idempotency key is the merge id:
        a retry answers the same merge (alreadyMerged). The merge."""
        doc = {}
        if into:
            doc["into"] = into
        if checks:
            doc["checks"] = checks
        return self._post_json(f"/v1/branches/{_quote(name)}/merge", (200,), doc,
                               {"Idempotency-Key": idempotency_key or str(uuid.uuid4())},
                               on_retry)

    def revert_merge(self, merge_id, into=None, on_retry=None):
        """Undoes the merge `merge_id` into `into` (default main) as one unit,
        in one commit. The merge id names the revert: a retry answers the
        first (alreadyReverted). The revert."""
        doc = {"into": into} if into else {}
        return self._post_json(f"/v1/merges/{_quote(merge_id)}/revert", (200,), doc, None,
                               on_retry)

    def revert_run(self, run_id, idempotency_key=None):
        """One new commit that undoes a succeeded run:
        {revertedRun, commitId, manifestVersion, tableVersion}."""
        return self._answer("POST", f"/v1/runs/{_quote(run_id)}/revert", (200,), b"",
                            {"Idempotency-Key": idempotency_key or str(uuid.uuid4())})

    # -- reads ---------------------------------------------------------------

    def run_errors(self, run_id, on_retry=None):
        """Every error the run kept, in input order: a list of {file, reason,
        code, line, offset, column} (line, offset and column when the error is
        about one row)."""
        r = self._retrying("GET", f"{self.base_url}/v1/runs/{_quote(run_id)}/errors",
                           None, None, True, on_retry)
        if r.status != 200:
            raise LoamError(r.status, r.json)
        return [json.loads(line) for line in r.text.split("\n") if line]

    def list_runs(self, page_size=100, **filters):
        """Every run matching `filters` (pipeline, table, state, since, until as
        RFC 3339 text or an aware datetime, order "newest" (default) or
        "oldest"), read a page of `page_size` at a time: a generator."""
        query = {"limit": str(page_size)}
        for name, value in filters.items():
            if value is not None:
                query[name] = value.isoformat() if hasattr(value, "isoformat") else str(value)
        while True:
            page = self._answer("GET", "/v1/runs?" + urllib.parse.urlencode(query), (200,))
            yield from page["runs"]
            if page["nextCursor"] is None:
                return
            query["cursor"] = page["nextCursor"]

    def usage(self):
        """What admission counts for the caller next to its limits
        (docs/service.md, "Usage")."""
        return self._answer("GET", "/v1/usage", (200,))

    def sql(self, query, branch=None, version=None, limit=None, on_retry=None):
        """One read-only SQL statement over the tables at one state
        (docs/sql.md): {"columns": [{name, type}], "rows": [[...]], "truncated"}."""
        doc = {"query": query}
        if branch:
            doc["branch"] = branch
        if version is not None:
            doc["version"] = version
        if limit is not None:
            doc["limit"] = limit
        r = self._retrying("POST", self.base_url + "/v1/sql", json.dumps(doc).encode(),
                           {"Content-Type": "application/json"}, True, on_retry)
        if r.status != 200:
            raise LoamError(r.status, r.json)
        lines = [json.loads(line) for line in r.text.split("\n") if line]
        end = lines[-1].get("end") if lines and isinstance(lines[-1], dict) else None
        if not end:  # a body cut short after its first chunk lacks the end line
            raise LoamError(r.status, {"code": "unavailable",
                                       "detail": "the SQL answer was cut short"})
        return {"columns": lines[0]["columns"], "rows": lines[1:-1],
                "truncated": end["truncated"]}


def _retry_after_seconds(value):
    """Retry-After as seconds (delta-seconds or an HTTP date); None if absent."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _expires_within(expires_at, seconds):
    try:
        when = datetime.fromisoformat(expires_at.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return True
    return when <= time.time() + seconds
