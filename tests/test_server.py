"""The language server, driven over stdio by a real LSP client session (framed JSON-RPC):
``python -m loopcheck.server`` as a subprocess, initialize, didOpen, publishDiagnostics,
codeAction, didChange, didClose, shutdown, exit."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("pygls")

from loopcheck.analysis import check_source  # noqa: E402
from loopcheck.rules import INFOS  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
TIMEOUT = 10.0


class Client:
    """A minimal LSP client: Content-Length framed JSON-RPC over the server's stdin/stdout."""

    def __init__(self, command: list[str] | None = None, cwd: Path = ROOT) -> None:
        self.proc = subprocess.Popen(
            command or [sys.executable, "-m", "loopcheck.server"], cwd=cwd,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        self.inbox: queue.Queue = queue.Queue()
        self.notifications: list[dict] = []
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    self.inbox.put(None)
                    return
                line = line.decode("ascii").strip()
                if not line:
                    break
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            body = out.read(int(headers["content-length"]))
            self.inbox.put(json.loads(body))

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params) -> None:
        self.send({"method": method, "params": params})

    def _next(self, deadline: float) -> dict:
        msg = self.inbox.get(timeout=max(0.01, deadline - time.monotonic()))
        assert msg is not None, "server closed its stdout: " + self.proc.stderr.read().decode(errors="replace")
        if "method" in msg and "id" in msg:  # a request from the server: answer it
            self.send({"id": msg["id"], "result": None})
        elif "method" in msg:
            self.notifications.append(msg)
        return msg

    def request(self, method: str, params) -> object:
        self.next_id += 1
        rid = self.next_id
        self.send({"id": rid, "method": method, "params": params})
        deadline = time.monotonic() + TIMEOUT
        while True:
            msg = self._next(deadline)
            if msg.get("id") == rid and "method" not in msg:
                assert "error" not in msg, msg["error"]
                return msg["result"]

    def publication_any(self, uris: list[str]) -> dict:
        """The next ``publishDiagnostics`` for any of ``uris``."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            for i, n in enumerate(self.notifications):
                if n["method"] == "textDocument/publishDiagnostics" and n["params"]["uri"] in uris:
                    del self.notifications[i]
                    return n["params"]
            self._next(deadline)

    def publication(self, uri: str, timeout: float = TIMEOUT) -> dict:
        """The params of the next ``publishDiagnostics`` for ``uri`` (``uri``, ``version``, ``diagnostics``)."""
        deadline = time.monotonic() + timeout
        while True:
            for i, n in enumerate(self.notifications):
                if n["method"] == "textDocument/publishDiagnostics" and n["params"]["uri"] == uri:
                    del self.notifications[i]
                    return n["params"]
            self._next(deadline)

    def drain(self, seconds: float) -> None:
        """Collect what the server sends for ``seconds``."""
        deadline = time.monotonic() + seconds
        try:
            while True:
                self._next(deadline)
        except queue.Empty:
            pass

    def request_raw(self, method: str, params) -> dict:
        """A request's whole response (``result`` or ``error``)."""
        self.next_id += 1
        rid = self.next_id
        self.send({"id": rid, "method": method, "params": params})
        deadline = time.monotonic() + TIMEOUT
        while True:
            msg = self._next(deadline)
            if msg.get("id") == rid and "method" not in msg:
                return msg

    def diagnostics(self, uri: str) -> list[dict]:
        """The next ``publishDiagnostics`` for ``uri`` (one already received counts)."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            for i, n in enumerate(self.notifications):
                if n["method"] == "textDocument/publishDiagnostics" and n["params"]["uri"] == uri:
                    del self.notifications[i]
                    return n["params"]["diagnostics"]
            self._next(deadline)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=5)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            stream.close()


def apply_text_edits(text: str, edits: list[dict]) -> str:
    """Apply LSP TextEdits (ASCII text: UTF-16 units are characters)."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(p):
        return starts[p["line"]] + p["character"] if p["line"] < len(lines) else len(text)

    for e in sorted(edits, key=lambda e: offset(e["range"]["start"]), reverse=True):
        text = text[: offset(e["range"]["start"])] + e["newText"] + text[offset(e["range"]["end"]):]
    return text


def rng(line, char, end_line, end_char) -> dict:
    return {"start": {"line": line, "character": char}, "end": {"line": end_line, "character": end_char}}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    c = Client()
    # The fixtures are opened from a folder whose configuration turns preview on: their
    # `# expect:` markers name every rule's findings, those of rules in preview included.
    c.fixtures = tmp_path_factory.mktemp("preview")
    (c.fixtures / "loopcheck.toml").write_text("preview = true\n", encoding="utf-8")
    try:
        result = c.request("initialize", {
            "processId": None, "rootUri": ROOT.as_uri(),
            "capabilities": {
                "general": {"positionEncodings": ["utf-16"]},
                "notebookDocument": {"synchronization": {}},
                "textDocument": {
                    "publishDiagnostics": {"relatedInformation": True},
                    "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {
                        "valueSet": ["quickfix", "source", "source.fixAll"]}}},
                },
            },
        })
        c.server_info = result
        c.notify("initialized", {})
        yield c
    finally:
        c.close()


def open_fixture(client: Client, name: str, text: str | None = None) -> tuple[str, str]:
    """Open a copy of ``fixtures/NAME`` (its text, or ``text``) in the preview folder."""
    path = client.fixtures / name
    path.write_text(read_fixture(name), encoding="utf-8")
    text = read_fixture(name) if text is None else text
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": path.as_uri(), "languageId": "python", "version": 1, "text": text}})
    return path.as_uri(), text


def test_initialize_advertises_code_actions(client):
    caps = client.server_info["capabilities"]
    assert client.server_info["serverInfo"]["name"] == "loopcheck"
    assert set(caps["codeActionProvider"]["codeActionKinds"]) == {"quickfix", "source.fixAll.loopcheck"}
    assert caps["textDocumentSync"]["openClose"] is True
    assert caps["notebookDocumentSync"] == {
        "notebookSelector": [{"notebook": "jupyter-notebook", "cells": [{"language": "python"}]}], "save": True}


def test_diagnostic_code_action_fix_and_close(client):
    uri, text = open_fixture(client, "LC401_bad.py")
    diags = client.diagnostics(uri)
    [finding] = check_source(text, "LC401_bad.py")
    assert diags == [{
        "range": rng(50, 8, 50, 33),
        "message": finding.message,
        "severity": 2,
        "code": "LC401",
        "codeDescription": {"href": INFOS["LC401"].url},
        "source": "loopcheck",
        "relatedInformation": [{
            "location": {"uri": uri, "range": rng(49, 8, 49, 24)},
            "message": "the optimizer step the kept graph survives",
        }],
    }]

    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": diags[0]["range"], "context": {"diagnostics": diags}})
    quick = [a for a in actions if a["kind"] == "quickfix"]
    assert [a["title"] for a in quick] == ["loopcheck (LC401): Use `loss.item()`"]
    assert quick[0]["isPreferred"] is True and quick[0]["diagnostics"] == diags
    assert quick[0]["edit"] == {"changes": {uri: [{"range": rng(50, 32, 50, 32), "newText": ".item()"}]}}
    fixed = apply_text_edits(text, quick[0]["edit"]["changes"][uri])
    assert "loss_history.append(loss.item())  # expect: LC401" in fixed
    assert check_source(fixed, "LC401_bad.py") == []

    fix_all = [a for a in actions if a["kind"] == "source.fixAll.loopcheck"]
    assert [a["title"] for a in fix_all] == ["Fix all safe loopcheck issues"]
    assert apply_text_edits(text, fix_all[0]["edit"]["changes"][uri]) == fixed

    # the editor applies the fix: the diagnostic goes away
    client.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed}]})
    assert client.diagnostics(uri) == []
    assert client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": rng(50, 0, 50, 10), "context": {"diagnostics": []}}) == []

    client.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 3},
        "contentChanges": [{"range": rng(50, 32, 50, 39), "text": ""}]})  # incremental: undo the fix
    assert [d["code"] for d in client.diagnostics(uri)] == ["LC401"]
    client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    assert [d["code"] for d in client.diagnostics(uri)] == ["LC401"]
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri) == []


def test_move_fix_and_fix_all(client):
    uri, text = open_fixture(client, "LC101_bad.py")
    [diag] = client.diagnostics(uri)
    assert (diag["code"], diag["severity"], diag["range"]) == ("LC101", 1, rng(45, 8, 45, 72))
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": diag["range"], "context": {"diagnostics": [diag]}})
    assert [a["title"] for a in actions] == [
        "loopcheck (LC101): Move `clip_grad_norm_()` between `loss.backward()` and `optimizer.step()`",
        "Fix all safe loopcheck issues",
    ]
    fixed = apply_text_edits(text, actions[0]["edit"]["changes"][uri])
    assert fixed.splitlines()[45:48] == [
        "        loss.backward()",
        "        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)  # expect: LC101",
        "        optimizer.step()",
    ]
    assert check_source(fixed, "LC101_bad.py") == []
    only_fix_all = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": rng(0, 0, 0, 0),
        "context": {"diagnostics": [], "only": ["source.fixAll"]}})
    assert [a["kind"] for a in only_fix_all] == ["source.fixAll.loopcheck"]
    assert apply_text_edits(text, only_fix_all[0]["edit"]["changes"][uri]) == fixed
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri) == []


def test_unsafe_fix_is_labelled_and_left_out_of_fix_all(client):
    uri, text = open_fixture(client, "LC301_bad.py")
    [diag] = client.diagnostics(uri)
    assert diag["code"] == "LC301"
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": diag["range"], "context": {"diagnostics": [diag]}})
    assert [(a["title"], a["kind"], a["isPreferred"]) for a in actions] == [
        ("loopcheck (LC301): Call `model.train()` at the start of each training iteration (unsafe)",
         "quickfix", False),
    ]
    fixed = apply_text_edits(text, actions[0]["edit"]["changes"][uri])
    assert check_source(fixed, "LC301_bad.py") == []
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri) == []


def test_noqa_and_unfixable(client):
    text = (FIXTURES / "LC401_bad.py").read_text(encoding="utf-8").replace(
        "# expect: LC401", "# noqa: LC401")
    uri, _ = open_fixture(client, "LC401_bad.py", text)
    assert client.diagnostics(uri) == []
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri) == []

    uri, _ = open_fixture(client, "LC203_bad.py")
    [diag] = client.diagnostics(uri)
    assert diag["code"] == "LC203"
    assert client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": diag["range"], "context": {"diagnostics": [diag]}}) == []
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri) == []


def test_configuration_selects_the_rules(client, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.loopcheck]\npreview = true\nignore = ["LC401"]\n',
                                             encoding="utf-8")
    path = tmp_path / "train.py"
    text = read_fixture("LC401_bad.py") + read_fixture("LC101_bad.py")
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": path.as_uri(), "languageId": "python", "version": 1, "text": text}})
    assert [d["code"] for d in client.diagnostics(path.as_uri())] == ["LC101"]
    client.notify("textDocument/didClose", {"textDocument": {"uri": path.as_uri()}})
    assert client.diagnostics(path.as_uri()) == []


@pytest.mark.parametrize("config, codes", [
    (None, ["LC102"]),  # no configuration: the default selection, without the rules in preview
    ('[tool.loopcheck]\npreview = true\n', ["LC401", "LC102"]),
    ('[tool.loopcheck]\nextend-select = ["loss-tensor-kept"]\n', ["LC401", "LC102"]),
    ('[tool.loopcheck]\nselect = ["LC4", "LC1"]\n', ["LC102"]),  # a prefix alone: not a rule in preview
])
def test_rules_in_preview_follow_the_configuration(client, tmp_path, config, codes):
    """LC401 is in preview, LC102 is not."""
    if config is not None:
        (tmp_path / "pyproject.toml").write_text(config, encoding="utf-8")
    path = tmp_path / "train.py"
    text = read_fixture("LC401_bad.py") + read_fixture("LC102_bad.py")
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": path.as_uri(), "languageId": "python", "version": 1, "text": text}})
    assert [d["code"] for d in client.diagnostics(path.as_uri())] == codes
    client.notify("textDocument/didClose", {"textDocument": {"uri": path.as_uri()}})
    assert client.diagnostics(path.as_uri()) == []


def read_fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_shutdown_and_exit():
    c = Client()
    try:
        c.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        c.notify("initialized", {})
        assert c.request("shutdown", None) is None
        c.notify("exit", None)
        assert c.proc.wait(timeout=TIMEOUT) == 0
    finally:
        c.close()


# ------------------------------------------------------------------ as you type


def test_a_burst_of_changes_is_checked_once_for_the_last_version(client):
    uri, text = open_fixture(client, "LC401_bad.py")
    assert client.publication(uri)["version"] == 1
    fixed = text.replace("loss_history.append(loss)", "loss_history.append(loss.item())")
    for version in range(2, 7):  # typing: five changes in a few milliseconds
        client.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"text": fixed if version % 2 == 0 else text}]})
    last = client.publication(uri)
    assert (last["version"], [d["code"] for d in last["diagnostics"]]) == (6, [])
    client.drain(0.5)  # nothing for the versions in between, before or after
    assert [n for n in client.notifications if n["params"].get("uri") == uri] == []
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri) == []


def descendants(pid: int) -> list[tuple[int, str]]:
    """``(pid, command line)`` of every process below ``pid`` (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            try:
                cmd = (Path("/proc") / str(child) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                cmd = ""
            out.append((child, cmd))
            todo.append(child)
    return out


def huge_script(lines: int) -> str:
    """A training script of about ``lines`` lines: many helpers and one loop with LC401."""
    helper = "def helper_{n}(values, scale=1.0):\n    out = []\n    for v in values:\n" \
             "        if v > 0:\n            out.append(v * scale)\n    return sum(out)\n\n"
    body = "".join(helper.format(n=n) for n in range(lines // 7))
    return read_fixture("LC401_bad.py") + "\n" + body


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="counts processes with /proc")
def test_a_huge_document_blocks_nothing_and_a_newer_version_kills_its_check(client):
    deadline = time.monotonic() + TIMEOUT
    while not (forkserver := [pid for pid, cmd in descendants(client.proc.pid) if "forkserver" in cmd]):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    others = {pid for pid, _ in descendants(forkserver[0])}  # other tests' open documents
    small_uri, _ = open_fixture(client, "LC203_bad.py")
    assert [d["code"] for d in client.diagnostics(small_uri)] == ["LC203"]
    path = client.fixtures / "huge_generated.py"
    before = {pid for pid, _ in descendants(forkserver[0])}  # with the small document's chain
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": path.as_uri(), "languageId": "python", "version": 1, "text": huge_script(40_000)}})
    time.sleep(0.3)  # its check is running
    huge = {pid for pid, _ in descendants(forkserver[0])} - before
    assert len(huge) == 2  # the huge document's check and the root of its chain
    t = time.monotonic()
    assert client.request("textDocument/codeAction", {
        "textDocument": {"uri": small_uri}, "range": rng(0, 0, 0, 0), "context": {"diagnostics": []}}) == []
    assert time.monotonic() - t < 2.0  # answered while the huge document is being checked
    client.notify("textDocument/didChange", {"textDocument": {"uri": path.as_uri(), "version": 2},
                                             "contentChanges": [{"text": read_fixture("LC401_bad.py")}]})
    t = time.monotonic()
    published = client.publication(path.as_uri())
    assert published["version"] == 2 and [d["code"] for d in published["diagnostics"]] == ["LC401"]
    assert time.monotonic() - t < 3.0

    def alive(pids: set[int]) -> set[int]:
        deadline = time.monotonic() + 2
        while (left := pids & {pid for pid, _ in descendants(forkserver[0])}) and time.monotonic() < deadline:
            time.sleep(0.05)
        return left

    assert alive(huge) == set()  # the stale check was killed, not left to finish
    chains = {pid for pid, _ in descendants(forkserver[0])} - others
    for uri in (small_uri, path.as_uri()):
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        assert client.diagnostics(uri) == []
    assert alive(chains) == set()  # closed documents keep no process


def zombies_under(pid: int) -> list[int]:
    """The processes below ``pid`` that exited and were never reaped."""
    out = []
    for child, _cmd in descendants(pid):
        try:
            if (Path("/proc") / str(child) / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                out.append(child)
        except OSError:
            pass
    return out


def chain_runner():
    """A runner whose checks run in processes of the fork server (skips where there is none)."""
    from loopcheck.server.lsp import Runner

    runner = Runner(processes=True)
    if runner.ctx is None:
        pytest.skip("no fork server here")
    return runner


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="counts processes with /proc")
def test_a_documents_next_versions_reuse_its_tree_and_a_stale_fork_is_killed():
    """Small edits are checked in the document's template; a large one in a fork of it, which a
    newer version kills."""
    import threading as _threading

    from loopcheck.server.lsp import Cancelled
    from loopcheck.server.worker import analyze

    runner = chain_runner()
    name = str(FIXTURES / "chain_document.py")
    text = read_fixture("LC401_bad.py")
    fixed = text.replace("loss_history.append(loss)", "loss_history.append(loss.item())")

    def check(version: int, source: str):
        return runner.check("doc", version, ("python", source, name, None, False, ())).wait()

    first, second, third = check(1, text), check(2, fixed), check(3, text)
    expected = analyze("python", text, name, None, False).findings
    assert (first.reparsed, first.findings) == (False, expected)
    assert (second.reparsed, second.findings) == (True, [])
    assert (third.reparsed, third.findings) == (True, expected)
    template = runner.templates.table["doc"].pid

    # a large edit is checked in a fork, killed when stale; its template serves the next version
    slow = text + "\n" + huge_script(30_000)
    job = runner.check("doc", 4, ("python", slow, name, None, False, ()))
    outcome: list = []
    waiter = _threading.Thread(target=lambda: outcome.append(_catch(job.wait, Cancelled)))
    waiter.start()
    time.sleep(0.5)
    assert job.pid not in (None, template) and not job.here  # a fork of the template
    job.cancel()
    waiter.join(TIMEOUT)
    assert outcome == ["cancelled"] and runner.templates.table["doc"].pid == template
    fifth = check(5, fixed)
    assert (fifth.reparsed, fifth.findings) == (True, [])

    # a notebook's program (its code cells joined) is reparsed the same way
    at = text.index("for epoch in range")
    cells = [(1, text[:at]), (3, text[at:])]
    edited = [(1, text[:at]), (3, text[at:].replace("loss_history.append(loss)", "loss_history.append(loss.item())"))]
    nb_first = runner.check("nb", 1, ("notebook", cells, name, None, False, ())).wait()
    nb_second = runner.check("nb", 2, ("notebook", edited, name, None, False, ())).wait()
    assert (nb_first.reparsed, nb_first.findings) == (False, analyze("notebook", cells, name, None, False).findings)
    assert [f.code for f in nb_first.findings] == ["LC401"] and (nb_second.reparsed, nb_second.findings) == (True, [])

    runner.forget("nb")
    runner.forget("doc")  # closed: the chains exit, and every process of them is reaped
    from multiprocessing import forkserver

    server = forkserver._forkserver._forkserver_pid
    deadline = time.monotonic() + TIMEOUT
    while descendants(server) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert descendants(server) == [] and zombies_under(server) == []


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="counts processes with /proc")
def test_a_small_edit_is_checked_in_the_template_and_a_newer_version_stops_that_check():
    import threading as _threading

    from loopcheck.server.lsp import Cancelled
    from loopcheck.server.worker import analyze

    runner = chain_runner()
    name = str(FIXTURES / "chain_document.py")
    text = read_fixture("LC401_bad.py") + "\n" + huge_script(15_000)
    fixed = text.replace("loss_history.append(loss)", "loss_history.append(loss.item())")

    def check(version: int, source: str):
        return runner.check("doc", version, ("python", source, name, None, False, ())).wait()

    first, second = check(1, text), check(2, fixed)
    template = runner.templates.table["doc"].pid
    assert (second.reparsed, second.findings) == (True, [])

    # a new global name: every function is built again (seconds); a newer version stops it
    renamed = fixed + "\nvalues = [1, 2]\n"
    job = runner.check("doc", 3, ("python", renamed, name, None, False, ()))
    outcome: list = []
    waiter = _threading.Thread(target=lambda: outcome.append(_catch(job.wait, Cancelled)))
    waiter.start()
    deadline = time.monotonic() + TIMEOUT
    while job.pid is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert job.here and job.pid == template  # the template itself checks it
    time.sleep(0.2)
    t = time.monotonic()
    job.cancel()
    waiter.join(TIMEOUT)
    # stopped, not killed: the walks of the whole module (which imports fail, the search path,
    # the names nothing binds, the roles' order of the nodes) stop at their own cancellation points
    assert outcome == ["cancelled"] and time.monotonic() - t < 0.4
    assert runner.templates.table["doc"].pid == template

    # the template goes on from the stopped check's parse, with the last finished check's units
    buggy = renamed.replace("loss_history.append(loss.item())", "loss_history.append(loss)")
    fourth, fifth = check(4, buggy), check(5, renamed)
    assert fourth.reparsed and fourth.findings == analyze("python", buggy, name, None, False).findings
    assert "LC401" in [f.code for f in fourth.findings]
    assert (fifth.reparsed, fifth.findings) == (True, [])
    assert runner.templates.table["doc"].pid == template
    runner.forget("doc")


def _catch(fn, error):
    try:
        return fn()
    except error:
        return "cancelled"


# ------------------------------------------------------------------ protocol edges


def test_malformed_params_get_an_invalid_params_error(client):
    reply = client.request_raw("textDocument/codeAction", {"textDocument": 5})
    assert reply["error"]["code"] == -32602
    assert reply["error"]["message"].startswith("invalid params for textDocument/codeAction")
    reply = client.request_raw("textDocument/codeAction", {"range": "nope"})
    assert reply["error"]["code"] == -32602
    assert client.request("textDocument/codeAction", {  # the server goes on
        "textDocument": {"uri": (FIXTURES / "never_opened.py").as_uri()}, "range": rng(0, 0, 0, 0),
        "context": {"diagnostics": []}}) == []


def test_code_action_on_a_document_never_opened_is_empty(client):
    uri = (FIXTURES / "LC101_bad.py").as_uri()  # exists on disk, but the client never opened it
    assert client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": rng(45, 0, 45, 10), "context": {"diagnostics": []}}) == []


def test_an_invalid_configuration_is_shown_and_cleared_when_fixed(client, tmp_path):
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.loopcheck]\nselect = ["LC401"]\nselec = ["LC2"]\n', encoding="utf-8")
    path = tmp_path / "train.py"
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": path.as_uri(), "languageId": "python", "version": 1, "text": read_fixture("LC401_bad.py")}})
    on_config = client.publication(config.as_uri())
    [diag] = on_config["diagnostics"]
    assert diag["severity"] == 1 and diag["source"] == "loopcheck"
    assert diag["range"] == rng(2, 0, 2, 15) and "unknown key 'selec'" in diag["message"]
    assert [d["code"] for d in client.diagnostics(path.as_uri())] == []  # the default rules meanwhile (LC401: in preview)
    shown = [n["params"] for n in client.notifications if n["method"] == "window/showMessage"]
    assert len(shown) == 1 and shown[0]["type"] == 1 and "unknown key 'selec'" in shown[0]["message"]
    client.notifications.clear()
    client.notify("textDocument/didChange", {"textDocument": {"uri": path.as_uri(), "version": 2},
                                             "contentChanges": [{"text": read_fixture("LC401_bad.py") + "\n"}]})
    client.diagnostics(path.as_uri())
    assert not [n for n in client.notifications if n["method"] == "window/showMessage"]  # once per error
    config.write_text('[tool.loopcheck]\nselect = ["LC401"]\n', encoding="utf-8")
    client.notify("textDocument/didSave", {"textDocument": {"uri": config.as_uri()}})
    assert client.publication(config.as_uri())["diagnostics"] == []
    assert [d["code"] for d in client.diagnostics(path.as_uri())] == ["LC401"]  # selected by its code
    client.notify("textDocument/didClose", {"textDocument": {"uri": path.as_uri()}})
    assert client.diagnostics(path.as_uri()) == []


# ------------------------------------------------------------------ notebooks


SETUP_CELL = "import torch\nfrom torch import nn\n!pip install tqdm\nmodel = nn.Linear(4, 2)\n" \
             "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)"
LOOP_CELL = ("for step in range(10):\n    x = torch.randn(8, 4)\n    optimizer.zero_grad()\n"
             "    nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    loss = model(x).pow(2).mean()\n"
             "    loss.backward()\n    optimizer.step()")


def test_notebook_cells_get_their_diagnostics_and_fixes(client, tmp_path):
    (tmp_path / "loopcheck.toml").write_text("preview = true\n", encoding="utf-8")  # LC101 is in preview
    nb_uri = (tmp_path / "train.ipynb").as_uri()
    cells = [f"vscode-notebook-cell:{tmp_path}/train.ipynb#c{n}" for n in range(3)]
    client.notify("notebookDocument/didOpen", {
        "notebookDocument": {"uri": nb_uri, "notebookType": "jupyter-notebook", "version": 1, "cells": [
            {"kind": 2, "document": cells[0]}, {"kind": 1, "document": cells[1]}, {"kind": 2, "document": cells[2]}]},
        "cellTextDocuments": [
            {"uri": cells[0], "languageId": "python", "version": 1, "text": SETUP_CELL},
            {"uri": cells[1], "languageId": "markdown", "version": 1, "text": "# notes"},
            {"uri": cells[2], "languageId": "python", "version": 1, "text": LOOP_CELL},
        ]})
    published = {}
    for _ in range(2):
        p = client.publication_any(cells)
        published[p["uri"]] = p["diagnostics"]
    assert published[cells[0]] == []
    [diag] = published[cells[2]]
    assert (diag["code"], diag["range"]) == ("LC101", rng(3, 4, 3, 53))
    assert "line 6 of cell 3" in diag["message"]
    assert diag["relatedInformation"] == [{"location": {"uri": cells[2], "range": rng(5, 4, 5, 19)},
                                           "message": "backward() fills .grad only here"}]
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": cells[2]}, "range": diag["range"], "context": {"diagnostics": [diag]}})
    assert [a["title"] for a in actions] == [
        "loopcheck (LC101): Move `clip_grad_norm_()` between `loss.backward()` and `optimizer.step()`",
        "Fix all safe loopcheck issues",
    ]
    edits = actions[0]["edit"]["changes"]
    assert list(edits) == [cells[2]]
    fixed = apply_text_edits(LOOP_CELL, edits[cells[2]])
    assert fixed.splitlines()[4:6] == ["    loss.backward()", "    nn.utils.clip_grad_norm_(model.parameters(), 1.0)"]
    # the editor applies it to the cell: a notebook change, and the diagnostic goes away
    client.notify("notebookDocument/didChange", {
        "notebookDocument": {"uri": nb_uri, "version": 2},
        "change": {"cells": {"textContent": [{"document": {"uri": cells[2], "version": 2},
                                               "changes": [{"text": fixed}]}]}}})
    assert client.publication(cells[2])["diagnostics"] == []
    client.notify("notebookDocument/didClose", {
        "notebookDocument": {"uri": nb_uri}, "cellTextDocuments": [{"uri": c} for c in cells]})
    client.drain(0.3)
    cleared = [n["params"] for n in client.notifications if n["method"] == "textDocument/publishDiagnostics"]
    assert {p["uri"] for p in cleared if p["diagnostics"] == []} >= {cells[0], cells[2]}
    client.notifications.clear()


def test_the_fork_servers_warm_up_runs_the_rules_and_the_fixes():
    """The fork server imports loopcheck.server.warm, which checks a small loop once so that
    forked checks start with the knowledge and rule tables built (median keystroke-to-
    diagnostics 615 -> 510 ms on a 2,000-line script, scripts/lsp_latency.py). A warm-up that
    failed silently would warm nothing: its loop must reach the rules and the fixers."""
    from loopcheck.server.worker import analyze
    from loopcheck.server.warm import _LOOP

    result = analyze("python", _LOOP, "warm.py", None, True)
    assert [f.code for f in result.findings] == ["LC101", "LC201", "LC401"]
    assert result.fix_all is not None and result.fix_all != _LOOP

def test_the_fork_server_preloads_the_warm_up(monkeypatch):
    import multiprocessing.context

    from loopcheck.server.lsp import Runner

    preloaded: list[str] = []
    monkeypatch.delenv("PYTHONSAFEPATH", raising=False)  # Runner sets it; restored afterwards
    monkeypatch.setattr(multiprocessing.context.BaseContext, "set_forkserver_preload",
                        lambda self, names: preloaded.extend(names))
    if Runner(processes=True).ctx is None:
        pytest.skip("no fork server here")
    assert "loopcheck.server.warm" in preloaded and "loopcheck.fixes.apply" in preloaded
