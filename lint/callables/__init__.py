"""Stage 2, what is jitted and how it is called: a module's imports (``imports``), constant
donation specs (``constants``), the jit/pmap/nnx/equinox API as tables (``jit_api``,
``donate_modes``), every definition form (``definitions`` walks the scopes, one ``forms_*``
module per form) and signatures with the mapping of a call's arguments to parameters
(``signatures``)."""
