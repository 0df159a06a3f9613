"""pytest plugin: the ``donation_guard`` fixture.

Registered as the ``pytest11`` entry point ``jaxmem``; usable without it via
``pytest -p jaxmem.runtime_check.pytest_plugin``.  Importing this module
does not import jax, so installing jaxmem without jax leaves pytest working.

::

    def test_train_step_donates(donation_guard):
        donation_guard(train_step, params, opt_state, batch)
"""

from __future__ import annotations

import pytest


@pytest.fixture
def donation_guard():
    """A callable like :func:`jaxmem.runtime_check.assert_donated` that fails the test with the named leaves.

    Skips the test when jax is not installed.
    """
    pytest.importorskip("jax", reason="jaxmem's donation_guard needs jax")
    from jaxmem.runtime_check.guard import DonationNotUsableError, assert_donated

    def guard(fn, *example_args, **options):
        __tracebackhide__ = True
        try:
            return assert_donated(fn, *example_args, **options)
        except DonationNotUsableError as error:
            message = str(error)
        # Failing outside the except block: inside it pytest would also print the
        # chained DonationNotUsableError, i.e. the same message twice.
        pytest.fail(message, pytrace=False)

    return guard
