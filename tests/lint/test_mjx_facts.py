"""The mujoco-mjx entries of ``lint/values/array_api.py`` and
``lint/callables/library_callables.py`` checked under real mujoco-mjx 3.17.0
(JAX implementation, CPU): ``put_model``/``put_data``/``make_data`` make new
buffers, every function of ``MJX_DATA_STEPS`` returns a ``Data`` with the
structure, shapes and dtypes of ``d`` and reuses a donated ``d``, and
``get_data`` keeps nothing of what it reads."""

import glob
import inspect
import os
import warnings

import libcst as cst
import pytest

from jaxmem.lint.callables.imports import ImportTable
from jaxmem.lint.callables.library_callables import library_function, vmapped
from jaxmem.lint.values import array_api
from jaxmem.lint.values.array_api import NEW, READS, call_effect
from jaxmem.lint.values.usefulness import PRESERVED

jax = pytest.importorskip("jax")
np = pytest.importorskip("numpy")
mujoco = pytest.importorskip("mujoco")
mjx = pytest.importorskip("mujoco.mjx")

# A body on a free joint that touches the floor, a hinged arm with a motor, a
# tendon and sensors: every stage of the pipeline has something to compute.
XML = """
<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 .1"/>
    <body name="ball" pos="0 0 .09"><freejoint/><geom size=".1"/><site name="s0"/></body>
    <body name="arm" pos="1 0 1">
      <joint name="hinge" type="hinge" axis="0 1 0" damping=".1"/>
      <geom type="capsule" size=".05 .3" fromto="0 0 0 0 0 -.6"/><site name="s1" pos="0 0 -.6"/>
    </body>
  </worldbody>
  <tendon><spatial name="t"><site site="s0"/><site site="s1"/></spatial></tendon>
  <actuator><motor joint="hinge" gear="2"/></actuator>
  <sensor><jointpos joint="hinge"/><jointvel joint="hinge"/><accelerometer site="s1"/></sensor>
</mujoco>
"""


@pytest.fixture(scope="module")
def model():
    m = mujoco.MjModel.from_xml_string(XML)
    d = mujoco.MjData(m)
    d.qpos[7] = 0.3
    d.ctrl[:] = 0.5
    mujoco.mj_forward(m, d)
    return m, d, mjx.put_model(m)


def _pointers(tree) -> list[int]:
    return [leaf.unsafe_buffer_pointer() for leaf in jax.tree.leaves(tree) if isinstance(leaf, jax.Array) and leaf.size]


def _host_arrays(struct) -> dict[int, object]:
    """The struct's NumPy arrays by address, kept alive by the caller: some
    attributes make a new array each time, whose address a later buffer may reuse."""
    found = {}
    for name in dir(struct):
        try:
            value = getattr(struct, name)
        except Exception:  # some attributes raise when read on this struct
            continue
        if isinstance(value, np.ndarray) and value.size:
            found[value.__array_interface__["data"][0]] = value
    return found


def _call(source: str) -> cst.Call:
    return cst.parse_expression(source)


def test_the_table_lists_every_mjx_function_of_m_and_d_that_returns_data():
    steps = set()
    for name, function in vars(mjx).items():
        if not inspect.isfunction(function):
            continue
        signature = inspect.signature(function)
        if list(signature.parameters) == ["m", "d"] and signature.return_annotation is mjx.Data:
            steps.add(name)
    assert {name.rpartition(".")[2] for name in array_api.MJX_DATA_STEPS} == steps


@pytest.mark.parametrize("name", sorted(array_api.MJX_DATA_STEPS))
def test_each_step_returns_the_structure_of_d_and_reuses_it_when_donated(model, name):
    m, d, mx = model
    function = getattr(mjx, name.rpartition(".")[2])
    dx = mjx.put_data(m, d)
    before = [(leaf.shape, leaf.dtype) for leaf in jax.tree.leaves(dx)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Some donated buffers were not usable" would fail here
        out = jax.jit(function, donate_argnums=1)(mx, dx)
    assert jax.tree.structure(out) == jax.tree.structure(dx)
    assert [(leaf.shape, leaf.dtype) for leaf in jax.tree.leaves(out)] == before
    assert any(leaf.is_deleted() for leaf in jax.tree.leaves(dx))  # the donated inputs it reads are reused
    assert not any(leaf.is_deleted() for leaf in jax.tree.leaves(mx))
    contract = library_function(name)
    assert [p.name for p in contract.signature.params] == ["m", "d"]
    assert dict(contract.outputs)["d"] == PRESERVED and contract.parts == (frozenset({"d"}),)


def test_the_makers_share_no_buffer_with_their_arguments_or_each_other():
    root = os.path.join(os.path.dirname(mjx.__file__), "test_data")
    paths = [os.path.join(root, name) for name in ("pendula.xml", "convex.xml", "tendon/tendon.xml")]
    assert all(os.path.exists(path) for path in paths), glob.glob(root + "/*")
    for path in paths:
        m = mujoco.MjModel.from_xml_path(path)
        d = mujoco.MjData(m)
        mujoco.mj_forward(m, d)
        mx = mjx.put_model(m)
        host = _host_arrays(m) | _host_arrays(d)
        for made in (mx, mjx.put_data(m, d), mjx.make_data(m), mjx.make_data(mx)):
            pointers = _pointers(made)
            assert len(pointers) == len(set(pointers)), path  # no buffer twice within it
            assert not set(pointers) & host.keys(), path
            if made is not mx:
                assert not set(pointers) & set(_pointers(mx)), path


def test_the_makers_are_new_only_with_the_default_implementation():
    for source in ("mjx.put_data(m, d)", "mjx.put_data(m, d, device=dev)", "mjx.put_model(m)",
                   "mjx.make_data(m)", "mjx.make_data(mx, njmax=8)"):
        call = _call(source)
        qualified = "mujoco.mjx." + call.func.attr.value
        assert call_effect(qualified, call=call) == NEW, source
    for source in ("mjx.put_data(m, d, impl='warp')", "mjx.put_data(m, d, dev, 'cpp')", "mjx.put_model(m, dev)",
                   "mjx.make_data(m, **options)", "mjx.put_data(*pair)"):
        call = _call(source)
        assert call_effect("mujoco.mjx." + call.func.attr.value, call=call) is None, source
    assert call_effect("mujoco.mjx.put_data") is None  # without the call, unknown


def test_get_data_only_reads_the_device_data(model):
    m, d, mx = model
    dx = jax.jit(mjx.step)(mx, mjx.put_data(m, d))
    host = mjx.get_data(m, dx)
    assert not _host_arrays(host).keys() & set(_pointers(dx))
    np.testing.assert_allclose(host.qpos, np.asarray(dx.qpos), rtol=1e-6)
    out = jax.jit(mjx.step, donate_argnums=1)(mx, dx)  # the device data is still donatable
    assert any(leaf.is_deleted() for leaf in jax.tree.leaves(dx))
    assert np.all(np.isfinite(host.qpos)) and np.all(np.isfinite(np.asarray(out.qpos)))
    assert call_effect("mujoco.mjx.get_data") == READS


@pytest.mark.parametrize("imports, expression", [
    ("from mujoco import mjx", "mjx.step"),
    ("import mujoco.mjx as mjx", "mjx.forward"),
    ("from mujoco.mjx import euler", "euler"),
    ("import mujoco", "mujoco.mjx.kinematics"),
])
def test_each_import_spelling_resolves_to_the_contract(imports, expression):
    table = ImportTable.from_module(cst.parse_module(imports + "\n"))
    qualified = table.resolve(cst.parse_expression(expression))
    assert qualified in array_api.MJX_DATA_STEPS
    module, _, attribute = qualified.rpartition(".")
    assert getattr(__import__(module, fromlist=[attribute]), attribute) is getattr(mjx, attribute)
    assert library_function(qualified) is not None
    assert library_function("mujoco.mjx.ray") is None  # returns distances, not a Data


def test_a_vmapped_step_reuses_the_donated_batch(model):
    m, d, mx = model
    batch = jax.vmap(lambda q: mjx.put_data(m, d).replace(qpos=q))(jax.numpy.ones((4, m.nq)))
    before = [(leaf.shape, leaf.dtype) for leaf in jax.tree.leaves(batch)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = jax.jit(jax.vmap(mjx.step, in_axes=(None, 0)), donate_argnums=1)(mx, batch)
    assert [(leaf.shape, leaf.dtype) for leaf in jax.tree.leaves(out)] == before
    assert any(leaf.is_deleted() for leaf in jax.tree.leaves(batch))
    assert not any(leaf.is_deleted() for leaf in jax.tree.leaves(mx))


@pytest.mark.parametrize("vmap, verdicts", [
    ("jax.vmap(f, in_axes=(None, 0))", {"m": "maybe", "d": PRESERVED}),
    ("jax.vmap(f)", {"m": "maybe", "d": PRESERVED}),
    ("jax.vmap(f, in_axes=0, out_axes=0)", {"m": "maybe", "d": PRESERVED}),
    ("jax.vmap(f, in_axes=(0, None))", {"m": "maybe", "d": "maybe"}),
    ("jax.vmap(f, in_axes=(None, 1))", None),
    ("jax.vmap(f, in_axes=axes)", None),
    ("jax.vmap(f, out_axes=1)", None),
    ("jax.vmap(f, (None, 0))", None),
    ("jax.vmap(f, in_axes=(None, None))", None),
    ("jax.vmap(f, axis_name='batch')", None),
])
def test_vmap_keeps_the_contract_only_for_parameters_mapped_on_axis_0(vmap, verdicts):
    found = vmapped(library_function("mujoco.mjx.step"), cst.parse_expression(vmap))
    assert (dict(found.outputs) if found is not None else None) == verdicts
    if verdicts is not None:
        assert found.parts == (frozenset({"d"} if verdicts["d"] == PRESERVED else ()),)
