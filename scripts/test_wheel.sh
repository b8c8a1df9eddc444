#!/usr/bin/env bash
# Run the test suite against an installed wheel, not against the source tree.
#
# usage: scripts/test_wheel.sh PYTHON DIST [PYTEST ARGS...]
#   PYTHON  the interpreter of a fresh virtualenv (with torch installed first, where the tests
#           that need it should run: any other torch spec than the one wanted downloads GBs)
#   DIST    the folder `python -m build` wrote: one sdist and one wheel
#   EXTRAS  (environment) the wheel's extras to install with it; default "[test]"
#
# The wheel is installed with its test extra; the sdist (tests, fixtures, rule pages, reference
# loop) is unpacked into a temporary folder and its loopcheck/ package deleted there, so that
# `import loopcheck`, in the tests and in every command they start, can only find the wheel.
# The tests that build the project from its source (tests/test_packaging.py,
# tests/test_precommit.py) skip themselves there: they run from a checkout.
set -euo pipefail
python=$1
dist=$(cd "$2" && pwd)
shift 2
wheel=$(ls "$dist"/loopcheck-*.whl)
sdist=$(ls "$dist"/loopcheck-*.tar.gz)
"$python" -m pip install -q --disable-pip-version-check "${wheel}${EXTRAS-[test]}"
work=$(mktemp -d)
tar -xzf "$sdist" -C "$work"
src=$(ls -d "$work"/loopcheck-*)
rm -rf "$src/loopcheck" "$src"/*.egg-info
cd "$src"
"$python" - <<'PY'
import os, loopcheck
where = os.path.dirname(loopcheck.__file__)
print(f"testing loopcheck {loopcheck.__version__} installed at {where}")
assert not where.startswith(os.getcwd()), "the tests would import the source tree"
PY
exec "$python" -m pytest -p no:cacheprovider "$@"
