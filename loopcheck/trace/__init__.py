"""``loopcheck trace``: watch the user's own training run and report the loop bugs it shows.

The one loopcheck command that runs user code. The program runs in-process, unchanged, under
runtime hooks built on the ``verify`` probes; each bug seen is reported with the static rule's
code at the user's line, and the static findings of the files it went through are marked
confirmed or not observed.

* :mod:`~loopcheck.trace.target`  - the ``-- python train.py ARGS`` / ``-m module`` command line;
* :mod:`~loopcheck.trace.sites`   - which frames are the user's, and the call span there;
* :mod:`~loopcheck.trace.state`   - observations, per-optimizer state, message wording;
* :mod:`~loopcheck.trace.watch`   - the watcher: optimizers, backward passes, steps, and the
  checks by rule family, as in ``loopcheck/rules``: :mod:`~loopcheck.trace.gradients`
  (LC101-LC105), :mod:`~loopcheck.trace.schedulers` (LC201-LC203), :mod:`~loopcheck.trace.modes`
  (LC301, LC302), :mod:`~loopcheck.trace.memory` (LC401), :mod:`~loopcheck.trace.setup` (LC501),
  :mod:`~loopcheck.trace.amp` (LC601-LC605); :mod:`~loopcheck.trace.forwards` finds the models
  and watches their forward passes;
* :mod:`~loopcheck.trace.holders`, :mod:`~loopcheck.trace.codesearch` - who keeps a loss alive,
  which line replaced a model (only once a symptom is seen);
* :mod:`~loopcheck.trace.run`     - runs the program under the watcher (``runpy``);
* :mod:`~loopcheck.trace.report`  - findings, static confirmation, output formats;
* :mod:`~loopcheck.trace.cli`     - the click command.

Importing ``loopcheck.trace.cli`` (the command's registration) does not import torch; the
command imports :mod:`~loopcheck.trace.run` when it runs.
"""

#: The rule codes the watcher checks at runtime (the rule families above). The static rules
#: added later (LC106, LC107, LC303, LC504, LC505, LC701, LC702, LC801, LC802, LC901) have
#: their evidence in ``loopcheck verify`` but no runtime check in ``trace`` yet: their static
#: findings are reported as not observed, with a note that says so.
WATCHED_CODES = frozenset({
    "LC101", "LC102", "LC103", "LC104", "LC105",
    "LC201", "LC202", "LC203",
    "LC301", "LC302",
    "LC401",
    "LC501", "LC502", "LC503",
    "LC601", "LC602", "LC603", "LC604", "LC605",
})
