"""loopcheck: a static analyzer for the order of operations in PyTorch training loops."""

__version__ = "0.1.0"
