"""Robustness: nothing crashes the run, nothing loses a byte (issues 9 and 10).

Every input is generated at test time; nothing large is committed.
"""
