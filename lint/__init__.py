"""Static donation analysis: libcst only, never imports or runs the code it reads.

The stages, in the order a file goes through them (each hands the next plain data):

1. ``syntax``: which files and statements matter, parsing, traversal, positions;
2. ``callables``: imports, jitted definitions in every form, signatures, call-to-parameter maps;
3. ``values``: flow and liveness in a scope, provenance, usefulness, library call tables;
4. ``join``: per-file facts (cached), then every file's calls meet every file's definitions;

then ``rules`` (one module per JXM code) turn the join's verdicts into findings.
``engine`` runs stages 1-3 on one file and the rules on one file's facts;
``flake8_plugin`` adapts it to flake8.
"""
