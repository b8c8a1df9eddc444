from loopcheck.server.lsp import serve

serve()
