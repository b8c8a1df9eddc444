"""loopcheck: a static analyzer for the order of operations in PyTorch training loops."""


def _version() -> str:
    """The installed version: ``loopcheck/_version.py``, which setuptools-scm writes from the git
    tag when the project is built or installed (editable installs included); else the installed
    distribution's metadata; else ``0.0.0+unknown`` (a source tree on ``sys.path`` that was never
    installed)."""
    try:
        from loopcheck._version import version

        return version
    except ImportError:
        pass
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("loopcheck")
    except PackageNotFoundError:
        return "0.0.0+unknown"


__version__ = _version()
