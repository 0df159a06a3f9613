"""Patching a module's attributes for a block, also when the program imports it later."""

import sys

from jaxmem.runtime_check.jit_patch import patched_attributes


def test_two_blocks_patch_one_module_imported_inside_both(tmp_path, monkeypatch):
    # confirm patches flax.nnx twice (nnx.jit, and nnx.split/nnx.state); each block's hook
    # must run once the module is imported, and neither may ask the other without end
    (tmp_path / "late_module.py").write_text("def jit(f):\n    return f\n\ndef split(x):\n    return x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "late_module", raising=False)
    tag = lambda label: lambda original: lambda *args: (label, original(*args))
    with patched_attributes([("late_module", "jit", tag("jit"))]):
        with patched_attributes([("late_module", "split", tag("split"))]):
            import late_module

            assert late_module.jit(1) == ("jit", 1)
            assert late_module.split(2) == ("split", 2)
        assert late_module.split(2) == 2
    assert late_module.jit(1) == 1
    assert not any(type(finder).__name__ == "_AfterImport" for finder in sys.meta_path)
