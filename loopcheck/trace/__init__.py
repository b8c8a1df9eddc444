"""``loopcheck trace``: watch the user's own training run and report the loop bugs it shows.

The one loopcheck command that runs user code. The program runs in-process, unchanged, under
runtime hooks built on the ``verify`` probes; each bug seen is reported with the static rule's
code at the user's line, and the static findings of the files it went through are marked
confirmed or not observed.

* :mod:`loopcheck.trace.target`     - the ``-- python train.py ARGS`` / ``-m module`` command line;
* :mod:`loopcheck.trace.sites`      - which frames are the user's, and the call span there;
* :mod:`loopcheck.trace.watch`      - the watcher: hooks and per-optimizer state machines;
* :mod:`loopcheck.trace.holders`, :mod:`loopcheck.trace.codesearch` - who keeps a loss alive,
  which line replaced a model (only once a symptom is seen);
* :mod:`loopcheck.trace.run`        - runs the program under the watcher (``runpy``);
* :mod:`loopcheck.trace.report`     - findings, static confirmation, output formats;
* :mod:`loopcheck.trace.cli`        - the click command.

Only ``run``, ``watch``, ``holders`` import torch; importing ``loopcheck.trace.cli`` does not.
"""
