"""What a release needs, checked without building one (tests/test_packaging.py builds): the
version from the git tag (setuptools-scm), rule URLs built in one place that point to the
released version's pages, the release workflow, the release check it runs on a tag, README's
pre-commit ``rev:`` and CONTRIBUTING.md."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loopcheck import catalog
from loopcheck.analysis import check_source
from loopcheck.catalog import INFOS, REPOSITORY_URL, docs_ref, rule_url

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
sys.path.insert(0, str(ROOT / "scripts"))


def test_the_version_comes_from_the_git_tag():
    assert "version" not in PYPROJECT["project"] and PYPROJECT["project"]["dynamic"] == ["version"]
    assert any(r.startswith("setuptools-scm") for r in PYPROJECT["build-system"]["requires"])
    scm = PYPROJECT["tool"]["setuptools_scm"]
    assert scm["version_file"] == "loopcheck/_version.py"
    assert re.fullmatch(r"\d+\.\d+\.\d+\.dev0", scm["fallback_version"])  # a tree without git still installs
    assert "loopcheck/_version.py" in (ROOT / ".gitignore").read_text().splitlines()  # written at install, not tracked


def test_the_version_shown_is_the_installed_one():
    import loopcheck

    proc = subprocess.run([sys.executable, "-m", "loopcheck", "--version"], capture_output=True, text=True, check=True)
    assert proc.stdout == f"loopcheck {loopcheck.__version__}\n"
    assert re.fullmatch(r"\d+(\.\d+)*((a|b|rc)\d+)?(\.dev\d+)?(\+[\w.]+)?", loopcheck.__version__)


@pytest.mark.parametrize(("version", "ref"), [
    ("0.2.0", "v0.2.0"), ("1.0.0rc1", "v1.0.0rc1"), ("0.2.1.dev3+g1a2b3c4", "main"),
    ("0.2.0.dev0", "main"), ("0.2.0.dev4+g1a2b3c4.d20261127", "main"),
])
def test_rule_urls_name_the_released_version(version, ref):
    assert docs_ref(version) == ref
    assert rule_url("LC101", version) == f"{REPOSITORY_URL}/blob/{ref}/rules/LC101.md"


def test_rule_urls_are_built_in_one_place(monkeypatch, tmp_path):
    """Changing catalog.RULE_URL changes the links of JSON, SARIF and the language server."""
    from loopcheck.cli import reporters

    monkeypatch.setattr(catalog, "RULE_URL", "https://docs.example/{ref}/{code}.html")
    want = f"https://docs.example/{docs_ref(__import__('loopcheck').__version__)}/LC101.html"
    findings = check_source((ROOT / "fixtures" / "LC101_bad.py").read_text(), str(tmp_path / "train.py"))
    assert [f.code for f in findings] == ["LC101"]
    out = io.StringIO()
    reporters.write_json(findings, out)
    assert json.loads(out.getvalue())[0]["url"] == want
    out = io.StringIO()
    reporters.write_sarif(findings, out)
    rules = json.loads(out.getvalue())["runs"][0]["tool"]["driver"]["rules"]
    assert next(r for r in rules if r["id"] == "LC101")["helpUri"] == want
    pytest.importorskip("pygls")
    from pygls.workspace import TextDocument

    from loopcheck.server import lsp as server

    doc = TextDocument("file:///train.py", (ROOT / "fixtures" / "LC101_bad.py").read_text())
    diagnostic = server.diagnostic(server.Place(doc, doc.uri), findings[0], lambda row: server.Place(doc, doc.uri))
    assert diagnostic.code_description.href == want


def test_no_other_module_hard_codes_the_project_address():
    package = Path(catalog.__file__).parent  # the one under test: the source tree's or an installed wheel's
    hits = [p.relative_to(package).as_posix() for p in package.rglob("*.py")
            if "github.com/loopcheck" in p.read_text(encoding="utf-8")]
    assert hits == ["catalog.py"]
    urls = PYPROJECT["project"]["urls"]
    assert all(u.startswith(REPOSITORY_URL) for u in urls.values()), urls
    extension = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text())
    assert extension["repository"]["url"] == REPOSITORY_URL


def test_every_rule_has_the_page_its_url_names():
    for code in INFOS:
        assert rule_url(code, "1.0.0").endswith(f"/rules/{code}.md")
        assert (ROOT / "rules" / f"{code}.md").is_file(), code


def test_readme_pins_the_hook_to_the_release_tag():
    readme = (ROOT / "README.md").read_text()
    package = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text())
    revs = re.findall(r"^\s*rev: (\S+)", readme, re.M)
    assert revs == [f"v{package['version']}"]


def _release_tree(tmp_path: Path, version: str) -> Path:
    for name in ("CHANGELOG.md", "README.md", "editors/vscode/package.json"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    changelog = tmp_path / "CHANGELOG.md"
    changelog.write_text(changelog.read_text().replace("## [Unreleased]", f"## [Unreleased]\n\n## [{version}]", 1))
    return tmp_path


def test_release_check_accepts_a_consistent_tag_and_names_each_disagreement(tmp_path):
    import release_check

    version = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text())["version"]
    tree = _release_tree(tmp_path / "tree", version)
    dist = tmp_path / "dist"
    dist.mkdir()
    (dist / f"loopcheck-{version}-py3-none-any.whl").touch()
    (dist / f"loopcheck-{version}.tar.gz").touch()
    assert release_check.problems(f"v{version}", tree, dist) == []
    assert release_check.problems(version, tree) == [f"tag {version!r} is not vX.Y.Z"]
    found = release_check.problems("v9.9.9", tree, dist)
    assert [line.split(" ", 1)[0] for line in found] == ["CHANGELOG.md", "README.md's", "editors/vscode/package.json",
                                                         str(dist)]
    proc = subprocess.run([sys.executable, ROOT / "scripts" / "release_check.py", "v9.9.9"],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stderr.startswith("release_check: CHANGELOG.md has no '## [9.9.9]'")


def test_release_workflow_builds_tests_the_wheel_and_publishes_on_a_tag():
    yaml = pytest.importorskip("yaml")
    workflow = yaml.safe_load(WORKFLOW.read_text())
    on = workflow[True]  # YAML 1.1 reads the key `on` as true
    assert on["push"]["tags"] == ["v*"] and "pull_request" in on
    jobs = workflow["jobs"]
    runs = {name: "\n".join(s.get("run", "") for s in job["steps"]) for name, job in jobs.items()}
    uses = {name: [s.get("uses", "") for s in job["steps"]] for name, job in jobs.items()}

    build = jobs["build"]["steps"]
    assert next(s for s in build if s.get("uses", "").startswith("actions/checkout"))["with"]["fetch-depth"] == 0
    assert "python -m build" in runs["build"] and "scripts/release_check.py" in runs["build"]
    assert "bash scripts/test_wheel.sh" in runs["test-wheel"] and jobs["test-wheel"]["needs"] == "build"
    assert "pip install -e" not in runs["test-wheel"]  # the wheel, never the source tree
    assert "npm ci" in runs["vscode"] and "vsce package" in runs["vscode"]
    assert "LOOPCHECK_VSCODE_EXTENSION" in runs["vscode"]  # the packaged extension's tests

    publish = jobs["publish"]
    assert publish["if"] == "startsWith(github.ref, 'refs/tags/v')"
    assert set(publish["needs"]) == {"build", "test-wheel", "test-source", "vscode"}
    assert publish["permissions"] == {"id-token": "write"}  # trusted publishing: no token secret
    assert "pypa/gh-action-pypi-publish@release/v1" in uses["publish"]
    assert "secrets." not in WORKFLOW.read_text()
    assert workflow["permissions"] == {"contents": "read"}


def test_the_workflow_scripts_exist():
    for path in ("scripts/test_wheel.sh", "scripts/release_check.py"):
        assert (ROOT / path).is_file(), path
    assert subprocess.run(["bash", "-n", ROOT / "scripts" / "test_wheel.sh"]).returncode == 0


def test_contributing_says_how_to_release_and_how_to_add_a_rule():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    for needed in ("## Releasing", "git tag -a v", "git push origin main v", "trusted publishing", "release.yml",
                   "scripts/release_check.py", "## Adding a rule", "loopcheck/catalog.py", "## Reported when",
                   "fixtures/", "rules/LC", "loopcheck/knowledge/", "REPOSITORY_URL"):
        assert needed in text, needed
