"""Before a release is published: the tag names the same version as everything that states one.

Usage: python scripts/release_check.py TAG [DIST]

``TAG`` is the pushed tag (``v0.2.0``). Checked: the tag has the form ``vX.Y.Z`` (or a
pre-release ``vX.Y.ZrcN``); ``CHANGELOG.md`` has a ``## [X.Y.Z]`` section; README's pre-commit
``rev:`` is the tag; the VS Code extension's ``package.json`` version is ``X.Y.Z``; and, given
``DIST`` (the folder ``python -m build`` wrote), the sdist and the wheel there are version
``X.Y.Z`` (setuptools-scm derived it from the tag). Prints each problem and exits 1 if any.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TAG = re.compile(r"v(\d+\.\d+\.\d+(?:(?:a|b|rc)\d+)?)")


def problems(tag: str, root: Path = ROOT, dist: Path | None = None) -> list[str]:
    """What disagrees with ``tag``, one line each (empty: ready to publish)."""
    m = TAG.fullmatch(tag)
    if not m:
        return [f"tag {tag!r} is not vX.Y.Z"]
    version = m.group(1)
    found = []
    if f"\n## [{version}]" not in (root / "CHANGELOG.md").read_text(encoding="utf-8"):
        found.append(f"CHANGELOG.md has no '## [{version}]' section")
    revs = re.findall(r"^\s*rev: (\S+)", (root / "README.md").read_text(encoding="utf-8"), re.M)
    if not revs or any(rev != tag for rev in revs):
        found.append(f"README.md's pre-commit rev: is {revs}, not {tag}")
    package = json.loads((root / "editors" / "vscode" / "package.json").read_text(encoding="utf-8"))
    if package["version"] != version:
        found.append(f"editors/vscode/package.json has version {package['version']}, not {version}")
    if dist is not None:
        names = sorted(p.name for p in dist.iterdir() if p.name.startswith("loopcheck-"))
        want = [f"loopcheck-{version}-py3-none-any.whl", f"loopcheck-{version}.tar.gz"]
        if names != want:
            found.append(f"{dist} holds {names}, not {want}")
    return found


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    found = problems(argv[0], ROOT, Path(argv[1]) if len(argv) == 2 else None)
    for line in found:
        print(f"release_check: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
