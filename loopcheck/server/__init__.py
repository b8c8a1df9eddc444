"""The language server (``loopcheck server``, ``python -m loopcheck.server``): :mod:`.lsp` speaks
LSP to the editor, :mod:`.worker` checks one version of a document, :mod:`.documents` keeps a
document's last parse in a chain of processes, :mod:`.reparse` parses only what an edit changed,
and :mod:`.warm` warms the fork server. Needs the ``server`` extra (pygls, lsprotocol)."""
