"""The command line (``loopcheck``, :mod:`.commands`): its output formats (:mod:`.reporters`),
the worker processes that check many files (:mod:`.runner`), and the flake8 plugin
(:mod:`.flake8_plugin`), loopcheck's other command-line front end."""
