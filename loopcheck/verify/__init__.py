"""Runtime evidence for loopcheck's rules (``loopcheck verify``).

Each rule has a bad and a good fixture (``fixtures/LCxxx_bad.py`` / ``LCxxx_good.py``): real,
runnable training scripts.  ``loopcheck verify`` runs each of them, unedited, in its own
subprocess under runtime probes and measures the bug's symptom:

* :mod:`loopcheck.verify.probes`   - hooks installed into torch before the script runs (global
  optimizer step hooks, module forward hooks, saved-tensor hooks, wrappers around
  ``clip_grad_norm_``, ``GradScaler``, LR schedulers, ``zero_grad`` and ``autograd.backward``);
* :mod:`loopcheck.verify.runner`   - runs one fixture under the probes (child process) and
  runs many fixtures in parallel subprocesses (parent);
* :mod:`loopcheck.verify.symptoms` - one small measurement per rule code, computed from a
  fixture's probe record, and the verdict;
* :mod:`loopcheck.verify.cli`      - the ``verify`` click command.

torch is only imported inside the child process and inside the command, never when
``loopcheck`` itself is imported: the linter does not need torch.
"""
