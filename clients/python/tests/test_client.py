"""The Python client against a real `loam serve` (LOAM_BINARY): uploads, a
run followed to its end through long-polls, replays, the 429 retry with the
same key, a resent PUT confirmed, a submission that died resumed from its
state store, SQL, refusals with their codes, and `pip install` of the
package."""

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest
import uuid
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from loam_client import (FileStateStore, LoamClient, LoamError,  # noqa: E402
                         MemoryStateStore, urllib_transport)

BIN = os.environ.get("LOAM_BINARY")
PACKAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


class Served:
    """A workspace with table t and a `loam serve` on an ephemeral port."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="loam-py-")
        self.env = {**os.environ, "USER": "owner", "LOAM_PRINCIPAL": "", "LOAM_ROOT": ""}
        self.loam("init")
        self.loam("table", "create", "t", "--column", "id:int64:not-null", "--column",
                  "v:string", "--key", "id")
        with open(os.path.join(self.dir, "secret"), "w") as f:
            f.write("a-python-client-test-secret-of-32-bytes\n")
        # One submission per second per principal: the second in a row meets a 429.
        with open(os.path.join(self.dir, "config.json"), "w") as f:
            json.dump({"admission": {"principalBurst": 1, "principalRequestsPerSecond": 1}}, f)
        self.proc = subprocess.Popen(
            [BIN, "serve", "--listen", "127.0.0.1:0", "--auth-hs256-secret-file", "secret",
             "--config", "config.json", "--no-access-log"],
            cwd=self.dir, env=self.env, stdout=subprocess.PIPE, text=True)
        for line in self.proc.stdout:
            m = re.search(r"listening on (http://[0-9.:]+)", line)
            if m:
                self.url = m.group(1)
                break
        else:
            raise RuntimeError(f"loam serve exited {self.proc.wait()}")
        self.token = self.loam("token", "--secret-file", "secret", "--sub", "owner").strip()

    def loam(self, *args):
        return subprocess.run([BIN, *args], cwd=self.dir, env=self.env, check=True,
                              capture_output=True, text=True).stdout

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
        return code


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not BIN:
            raise RuntimeError("set LOAM_BINARY to the loam command")
        cls.served = Served()
        cls.client = cls.make_client()
        cls.pipeline = cls.client.create_pipeline(
            {"name": "py", "table": "t", "mode": "upsert", "format": "csv"})["id"]

    @classmethod
    def tearDownClass(cls):
        code = cls.served.stop()
        if code != 0:
            raise AssertionError(f"loam serve exited {code} on SIGTERM")

    @classmethod
    def make_client(cls, **kwargs):
        kwargs.setdefault("state_store", MemoryStateStore())
        return LoamClient(cls.served.url, cls.served.token, retry_for=60.0, **kwargs)

    def stage(self, csv):
        data = csv.encode()
        ticket = self.client.create_upload(self.pipeline, len(data),
                                           hashlib.sha256(data).hexdigest())
        self.client.upload(ticket, data)
        return ticket["uploadId"]

    def test_a_run_is_submitted_replayed_with_its_key_and_followed_to_its_end(self):
        upload = self.stage("id,v\n1,a\n2,b\n3,c\n")
        key = str(uuid.uuid4())
        body = {"uploads": [upload], "source": {"id": "py-1"}}
        run, replayed = self.client.submit_run(self.pipeline, body, key)
        self.assertFalse(replayed)
        self.assertEqual(run["state"], "queued")
        again, replayed = self.client.submit_run(self.pipeline, body, key)
        self.assertEqual(again["id"], run["id"])
        self.assertTrue(replayed)
        seen = []
        done = self.client.wait_for_run(run["id"], on_progress=seen.append)
        self.assertEqual(done["state"], "succeeded")
        self.assertEqual(done["counters"]["inserted"], 3)
        self.assertEqual(seen[-1]["state"], "succeeded")
        with self.assertRaises(LoamError) as refused:
            self.client.submit_run(self.pipeline, {"uploads": [upload], "reload": True}, key)
        self.assertEqual(refused.exception.code, "idempotency_key_reused")

    def test_a_429_is_waited_out_and_the_same_request_repeated(self):
        first = self.stage("id,v\n10,x\n")
        second = self.stage("id,v\n11,y\n")
        retries = []
        a, _ = self.client.submit_run(self.pipeline, {"uploads": [first]}, str(uuid.uuid4()))
        b, _ = self.client.submit_run(self.pipeline, {"uploads": [second]}, str(uuid.uuid4()),
                                      on_retry=retries.append)
        self.assertGreaterEqual(len(retries), 1, "the second submission met admission")
        self.assertEqual(retries[0]["why"], "HTTP 429")
        self.assertGreaterEqual(retries[0]["wait"], 1.0, "waited Retry-After")
        self.assertNotEqual(a["id"], b["id"])
        self.assertEqual(self.client.wait_for_run(b["id"])["state"], "succeeded")

    @staticmethod
    def lossy_transport(lose):
        """A transport that loses the answer to the next request whose method
        is set in `lose` ({"PUT": True}) after the server acted on it."""
        def lossy(method, url, body, headers, timeout):
            answer = urllib_transport(method, url, body, headers, timeout)
            if lose.get(method):
                lose[method] = False
                raise ConnectionResetError(f"connection reset after the {method} landed")
            return answer
        return lossy

    def test_a_put_whose_answer_was_lost_is_resent_and_confirmed(self):
        c = self.make_client(transport=self.lossy_transport({"PUT": True}))
        retries = []
        run, _, _ = c.submit_files(self.pipeline, [(b"id,v\n20,p\n", None)],
                                   on_retry=retries.append)
        self.assertTrue(any(r["why"].startswith("connection:") for r in retries), retries)
        self.assertEqual(len(run["uploads"]), 1)
        self.assertTrue(c.get_upload(run["uploads"][0])["received"])
        self.assertEqual(c.wait_for_run(run["id"])["state"], "succeeded")

    def test_a_create_whose_answer_was_lost_is_retried_under_its_key_and_made_once(self):
        lose = {"POST": True}
        c = self.make_client(transport=self.lossy_transport(lose))
        spec = {"name": "py-keys", "table": "t", "format": "csv"}
        retries = []
        created = c.create_pipeline(spec, on_retry=retries.append)
        self.assertEqual([r["why"][:11] for r in retries], ["connection:"])
        with self.assertRaises(LoamError) as twice:  # a new key: a second pipeline of the name
            c.create_pipeline(spec)
        self.assertEqual(twice.exception.status, 409)
        run, _, _ = c.submit_files(created["id"], [(b"id,v\n92,a\n", None)])
        self.assertEqual(c.wait_for_run(run["id"])["state"], "succeeded")
        lose["POST"] = True
        reverted = c.revert_run(run["id"], idempotency_key="py-revert-1")
        self.assertEqual(reverted["revertedRun"], run["id"])
        self.assertEqual(c.revert_run(run["id"], idempotency_key="py-revert-1"), reverted)
        with self.assertRaises(LoamError) as reused:
            c.cancel_run(run["id"], idempotency_key="py-revert-1")
        self.assertEqual((reused.exception.status, reused.exception.code),
                         (422, "idempotency_key_reused"))

    def test_a_submission_whose_process_died_after_its_put_is_resumed(self):
        state_dir = tempfile.mkdtemp(prefix="loam-py-state-")

        class Killed(Exception):
            pass

        class DyingStore(FileStateStore):
            def save(self, key, state):
                if any(f.get("uploaded") for f in state["files"]):
                    raise Killed()  # dies when it would record the PUT as landed
                super().save(key, state)

        files = [(b"id,v\n30,q\n31,r\n", "q.csv")]
        key = str(uuid.uuid4())
        dying = self.make_client(state_store=DyingStore(state_dir))
        with self.assertRaises(Killed):
            dying.submit_files(self.pipeline, files, idempotency_key=key, source_id="py-q")
        store = FileStateStore(state_dir)
        upload_id = store.load(key)["files"][0]["ticket"]["uploadId"]
        self.assertTrue(self.client.get_upload(upload_id)["received"])
        again = self.make_client(state_store=store)
        run, _, _ = again.resume(key, files)
        self.assertEqual(run["uploads"], [upload_id])  # the same upload, resent and confirmed
        self.assertEqual(store.keys(), [])  # answered: nothing kept
        self.assertEqual(again.wait_for_run(run["id"])["state"], "succeeded")
        shutil.rmtree(state_dir, ignore_errors=True)

    def test_a_submission_whose_retries_run_out_is_kept_for_resume(self):
        down = {"runs": True}

        def outage(method, url, body, headers, timeout):
            if down["runs"] and method == "POST" and url.endswith("/runs"):
                return 503, {"Content-Type": "application/problem+json"}, \
                    b'{"code":"unavailable","detail":"down"}'
            return urllib_transport(method, url, body, headers, timeout)

        store = MemoryStateStore()
        c = LoamClient(self.served.url, self.served.token, retry_for=8.0, state_store=store,
                       transport=outage)
        files = [(b"id,v\n40,s\n", None)]
        key = str(uuid.uuid4())
        with self.assertRaises(LoamError) as gave_up:
            c.submit_files(self.pipeline, files, idempotency_key=key)
        self.assertEqual(gave_up.exception.code, "unavailable")
        self.assertEqual(store.keys(), [key])
        self.assertTrue(store.load(key)["request"], "the exact request is kept")
        down["runs"] = False
        run, _, _ = c.resume(key, files)
        self.assertEqual(c.wait_for_run(run["id"])["state"], "succeeded")
        self.assertEqual(store.keys(), [])

    def test_validate_first_loads_the_same_upload_only_after_its_validation(self):
        bad, _, _ = self.client.submit_files(self.pipeline, [(b"id,v\n60,a\nx,b\n", None)],
                                             validate_first=True)
        self.assertEqual((bad["state"], bad["validationOnly"], bad["errorCode"]),
                         ("failed", True, "validation_failed"))
        good, _, _ = self.client.submit_files(self.pipeline, [(b"id,v\n61,a\n", None)],
                                              validate_first=True)
        self.assertFalse(good["validationOnly"])
        done = self.client.wait_for_run(good["id"])
        self.assertEqual((done["state"], done["counters"]["inserted"]), ("succeeded", 1))
        runs = self.client._answer("GET", "/v1/runs?pipeline=" + self.pipeline, (200,))["runs"]
        validated = [r for r in runs if r["validationOnly"] and r["uploads"] == done["uploads"]]
        self.assertEqual(len(validated), 1, "one validation of the same upload")

    def test_run_errors_lists_every_invalid_row_of_a_failed_run(self):
        run, _, _ = self.client.submit_files(self.pipeline, [(b"id,v\nx,a\n80,b\ny,c\n", None)])
        done = self.client.wait_for_run(run["id"])
        self.assertEqual((done["state"], done["counters"]["errorCount"]), ("failed", 2))
        errors = self.client.run_errors(run["id"])
        self.assertEqual([(e["line"], e["column"], e["code"]) for e in errors],
                         [(2, "id", "validation_failed"), (4, "id", "validation_failed")])
        with self.assertRaises(LoamError) as unknown:
            self.client.run_errors("01J00000000000000000000000")
        self.assertEqual(unknown.exception.code, "not_found")

    def test_a_wait_is_checked_before_it_parks(self):
        with self.assertRaises(LoamError) as bad:
            self.client.get_run("01ARZ3NDEKTSV4RRFFQ69G5FAV", wait_seconds=5)
        self.assertEqual((bad.exception.status, bad.exception.code), (404, "not_found"))
        with self.assertRaises(LoamError) as too_long:
            self.client.get_run("01ARZ3NDEKTSV4RRFFQ69G5FAV", wait_seconds=61)
        self.assertEqual((too_long.exception.status, too_long.exception.code),
                         (400, "invalid_argument"))

    def test_runs_list_newest_first_a_page_at_a_time_with_filters(self):
        p = self.client.create_pipeline({"name": "py-list", "table": "t", "format": "csv"})
        ids = []
        for row in (b"id,v\n71,a\n", b"id,v\n72,b\n"):
            run, _, _ = self.client.submit_files(p["id"], [(row, None)])
            ids.append(run["id"])
        newest = [r["id"] for r in self.client.list_runs(pipeline=p["id"], page_size=1)]
        self.assertEqual(newest, ids[::-1])
        oldest = [r["id"] for r in self.client.list_runs(pipeline=p["id"], order="oldest")]
        self.assertEqual(oldest, ids)
        later = datetime.now(timezone.utc) + timedelta(hours=1)
        self.assertEqual(list(self.client.list_runs(pipeline=p["id"], since=later)), [])
        self.assertEqual(len(list(self.client.list_runs(pipeline=p["id"], until=later))), 2)
        with self.assertRaises(LoamError) as bad:
            list(self.client.list_runs(order="sideways"))
        self.assertEqual((bad.exception.status, bad.exception.code), (400, "invalid_argument"))

    def test_a_paused_pipeline_refuses_new_work_until_resumed(self):
        p = self.client.create_pipeline({"name": "py-pause", "table": "t", "format": "csv"})
        paused, etag = self.client.pause_pipeline(p["id"])
        self.assertTrue(paused["paused"])
        seen = []

        def stop(retry):
            seen.append(retry)
            raise InterruptedError("stop retrying")
        with self.assertRaises(InterruptedError):
            self.client.submit_files(p["id"], [(b"id,v\n81,a\n", None)], on_retry=stop)
        self.assertEqual((seen[0]["why"], seen[0]["wait"]), ("HTTP 429", 30.0))
        resumed, _ = self.client.resume_pipeline(p["id"], if_match=etag)
        self.assertFalse(resumed["paused"])
        run, _, _ = self.client.submit_files(p["id"], [(b"id,v\n81,a\n", None)])
        self.assertEqual(self.client.wait_for_run(run["id"])["state"], "succeeded")

    def test_usage_shows_the_caller_against_the_admission_limits(self):
        u = self.client.usage()
        self.assertEqual((u["principal"], u["requests"]["burst"]), ("owner", 1))
        self.assertLessEqual(u["requests"]["tokens"], 1)
        self.assertIn(self.pipeline, u["pipelines"])

    def test_a_pipeline_changes_only_from_the_state_its_etag_names(self):
        p = self.client.create_pipeline({"name": "py-etag", "table": "t", "format": "csv"})
        _, first = self.client.get_pipeline(p["id"])
        changed, second = self.client.update_pipeline(p["id"], {"errorPolicy": "validationOnly"},
                                                      if_match=first)
        self.assertEqual(changed["errorPolicy"], "validationOnly")
        self.assertNotEqual(first, second)
        with self.assertRaises(LoamError) as stale:
            self.client.update_pipeline(p["id"], {"errorPolicy": "failRun"}, if_match=first)
        self.assertEqual((stale.exception.status, stale.exception.code),
                         (412, "precondition_failed"))
        self.assertEqual(self.client.get_pipeline(p["id"])[0]["errorPolicy"], "validationOnly")
        self.client.delete_pipeline(p["id"], if_match=second)
        with self.assertRaises(LoamError) as gone:
            self.client.get_pipeline(p["id"])
        self.assertEqual(gone.exception.status, 404)

    def test_sql_answers_a_statement_and_refuses_a_write_with_its_code(self):
        answer = self.client.sql("SELECT count(*) AS n, 1.5 AS x, NULL AS z FROM t")
        self.assertEqual(answer["columns"], [{"name": "n", "type": "INTEGER"},
                                             {"name": "x", "type": "REAL"},
                                             {"name": "z", "type": "NULL"}])
        self.assertEqual(len(answer["rows"]), 1)
        self.assertFalse(answer["truncated"])
        cut = self.client.sql("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
                              "SELECT n FROM r", limit=3)
        self.assertEqual(cut["rows"], [[1], [2], [3]])
        self.assertTrue(cut["truncated"])
        with self.assertRaises(LoamError) as refused:
            self.client.sql("DELETE FROM t")
        self.assertEqual((refused.exception.status, refused.exception.code),
                         (403, "permission_denied"))

    def test_a_delete_whose_answer_was_lost_is_retried_under_its_key_and_deletes_once(self):
        lose = {}
        c = self.make_client(transport=self.lossy_transport(lose))
        run, _, _ = c.submit_files(self.pipeline, [(b"id,v\n81,a\n82,b\n83,c\n", None)])
        self.assertEqual(c.wait_for_run(run["id"])["state"], "succeeded")
        body = {"keys": [{"id": 81}, {"id": 82}]}
        first, _ = c.delete_rows("t", body, idempotency_key="py-delete-1")  # may wait out a 429
        lose["POST"] = True  # the repeat's answer is lost: its retry replays the same run
        retries = []
        again, replayed = c.delete_rows("t", body, idempotency_key="py-delete-1",
                                        on_retry=retries.append)
        self.assertEqual([r["why"][:11] for r in retries], ["connection:"])
        self.assertEqual((again["id"], replayed), (first["id"], True))
        done = c.wait_for_run(first["id"])
        self.assertEqual((done["state"], done["counters"]["deleted"]), ("succeeded", 2))
        by_filter, _ = c.delete_rows("t", {"where": ["id = 83"]})
        self.assertEqual(c.wait_for_run(by_filter["id"])["counters"]["deleted"], 1)
        with self.assertRaises(LoamError) as bad:
            c.delete_rows("t", {"where": ["nope = 1"]})
        self.assertEqual(bad.exception.status, 400)
        self.assertIn("delete filter", str(bad.exception))

    def test_write_audit_publish_merges_a_branch_once_after_its_checks(self):
        lose = {}
        c = self.make_client(transport=self.lossy_transport(lose))
        self.assertEqual(c.create_branch("py-day")["parent"], "main")
        self.assertIn("py-day", [b["name"] for b in c.list_branches()])
        p = c.create_pipeline({"name": "py-day", "table": "t", "format": "csv",
                               "branch": "py-day"})
        self.assertEqual(p["branch"], "py-day")
        run, _, _ = c.submit_files(p["id"], [(b"id,v\n601,a\n602,b\n", None)])
        self.assertEqual(c.wait_for_run(run["id"])["state"], "succeeded")
        with self.assertRaises(LoamError) as failed:
            c.merge_branch("py-day", checks=[{"name": "plenty", "table": "t", "minRows": 10**6}])
        self.assertEqual((failed.exception.status, failed.exception.code),
                         (422, "merge_check_failed"))
        lose["POST"] = True  # the merge's answer is lost: its retry gets the same merge
        retries = []
        merged = c.merge_branch("py-day", checks=[{"name": "ids", "table": "t", "unique": ["id"]}],
                                idempotency_key="py-merge-1", on_retry=retries.append)
        self.assertEqual([r["why"][:11] for r in retries], ["connection:"])
        self.assertEqual(merged["mergeId"], "py-merge-1")
        self.assertEqual([(t["name"], t["change"]) for t in merged["tables"]], [("t", "updated")])
        self.assertEqual(c.sql("SELECT count(*) FROM t WHERE id IN (601, 602)")["rows"], [[2]])
        lose["POST"] = True  # the revert's answer is lost: its retry answers the first revert
        reverted = c.revert_merge("py-merge-1")
        self.assertTrue(reverted["alreadyReverted"])
        self.assertEqual([(t["name"], t["change"]) for t in reverted["tables"]], [("t", "restored")])
        self.assertEqual(c.sql("SELECT count(*) FROM t WHERE id IN (601, 602)")["rows"], [[0]])
        with self.assertRaises(LoamError) as unknown:
            c.revert_merge("nope")
        self.assertEqual((unknown.exception.status, unknown.exception.code), (404, "not_found"))
        c.delete_branch("py-day")
        with self.assertRaises(LoamError) as gone:
            c.get_branch("py-day")
        self.assertEqual(gone.exception.status, 404)

    def test_refusals_carry_the_stable_code(self):
        with self.assertRaises(LoamError) as missing:
            self.client.get_run("01ARZ3NDEKTSV4RRFFQ69G5FAV")
        self.assertEqual((missing.exception.status, missing.exception.code), (404, "not_found"))
        with self.assertRaises(TypeError):
            self.client.submit_run(self.pipeline, {"uploads": ["nope"]}, "")
        with self.assertRaises(LoamError) as bad_pipeline:
            self.client.create_pipeline({"name": "bad", "table": "nope", "format": "csv"})
        self.assertEqual(bad_pipeline.exception.status, 404)
        self.assertEqual(bad_pipeline.exception.code, "not_found")


class InstallTest(unittest.TestCase):
    def test_pip_installs_the_package_offline(self):
        venv = tempfile.mkdtemp(prefix="loam-py-venv-")
        try:
            subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                           check=True)
            py = os.path.join(venv, "bin", "python")
            # A copy: the build leaves its files beside the sources it builds.
            source = os.path.join(venv, "src")
            shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("tests", "__pycache__"))
            subprocess.run([py, "-m", "pip", "install", "--quiet", "--no-index",
                            "--no-build-isolation", source], check=True,
                           cwd=venv)  # not beside the sources: the installed copy is imported
            out = subprocess.run(
                [py, "-c", "import loam_client, sys; print(loam_client.__file__); "
                 "print(loam_client.TERMINAL_STATES)"],
                check=True, capture_output=True, text=True, cwd=venv).stdout
            self.assertIn(os.path.join(venv, "lib"), out)
            self.assertIn("succeeded", out)
        finally:
            shutil.rmtree(venv, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
