// The loopcheck extension for VS Code: starts `loopcheck server` (LSP over stdio) for Python
// files and Jupyter notebooks, with vscode-languageclient. Everything else (diagnostics, quick
// fixes, "Fix all", notebooks) is the server's.
//
// Which loopcheck runs, as ruff's extension decides it: the `loopcheck.command` setting when the
// user set one; else `<interpreter> -m loopcheck` with the interpreter selected in VS Code (the
// Python extension's environments API), when loopcheck is installed there; else `loopcheck` on
// PATH.
"use strict";

const childProcess = require("child_process");
const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

const PYTHON_EXTENSION = "ms-python.python";

let client;

/** The Python extension's API (`ms-python.python` exports), or undefined when it is not installed. */
async function pythonApi() {
  const extension = vscode.extensions.getExtension(PYTHON_EXTENSION);
  if (!extension) {
    return undefined;
  }
  try {
    if (!extension.isActive) {
      await extension.activate();
    }
    return extension.exports;
  } catch {
    return undefined;
  }
}

/** The executable of the interpreter selected in VS Code for the workspace, or undefined. */
async function selectedInterpreter() {
  const api = await pythonApi();
  const environments = api && api.environments;
  if (!environments || !environments.getActiveEnvironmentPath || !environments.resolveEnvironment) {
    return undefined;
  }
  try {
    const folder = vscode.workspace.workspaceFolders && vscode.workspace.workspaceFolders[0];
    const active = environments.getActiveEnvironmentPath(folder && folder.uri);
    const environment = active && (await environments.resolveEnvironment(active));
    const executable = environment && environment.executable;
    return (executable && executable.uri && executable.uri.fsPath) || undefined;
  } catch {
    return undefined;
  }
}

/** Whether `interpreter -m loopcheck --version` runs (loopcheck is installed there). */
function hasLoopcheck(interpreter) {
  return new Promise((resolve) => {
    childProcess.execFile(interpreter, ["-m", "loopcheck", "--version"], { timeout: 20000 }, (err, stdout) =>
      resolve(!err && String(stdout).startsWith("loopcheck ")),
    );
  });
}

/**
 * The command that runs loopcheck, without `server`, and where it came from: the
 * `loopcheck.command` setting if set, the selected interpreter's loopcheck, or `loopcheck` on PATH.
 */
async function resolveCommand() {
  const configured = vscode.workspace.getConfiguration("loopcheck").get("command", []);
  if (configured && configured.length) {
    return { command: configured, source: "setting" };
  }
  const interpreter = await selectedInterpreter();
  if (interpreter && (await hasLoopcheck(interpreter))) {
    return { command: [interpreter, "-m", "loopcheck"], source: "interpreter" };
  }
  return { command: ["loopcheck"], source: "path" };
}

/** The server's command line for `vscode-languageclient`: the resolved command plus `server`. */
async function serverOptions() {
  const { command: [command, ...args] } = await resolveCommand();
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
  const server = await serverOptions();
  client = new LanguageClient("loopcheck", "loopcheck", server, clientOptions);
  try {
    await client.start();
  } catch (err) {
    vscode.window.showErrorMessage(
      `loopcheck: could not start \`${[server.command, ...server.args].join(" ")}\` (${err.message || err}). ` +
        "Install it with pip install 'loopcheck[server]' in the selected Python environment, or set loopcheck.command.",
    );
  }
}

async function restart() {
  if (client) {
    await client.stop();
    client = undefined;
  }
  await start();
}

async function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand("loopcheck.restart", restart),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration("loopcheck.command")) {
        await restart();
      }
    }),
  );
  // Another interpreter selected in VS Code: its loopcheck (unless a command is configured).
  const api = await pythonApi();
  if (api && api.environments && api.environments.onDidChangeActiveEnvironmentPath) {
    context.subscriptions.push(api.environments.onDidChangeActiveEnvironmentPath(() => restart()));
  }
  await start();
}

async function deactivate() {
  if (client) {
    await client.stop();
  }
}

module.exports = { activate, deactivate, resolveCommand, serverOptions, clientOptions };
