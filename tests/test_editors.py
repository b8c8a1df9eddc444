"""The editor integrations: the VS Code extension (editors/vscode) starts the server with the
command line it is configured with (its glue code run by Node.js against stand-ins for the
``vscode`` and ``vscode-languageclient`` modules, then that command line started for real and
spoken to over LSP)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXTENSION = ROOT / "editors" / "vscode"
NODE = shutil.which("node")

HARNESS = r"""
const Module = require("module");
const calls = [];
let command = JSON.parse(process.argv[2]);
const vscode = {
  workspace: {
    getConfiguration: (section) => ({ get: (key, dflt) => (section === "loopcheck" && key === "command" ? command : dflt) }),
    onDidChangeConfiguration: (fn) => ({ dispose() {} }),
  },
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


def test_package_json_declares_the_extension():
    pkg = json.loads((EXTENSION / "package.json").read_text())
    assert (EXTENSION / pkg["main"]).is_file()
    assert set(pkg["activationEvents"]) == {"onLanguage:python", "onNotebook:jupyter-notebook"}
    assert pkg["dependencies"]["vscode-languageclient"].startswith("^9")
    assert pkg["contributes"]["configuration"]["properties"]["loopcheck.command"]["default"] == ["loopcheck"]
    assert pkg["version"] == __import__("loopcheck").__version__


@pytest.mark.skipif(NODE is None, reason="needs Node.js")
@pytest.mark.parametrize("command", [["loopcheck"], [sys.executable, "-m", "loopcheck"]], ids=["default", "python -m"])
def test_the_extension_starts_the_configured_command_and_that_command_serves_lsp(command):
    proc = subprocess.run([NODE, "-e", HARNESS, str(EXTENSION / "extension.js"), json.dumps(command)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    calls = json.loads(proc.stdout)
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
