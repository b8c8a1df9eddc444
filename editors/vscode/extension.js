// The loopcheck extension for VS Code: starts `loopcheck server` (LSP over stdio) for Python
// files and Jupyter notebooks, with vscode-languageclient. Everything else (diagnostics, quick
// fixes, "Fix all", notebooks) is the server's.
"use strict";

const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

/** The server's command line from the `loopcheck.command` setting, plus `server`. */
function serverOptions() {
  const configured = vscode.workspace.getConfiguration("loopcheck").get("command", ["loopcheck"]);
  const [command, ...args] = configured.length ? configured : ["loopcheck"];
  return { command, args: [...args, "server"], transport: TransportKind.stdio };
}

const clientOptions = {
  documentSelector: [
    { scheme: "file", language: "python" },
    { scheme: "untitled", language: "python" },
    { notebook: { notebookType: "jupyter-notebook" }, language: "python" },
  ],
  outputChannelName: "loopcheck",
};

async function start() {
  client = new LanguageClient("loopcheck", "loopcheck", serverOptions(), clientOptions);
  try {
    await client.start();
  } catch (err) {
    vscode.window.showErrorMessage(
      `loopcheck: could not start \`${serverOptions().command} server\` (${err.message || err}). ` +
        "Install it with pip install 'loopcheck[server]', or set loopcheck.command.",
    );
  }
}

async function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand("loopcheck.restart", async () => {
      if (client) {
        await client.stop();
      }
      await start();
    }),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration("loopcheck.command")) {
        await vscode.commands.executeCommand("loopcheck.restart");
      }
    }),
  );
  await start();
}

async function deactivate() {
  if (client) {
    await client.stop();
  }
}

module.exports = { activate, deactivate, serverOptions, clientOptions };
