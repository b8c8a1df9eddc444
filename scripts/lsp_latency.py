"""Measure the language server as an editor sees it, with a real LSP client (pygls' client).

Usage: python scripts/lsp_latency.py [--lines 2000] [--bursts 10] [--interval-ms 20] [--huge-mb 5]

1. Typing: a training script of about ``--lines`` lines is opened; then ``--bursts`` times, five
   incremental ``didChange`` edits (characters typed into a comment of the training loop,
   ``--interval-ms`` apart) are sent, and the time from the last keystroke of the burst to the
   ``publishDiagnostics`` of that last version is measured (debounce included). Printed: min,
   median, 90th percentile and max, the target (150 ms), and the cost of one check of the same
   text in this process (parse + analysis, no LSP), and of one after an edit that reparses
   only the changed statements (as the server's document processes do), to show where the
   time goes.
2. Not blocked: a ``--huge-mb`` MB document is opened and, while it is being checked, a
   ``codeAction`` for a small open document is timed; then the huge document is replaced by a
   small one and the time to its diagnostics is measured (the stale check is killed).

Prints one line per measurement, plus the machine (CPU count, Python, platform).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 150.0


def training_script(lines: int) -> str:
    """A training script of about ``lines`` lines: a real training loop (with one LC401 bug) and
    model blocks and helpers around it, as long scripts are."""
    loop = (ROOT / "fixtures" / "LC401_bad.py").read_text(encoding="utf-8")
    block = (
        "\n\nclass Block{n}(nn.Module):\n"
        '    """A residual block."""\n\n'
        "    def __init__(self, dim: int = 64) -> None:\n"
        "        super().__init__()\n"
        "        self.fc1 = nn.Linear(dim, dim)\n"
        "        self.fc2 = nn.Linear(dim, dim)\n"
        "        self.norm = nn.LayerNorm(dim)\n\n"
        "    def forward(self, x):\n"
        "        h = torch.relu(self.fc1(self.norm(x)))\n"
        "        return x + self.fc2(h)\n\n\n"
        "def helper_{n}(values, scale=1.0):\n"
        "    out = []\n"
        "    for v in values:\n"
        "        if v > 0:\n"
        "            out.append(v * scale)\n"
        "        else:\n"
        "            out.append(-v)\n"
        "    return sum(out) / max(len(out), 1)\n"
    )
    parts, n = [loop], 0
    while sum(p.count("\n") for p in parts) < lines:
        parts.append(block.format(n=n))
        n += 1
    return "".join(parts)


class Session:
    """A pygls client connected to ``python -m loopcheck.server``."""

    def __init__(self) -> None:
        self.client = LanguageClient("loopcheck-latency", "1")
        self.published: dict[str, list[tuple[float, int | None, int]]] = {}
        self.waiters: list[tuple[str, int, asyncio.Future]] = []

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(ls, params: types.PublishDiagnosticsParams) -> None:
            now = time.perf_counter()
            self.published.setdefault(params.uri, []).append((now, params.version, len(params.diagnostics)))
            for uri, version, future in list(self.waiters):
                if uri == params.uri and params.version == version and not future.done():
                    future.set_result(now)

        @self.client.feature(types.WINDOW_SHOW_MESSAGE)
        def on_message(ls, params) -> None:
            print("server says:", params.message, file=sys.stderr)

    async def start(self) -> None:
        await self.client.start_io(sys.executable, "-m", "loopcheck.server", cwd=str(ROOT))
        await self.client.initialize_async(types.InitializeParams(
            process_id=os.getpid(), root_uri=ROOT.as_uri(), capabilities=types.ClientCapabilities()))
        self.client.initialized(types.InitializedParams())

    def diagnostics_of(self, uri: str, version: int) -> asyncio.Future:
        future = asyncio.get_running_loop().create_future()
        for when, v, _n in self.published.get(uri, []):
            if v == version:
                future.set_result(when)
        self.waiters.append((uri, version, future))
        return future

    def open(self, uri: str, text: str, version: int = 1) -> None:
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)))

    def type_at(self, uri: str, version: int, line: int, character: int, text: str) -> None:
        pos = types.Position(line=line, character=character)
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(range=types.Range(start=pos, end=pos), text=text)]))

    def replace(self, uri: str, version: int, text: str) -> None:
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


def check_cost(text: str, repeat: int = 5, reparse: bool = False) -> float:
    """Milliseconds of one check of ``text`` in this process (best of ``repeat``); with
    ``reparse``, of a check after a comment was typed into its training loop, the last
    version's tree reused as the server's chain processes reuse it."""
    from loopcheck.server.reparse import Reparser
    from loopcheck.server.worker import analyze

    best = float("inf")
    for n in range(repeat):
        reparser = Reparser() if reparse else None
        if reparse:
            analyze("python", text, "train.py", None, False, (), reparser)
            reparser.prepare()
            at = text.index("\n", text.index("loss.backward()"))
            source = text[:at] + "  # typed" * (n + 1) + text[at:]
        else:
            source = text
        t = time.perf_counter()
        analyze("python", source, "train.py", None, False, (), reparser)
        best = min(best, time.perf_counter() - t)
    return best * 1000


async def typing(session: Session, lines: int, bursts: int, interval: float) -> list[float]:
    text = training_script(lines)
    uri = (ROOT / "latency_train.py").as_uri()
    session.open(uri, text)
    await asyncio.wait_for(session.diagnostics_of(uri, 1), 60)
    comment_line = next(n for n, line in enumerate(text.splitlines()) if "loss.backward()" in line)
    column = len(text.splitlines()[comment_line])
    version, latencies = 1, []
    for _ in range(bursts):
        await asyncio.sleep(0.3)
        for ch in "  # x":
            version += 1
            session.type_at(uri, version, comment_line, column, ch)
            column += 1
            last = time.perf_counter()
            await asyncio.sleep(interval)
        arrived = await asyncio.wait_for(session.diagnostics_of(uri, version), 60)
        latencies.append((arrived - last) * 1000)
        stale = [v for _, v, _ in session.published[uri] if v is not None and 1 < v < version and v % 5 != 1]
        if stale:
            print(f"published for stale versions: {stale}", file=sys.stderr)
    return latencies


async def not_blocked(session: Session, huge_mb: float) -> tuple[float, float]:
    small = (ROOT / "latency_small.py").as_uri()
    session.open(small, (ROOT / "fixtures" / "LC203_bad.py").read_text(encoding="utf-8"))
    await asyncio.wait_for(session.diagnostics_of(small, 1), 60)
    block = training_script(200)
    huge = (ROOT / "latency_huge.py").as_uri()
    session.open(huge, block * max(1, int(huge_mb * 1_000_000 / len(block))))
    await asyncio.sleep(0.5)  # its check has started
    t = time.perf_counter()
    await session.client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=small),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
        context=types.CodeActionContext(diagnostics=[])))
    answered = (time.perf_counter() - t) * 1000
    t = time.perf_counter()
    session.replace(huge, 2, block)
    await asyncio.wait_for(session.diagnostics_of(huge, 2), 120)
    replaced = (time.perf_counter() - t) * 1000
    return answered, replaced


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--bursts", type=int, default=10)
    parser.add_argument("--interval-ms", type=float, default=20.0)
    parser.add_argument("--huge-mb", type=float, default=5.0)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, {platform.platform()}")
    text = training_script(args.lines)
    print(f"one check of the {text.count(chr(10))}-line script in-process: {check_cost(text):.0f} ms "
          f"(after an edit, reparsing the changed statements: {check_cost(text, reparse=True):.0f} ms)")
    session = Session()
    await session.start()
    try:
        lat = sorted(await typing(session, args.lines, args.bursts, args.interval_ms / 1000))
        p90 = lat[min(len(lat) - 1, int(round(0.9 * (len(lat) - 1))))]
        print(f"typing, last keystroke of a burst of 5 -> diagnostics ({len(lat)} bursts): "
              f"min {lat[0]:.0f} ms, median {statistics.median(lat):.0f} ms, p90 {p90:.0f} ms, max {lat[-1]:.0f} ms "
              f"(target {TARGET_MS:.0f} ms: {'met' if statistics.median(lat) <= TARGET_MS else 'NOT met'})")
        answered, replaced = await not_blocked(session, args.huge_mb)
        print(f"codeAction on a small document while a {args.huge_mb:g} MB document is checked: {answered:.0f} ms")
        print(f"the huge document replaced by a small one -> its diagnostics (stale check killed): {replaced:.0f} ms")
    finally:
        await session.stop()


if __name__ == "__main__":
    asyncio.run(main())
