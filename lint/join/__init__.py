"""Stage 4, the whole project: per-file facts (``facts``, plain data, cached), then the join of
every file's definitions with every file's calls (``checks``) and the jitted state updates no
call reaches (``uncalled``).  The rules (``jaxmem.lint.rules``) read what the join decides."""
