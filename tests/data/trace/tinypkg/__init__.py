"""A package run with ``python -m tinypkg``: its training loop lives in tinypkg/engine.py."""
