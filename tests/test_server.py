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

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "loopcheck.server"], cwd=ROOT,
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
def client():
    c = Client()
    try:
        result = c.request("initialize", {
            "processId": None, "rootUri": ROOT.as_uri(),
            "capabilities": {
                "general": {"positionEncodings": ["utf-16"]},
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
    path = FIXTURES / name
    text = path.read_text(encoding="utf-8") if text is None else text
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": path.as_uri(), "languageId": "python", "version": 1, "text": text}})
    return path.as_uri(), text


def test_initialize_advertises_code_actions(client):
    caps = client.server_info["capabilities"]
    assert client.server_info["serverInfo"]["name"] == "loopcheck"
    assert set(caps["codeActionProvider"]["codeActionKinds"]) == {"quickfix", "source.fixAll.loopcheck"}
    assert caps["textDocumentSync"]["openClose"] is True


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
            "location": {"uri": uri, "range": rng(48, 8, 48, 23)},
            "message": "the loss whose graph is kept",
        }],
        "data": {"fix": "safe"},
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
        "textDocument": {"uri": uri}, "range": rng(50, 0, 50, 10), "context": {"diagnostics": []}}) is None

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
    assert diag["code"] == "LC301" and diag["data"] == {"fix": "unsafe"}
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
    assert diag["code"] == "LC203" and "data" not in diag
    assert client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": diag["range"], "context": {"diagnostics": [diag]}}) is None
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri) == []


def test_configuration_selects_the_rules(client, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.loopcheck]\nignore = ["LC401"]\n', encoding="utf-8")
    path = tmp_path / "train.py"
    text = read_fixture("LC401_bad.py") + read_fixture("LC101_bad.py")
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": path.as_uri(), "languageId": "python", "version": 1, "text": text}})
    assert [d["code"] for d in client.diagnostics(path.as_uri())] == ["LC101"]
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
