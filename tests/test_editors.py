"""The editor integrations: the VS Code extension (editors/vscode) starts the server with the
configured command, else with the interpreter selected in VS Code (the Python extension's
environments API) when loopcheck is installed there, else with ``loopcheck`` on PATH. Its glue
code is run by Node.js against stand-ins for the ``vscode``, ``ms-python.python`` and
``vscode-languageclient`` modules; then the command line it chose is started for real and spoken
to over LSP."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# LOOPCHECK_VSCODE_EXTENSION: another copy of the extension (CI: the one unpacked from the .vsix)
SOURCE = ROOT / "editors" / "vscode"
EXTENSION = Path(os.environ.get("LOOPCHECK_VSCODE_EXTENSION") or SOURCE)
NODE = shutil.which("node")

HARNESS = r"""
const Module = require("module");
const calls = [];
// argv: the extension, the `loopcheck.command` setting, the interpreter selected in the Python
// extension ("" for none, null for no Python extension installed)
const command = JSON.parse(process.argv[2]);
const interpreter = JSON.parse(process.argv[3]);
const environments = {
  getActiveEnvironmentPath: (resource) => { calls.push(["getActiveEnvironmentPath", resource ? resource.fsPath : null]); return { id: "env", path: interpreter }; },
  resolveEnvironment: async (env) => (env.path ? { executable: { uri: { fsPath: env.path } } } : undefined),
  onDidChangeActiveEnvironmentPath: (fn) => { calls.push(["listens", "onDidChangeActiveEnvironmentPath"]); return { dispose() {} }; },
};
const python = { isActive: false, exports: { environments }, activate: async () => { calls.push(["activate", "ms-python.python"]); python.isActive = true; } };
const vscode = {
  workspace: {
    getConfiguration: (section) => ({ get: (key, dflt) => (section === "loopcheck" && key === "command" ? command : dflt) }),
    onDidChangeConfiguration: (fn) => ({ dispose() {} }),
    workspaceFolders: [{ uri: { fsPath: "/workspace" } }],
  },
  extensions: { getExtension: (id) => (id === "ms-python.python" && interpreter !== null ? python : undefined) },
  window: { showErrorMessage: (m) => calls.push(["error", m]) },
  commands: { registerCommand: (name, fn) => { calls.push(["command", name]); return { dispose() {} }; },
              executeCommand: async () => {} },
};
class LanguageClient {
  constructor(id, name, serverOptions, clientOptions) { calls.push(["client", id, name, serverOptions, clientOptions]); }
  async start() { calls.push(["start"]); }
  async stop() { calls.push(["stop"]); }
}
const languageclient = { LanguageClient, TransportKind: { stdio: 0 } };
const load = Module._load;
Module._load = function (request, parent, isMain) {
  if (request === "vscode") return vscode;
  if (request === "vscode-languageclient/node") return languageclient;
  return load.apply(this, arguments);
};
const ext = require(process.argv[1]);
ext.activate({ subscriptions: [] }).then(() => { console.log(JSON.stringify(calls)); });
"""


def run_extension(command: list[str], interpreter: str | None) -> list:
    """The extension's ``activate()`` under the stand-ins: the calls it made, in order."""
    proc = subprocess.run([NODE, "-e", HARNESS, str(EXTENSION / "extension.js"), json.dumps(command),
                           json.dumps(interpreter)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_package_json_declares_the_extension():
    pkg = json.loads((EXTENSION / "package.json").read_text())
    assert (EXTENSION / pkg["main"]).is_file()
    assert set(pkg["activationEvents"]) == {"onLanguage:python", "onNotebook:jupyter-notebook"}
    assert pkg["dependencies"]["vscode-languageclient"].startswith("^9")
    assert pkg["contributes"]["configuration"]["properties"]["loopcheck.command"]["default"] == []  # automatic
    assert pkg["license"] == "MIT"
    assert re.fullmatch(r"\d+\.\d+\.\d+", pkg["version"])  # the release's; the workflow checks it against the tag


def test_the_extension_ships_a_license_and_a_lockfile_for_npm_ci():
    assert (SOURCE / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()
    lock = json.loads((SOURCE / "package-lock.json").read_text())
    pkg = json.loads((SOURCE / "package.json").read_text())
    assert lock["name"] == pkg["name"] and lock["version"] == pkg["version"]
    assert lock["packages"][""]["dependencies"] == pkg["dependencies"]
    assert lock["packages"][""]["devDependencies"] == pkg["devDependencies"]


FAKE_PYTHON_WITHOUT_LOOPCHECK = "#!/bin/sh\necho 'No module named loopcheck' >&2\nexit 1\n"


@pytest.mark.skipif(NODE is None, reason="needs Node.js")
def test_the_extension_uses_the_selected_interpreter_when_loopcheck_is_installed_there():
    calls = run_extension([], sys.executable)
    assert ["activate", "ms-python.python"] in calls
    assert ["getActiveEnvironmentPath", "/workspace"] in calls
    assert ["listens", "onDidChangeActiveEnvironmentPath"] in calls  # a new selection restarts the server
    server = next(c for c in calls if c[0] == "client")[3]
    assert server == {"command": sys.executable, "args": ["-m", "loopcheck", "server"], "transport": 0}


@pytest.mark.skipif(NODE is None, reason="needs Node.js")
@pytest.mark.parametrize("interpreter", ["without loopcheck", "none selected", "no Python extension"])
def test_the_extension_falls_back_to_loopcheck_on_path(interpreter, tmp_path):
    if interpreter == "without loopcheck":
        fake = tmp_path / "python"
        fake.write_text(FAKE_PYTHON_WITHOUT_LOOPCHECK)
        fake.chmod(0o755)
        selected = str(fake)
    else:
        selected = "" if interpreter == "none selected" else None
    calls = run_extension([], selected)
    server = next(c for c in calls if c[0] == "client")[3]
    assert server == {"command": "loopcheck", "args": ["server"], "transport": 0}
    assert calls[-1] == ["start"] and not [c for c in calls if c[0] == "error"]


@pytest.mark.skipif(NODE is None, reason="needs Node.js")
def test_a_configured_command_wins_over_the_selected_interpreter():
    calls = run_extension(["/opt/tools/loopcheck"], sys.executable)
    server = next(c for c in calls if c[0] == "client")[3]
    assert server == {"command": "/opt/tools/loopcheck", "args": ["server"], "transport": 0}


@pytest.mark.skipif(NODE is None, reason="needs Node.js")
@pytest.mark.parametrize("command", [["loopcheck"], [sys.executable, "-m", "loopcheck"]], ids=["path", "python -m"])
def test_the_extension_starts_the_configured_command_and_that_command_serves_lsp(command):
    calls = run_extension(command, None)
    assert ["command", "loopcheck.restart"] in calls and calls[-1] == ["start"]
    _, cid, name, server, client = next(c for c in calls if c[0] == "client")
    assert (cid, name) == ("loopcheck", "loopcheck")
    assert server == {"command": command[0], "args": [*command[1:], "server"], "transport": 0}
    assert {"notebook": {"notebookType": "jupyter-notebook"}, "language": "python"} in client["documentSelector"]
    assert {"scheme": "file", "language": "python"} in client["documentSelector"]

    from test_server import Client

    exe = shutil.which(server["command"], path=str(Path(sys.executable).parent)) or server["command"]
    c = Client([exe, *server["args"]])
    try:
        result = c.request("initialize", {"processId": None, "rootUri": None, "capabilities": {
            "notebookDocument": {"synchronization": {}}}})  # as VS Code announces it
        assert result["serverInfo"]["name"] == "loopcheck"
        assert result["capabilities"]["notebookDocumentSync"]["notebookSelector"][0]["notebook"] == "jupyter-notebook"
        c.notify("initialized", {})
        assert c.request("shutdown", None) is None
        c.notify("exit", None)
        assert c.proc.wait(timeout=10) == 0
    finally:
        c.close()
