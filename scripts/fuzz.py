"""Fuzz loopcheck's whole check and fix path with generated and mutated programs.

Usage::

    python scripts/fuzz.py [--count N] [--seconds S] [--seed K] [--out DIR]

Programs come from three sources, in turn:

* ``grammar``: a random program from hypothesmith's grammar strategy (``pip install
  hypothesmith``), with ``loss.backward()`` appended so that the analysis runs;
* ``spliced``: such a program's statements put at a random top-level place of a fixture
  (``fixtures/**/*.py``), so the odd code meets a real training loop;
* ``mutated``: a fixture changed by a few random edits (lines deleted, duplicated, swapped,
  re-indented, truncated, characters and tokens inserted, brackets nested deep, line endings
  changed, ...).

Each program goes through what ``loopcheck --fix --unsafe-fixes`` does to a file, in memory:
:func:`loopcheck.check.lint_text` (parse, analysis, fixes attached and verified) in a big-stack
worker, then :func:`loopcheck.fixes.apply_fixes` and a check of the fixed text. An exception
out of any of them is a failure; so is a fixed text that does not parse when the program did
(an *invariant* failure). The programs run in a child process that reports each result; if
the child dies (a segfault), the program it was running is recorded as a crash and a new
child goes on with the rest of the budget.

Prints the counts per source and the failures, writes each failing program to ``--out``
(default ``fuzz-failures/``), and exits 1 if anything failed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "fixtures").rglob("*.py"))
TRIGGER = "\nloss.backward()\n"


# ------------------------------------------------------------------------------ programs


def mutate(text: str, rng: random.Random) -> str:
    """A fixture with 1-4 random edits."""
    lines = text.splitlines(keepends=True) or [""]
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(12)
        i = rng.randrange(len(lines))
        if op == 0 and len(lines) > 1:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif op == 2:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 3:
            lines[i] = rng.choice(["    ", "\t", "  "]) + lines[i]
        elif op == 4:
            lines[i] = lines[i].lstrip(" ")
        elif op == 5:
            cut = rng.randrange(len(lines[i]) + 1)
            token = rng.choice(["(", ")", "[", "]", ":", "\\", "'", '"""', "#", "\x0c", "\x00", "é", "\u2028",
                                "lambda:", " if ", ".step(", "\r"])
            lines[i] = lines[i][:cut] + token + lines[i][cut:]
        elif op == 6:
            lines = lines[:i]
            if not lines:
                lines = [""]
        elif op == 7:
            depth = rng.choice([50, 199, 201, 600])
            lines.insert(i, "x = " + "(" * depth + "1" + ")" * depth + "\n")
        elif op == 8:
            n = rng.choice([100, 999, 1200])
            lines.insert(i, "x = " + "+".join(["loss"] * n) + "\n")
        elif op == 9:
            nl = rng.choice(["\r\n", "\r"])
            lines = [re.sub(r"\r?\n$", nl, line) for line in lines]
        elif op == 10:
            names = re.findall(r"\b[a-z_]\w*\b", text) or ["x"]
            lines[i] = re.sub(r"\b[a-z_]\w*\b", lambda m: rng.choice(names), lines[i], count=1)
        else:
            stmt = rng.choice(["optimizer.step()", "loss.backward()", "optimizer.zero_grad()", "model.eval()",
                               "scaler.update()", "losses.append(loss)", "break", "continue", "return",
                               "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"])
            indent = re.match(r"[ \t]*", lines[i]).group(0)
            lines.insert(i, f"{indent}{stmt}\n")
    return "".join(lines)


def splice(program: str, fixture: str, rng: random.Random) -> str:
    """``program`` put between two top-level statements of ``fixture``."""
    lines = fixture.splitlines(keepends=True)
    tops = [k for k, line in enumerate(lines) if line[:1] not in (" ", "\t", "\n", "#", ")", "]", "}", "")]
    at = rng.choice(tops) if tops else 0
    if not program.endswith("\n"):
        program += "\n"
    return "".join(lines[:at]) + program + "".join(lines[at:])


# ------------------------------------------------------------------------------ one program


def check_one(text: str, name: str) -> str | None:
    """Run the check and fix path on ``text``; the failure (a traceback or an invariant), or
    ``None``."""
    import libcst as cst

    from loopcheck.check import lint_text
    from loopcheck.fixes import apply_fixes
    from loopcheck.parsing import parse_module, run_deep

    def parses(source: str) -> bool:
        try:
            run_deep(parse_module, source)
            return True
        except cst.ParserSyntaxError:
            return False

    try:
        found, checked = run_deep(lint_text, text, name)
        if any(f.fix is not None for f in found):
            new, fixed = run_deep(apply_fixes, checked.text, found, True, filename=name)
            if new != checked.text:
                if parses(checked.text) and not parses(new):
                    return "invariant: the fixed text does not parse"
                run_deep(lint_text, new, name)
    except Exception:  # noqa: BLE001 - that is what we are looking for
        return traceback.format_exc(limit=-8)
    return None


# ------------------------------------------------------------------------------ the child


def child(seed: int, count: int, seconds: float, progress: str) -> None:
    """Run programs, one JSON line per result on stdout; the program being run is in
    ``progress`` (so a crash can be told)."""
    import warnings

    warnings.simplefilter("ignore")  # hypothesmith compiles odd programs: SyntaxWarning noise
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    fixtures = [p.read_text(encoding="utf-8") for p in FIXTURES]
    done = [0]

    def run(source: str, text: str) -> None:
        if done[0] >= count or time.monotonic() > deadline:
            raise StopIteration
        with open(progress, "w", encoding="utf-8", errors="surrogatepass") as f:
            json.dump({"source": source, "text": text}, f)
        name = f"fuzz_{done[0]}.py"
        failure = check_one(text, name)
        done[0] += 1
        print(json.dumps({"source": source, "failure": failure, "text": text if failure else None}), flush=True)

    try:
        import hypothesmith
        from hypothesis import HealthCheck, Phase, given, settings
        from hypothesis import seed as hseed
    except ImportError:
        hypothesmith = None
        print(json.dumps({"note": "hypothesmith is not installed: mutated fixtures only"}), flush=True)
    try:
        if hypothesmith is None:
            while True:
                run("mutated", mutate(rng.choice(fixtures), rng))

        @hseed(seed)
        @settings(max_examples=10**9, deadline=None, database=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(hypothesmith.from_grammar())
        def generated(program: str) -> None:
            run("grammar", program + TRIGGER)
            run("spliced", splice(program, rng.choice(fixtures), rng))
            run("mutated", mutate(rng.choice(fixtures), rng))

        generated()
    except StopIteration:
        pass
    except Exception as err:  # hypothesis re-raises StopIteration wrapped in some versions
        if "StopIteration" not in repr(err):
            raise


# ------------------------------------------------------------------------------ the parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000, help="programs to run (default 1000)")
    parser.add_argument("--seconds", type=float, default=600, help="time budget (default 600)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("fuzz-failures"))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--progress", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.seed, args.count, args.seconds, args.progress)
        return 0

    start = time.monotonic()
    counts: dict[str, int] = {}
    failures: list[dict] = []
    crashes = 0
    seed = args.seed
    notes = set()
    with tempfile.TemporaryDirectory() as tmp:
        progress = os.path.join(tmp, "progress.json")
        while True:
            total = sum(counts.values()) + crashes
            left = args.seconds - (time.monotonic() - start)
            if total >= args.count or left <= 0:
                break
            cmd = [sys.executable, __file__, "--child", "--seed", str(seed), "--count", str(args.count - total),
                   "--seconds", str(left), "--progress", progress]
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
            for line in proc.stdout:
                rec = json.loads(line)
                if "note" in rec:
                    notes.add(rec["note"])
                    continue
                counts[rec["source"]] = counts.get(rec["source"], 0) + 1
                if rec["failure"]:
                    failures.append(rec)
            code = proc.wait()
            if code != 0:  # died: the program in progress killed it
                crashes += 1
                try:
                    with open(progress, encoding="utf-8", errors="surrogatepass") as f:
                        rec = json.load(f)
                except (OSError, ValueError):
                    rec = {"source": "?", "text": ""}
                failures.append({**rec, "failure": f"the process died (exit {code})"})
            elif sum(counts.values()) + crashes == total:  # nothing more to draw
                break
            seed += 1
    elapsed = time.monotonic() - start
    runs = sum(counts.values())
    for note in sorted(notes):
        print(note)
    print(f"{runs} programs in {elapsed:.0f} s ({runs / max(elapsed, 1e-9):.1f}/s): "
          + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print(f"{len(failures)} failures ({crashes} crashes)")
    if failures:
        args.out.mkdir(parents=True, exist_ok=True)
        for n, rec in enumerate(failures):
            path = args.out / f"failure_{n}_{rec['source']}.py"
            path.write_text(rec.get("text") or "", encoding="utf-8", errors="surrogatepass")
            first = (rec["failure"] or "").strip().splitlines()[-1:]
            print(f"  {path}: {first[0] if first else ''}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
