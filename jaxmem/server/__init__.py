"""``jaxmem server``: a language server for editors (LSP over stdio).

:mod:`jaxmem.server.analysis` checks and fixes a document as ``jaxmem
check`` and ``jaxmem-fix`` would, :mod:`jaxmem.server.text` turns jaxmem's
positions and fixed text into LSP positions and edits, and
:mod:`jaxmem.server.lsp` speaks the protocol (pygls, the ``server`` extra).
"""
