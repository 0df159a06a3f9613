"""Stage 1, text and trees: which files and statements matter (``relevance``, before any parse),
libcst parsing without per-node validation (``parsing``), fast traversal (``walk``) and
source positions on demand (``positions``)."""
