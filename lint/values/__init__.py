"""Stage 3, values and flow inside one scope: reference keys (``refs``), the control-flow graph
with liveness (``flow``), where a donated value comes from (``provenance``), whether an output
can reuse it (``usefulness``, ``output_parts``, ``pallas_aliases``), which entries a helper reads (``key_reads``),
reads that survive donation (``metadata``), what library calls do to buffers (``array_api``) and
whether an nnx object handed to ``nnx.jit`` owns its arrays (``nnx_ownership``)."""
