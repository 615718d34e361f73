"""The array driver's kernels by slot (kernels/array_kernels.py): a table's op and kind kernels made when the table is,
a row whose kernel is missing or unknown refused with a clear error (in a subprocess: a miss would call address 0),
and the warm-up making every one."""

import subprocess
import sys

import numpy as np

import tape
from tape.kernels import _array_driver as driver
from tape.kernels import array_kernels
from tape.kernels.ops import EXACT, LOOPED, OPCODE, PAIRED, RULED
from tape.records import array_records
from tape.sweeps import compiled


def test_a_table_makes_the_kernels_of_its_ops_on_first_use(monkeypatch):
    """A program of an op whose kernels were never made gets them when its tables are (forward: values, back: sends),
    and its gradient is arccosh's (1 / sqrt(x^2 - 1), by hand)."""
    code = OPCODE["arccosh"]
    for slot in (driver.VALUES + code, driver.SENDS + code):
        array_kernels._made.pop(slot, None)
        driver.KERNELS[slot] = 0
    monkeypatch.setattr(compiled, "ready", lambda s, runs: True)
    monkeypatch.setattr(array_records, "SMALL", 1)  # (64 elements: array records)
    x = np.linspace(1.5, 4.0, 64)
    F = tape.trace(lambda x: (np.arccosh(x) * x).sum(), x)
    value, grad = F.value_and_grad(x)
    for slot in (driver.VALUES + code, driver.SENDS + code):
        assert slot in array_kernels._made and driver.KERNELS[slot] == array_kernels._made[slot].address != 0
    assert np.isclose(value, (np.log(x + np.sqrt(x * x - 1.0)) * x).sum(), rtol=1e-14)
    assert np.allclose(grad, np.log(x + np.sqrt(x * x - 1.0)) + x / np.sqrt(x * x - 1.0), rtol=1e-14, atol=0)


REFUSED = """
import numpy as np
from tape.kernels import _array_driver as d, array_kernels
from tape.kernels.ops import OPCODE

def row(kind, op):
    t = np.zeros((1, d.WIDTH), np.int64)
    t[0, d.KIND], t[0, d.OP], t[0, d.SIZE], t[0, d.NIN] = kind, op, 4, 1
    t[0, d.SHAPE:d.SHAPE + 4] = 1, 1, 1, 4
    t[0, d.OUT_STRIDES + 3] = t[0, d.VIEWS + d.STRIDES + 3] = 1
    t[0, d.OUT], t[0, d.VIEWS + d.WANT] = 4, 1
    return t

code = OPCODE["arccosh"]
d.KERNELS[d.VALUES + code] = d.KERNELS[d.SENDS + code] = 0  # (never made in this process)
aval, aadj, stamp, scratch = np.ones(8), np.ones(8), np.ones(1, np.uint32), np.zeros((4, 8))
cases = {"missing": (d.ELEMENTWISE, code), "unknown op": (d.ELEMENTWISE, 10 ** 6), "negative op": (d.LINED, -1000),
         "op -5": (d.ELEMENTWISE, -5), "op -14": (d.LINED, -14), "unknown kind": (42, 0), "kind 0": (0, 0)}
for name, (kind, op) in cases.items():
    for back in (False, True):
        try:
            if back:
                d.reverse(row(kind, op), aval, aadj, stamp, 1, 1, scratch, True)
            else:
                d.forward(row(kind, op), aval, scratch)
            print(name, back, "ran")
        except (RuntimeError, ValueError) as error:
            print(name, back, type(error).__name__, "compiled array table" in str(error))
    try:
        array_kernels.ready(row(kind, op), False)
        print(name, "made")
    except ValueError as error:
        print(name, "made", "ValueError", "no kernel" in str(error))
"""


def test_a_row_without_its_kernel_is_refused_not_called():
    """The driver refuses a row whose kernel is not made (RuntimeError) or that names no op or kind (ValueError), both
    ways, and array_kernels refuses to make a kernel no slot holds (ValueError), in a subprocess."""
    result = subprocess.run([sys.executable, "-c", REFUSED], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    got = result.stdout.split("\n")
    expected = ["missing False RuntimeError True", "missing True RuntimeError True"]
    refused = ("unknown op", "negative op", "op -5", "op -14", "unknown kind", "kind 0")
    for name in refused:
        expected += [f"{name} False ValueError True", f"{name} True ValueError True"]
    expected += [f"{name} made ValueError True" for name in refused]
    assert set(expected) <= set(got) and "missing made" in got, result.stdout + result.stderr


def test_a_table_needs_the_summed_back_kernel_only_where_a_row_sends_to_a_view_not_laid_out_as_its_output():
    """SUMMED (an elementwise row's contribution summed back over a view's broadcast axes) is needed back, not
    forward, by a row whose wanted view's strides differ from its output's (a broadcast or strided view), not by one
    whose views are laid out as the output, nor for a view not wanted or past the row's inputs."""
    t = np.zeros((1, driver.WIDTH), np.int64)
    t[0, driver.KIND], t[0, driver.OP], t[0, driver.SIZE], t[0, driver.NIN] = driver.ELEMENTWISE, OPCODE["mul"], 8, 2
    t[0, driver.SHAPE:driver.SHAPE + 4] = 1, 1, 2, 4
    for f in (driver.OUT_STRIDES, driver.VIEWS + driver.STRIDES, driver.VIEWS + driver.VIEW + driver.STRIDES):
        t[0, f + 2:f + 4] = 4, 1
    t[0, driver.VIEWS + driver.WANT] = t[0, driver.VIEWS + driver.VIEW + driver.WANT] = 1
    assert driver.SUMMED not in array_kernels.needed(t, True)
    t[0, driver.VIEWS + driver.VIEW + driver.STRIDES + 2] = 0  # view 1 broadcast along axis 2 (a row of 4)
    assert driver.SUMMED in array_kernels.needed(t, True) and driver.SUMMED not in array_kernels.needed(t, False)
    t[0, driver.VIEWS + driver.VIEW + driver.WANT] = 0  # not wanted
    assert driver.SUMMED not in array_kernels.needed(t, True)
    t[0, driver.VIEWS + driver.VIEW + driver.WANT], t[0, driver.NIN] = 1, 1  # past a unary row's input
    assert driver.SUMMED not in array_kernels.needed(t, True)
    t[0, driver.VIEWS + driver.STRIDES + 3] = 2  # view 0 strided (u[::2])
    assert driver.SUMMED in array_kernels.needed(t, True)
    t[0, driver.KIND], t[0, driver.OP], t[0, driver.NIN] = driver.SELECT, 1, 2  # a select's branch (view 1), laid
    t[0, driver.VIEWS + driver.WANT] = 0  # out as the output, and its condition strided: no sum back
    t[0, driver.VIEWS + driver.VIEW + driver.STRIDES + 2] = 4
    assert array_kernels.needed(t, True) == {driver.BACK + driver.SELECT}
    t[0, driver.VIEWS + driver.VIEW + driver.STRIDES + 2] = 0  # the branch broadcast along axis 2
    assert array_kernels.needed(t, True) == {driver.BACK + driver.SELECT, driver.SUMMED}
    assert array_kernels.needed(t, False) == {driver.SELECT}


def test_warm_makes_every_kernel():
    """``python -m tape warmup``'s compiled.warm makes the kernel of every slot that holds one: both of every
    elementwise op the driver runs (a comparison's values), both of every row kind."""
    compiled.warm()
    made = [slot for slot in range(driver.SLOTS) if driver.KERNELS[slot] != 0]
    assert made == array_kernels.every()
    ops = [OPCODE[name] for name in (*EXACT, *RULED, *LOOPED, *PAIRED)]
    kinds = (driver.SUM, driver.MATMUL, driver.COPY, driver.LOGSUMEXP, driver.LINED, driver.SELECT)
    compares = [OPCODE[name] for name in ("lt", "le", "eq", "ne")]  # (values only: a comparison sends nothing)
    assert made == sorted([*kinds, *(driver.BACK + k for k in kinds), driver.SUMMED, *(driver.VALUES + c for c in ops),
                           *(driver.SENDS + c for c in ops), *(driver.VALUES + c for c in compares)])


def test_a_program_whose_kernels_are_not_cached_waits_for_its_payback(monkeypatch):
    """With the drivers ready, a Function whose tables call a kernel neither made nor cached takes the tables only once
    its own sweeps have run PAYBACK seconds (its kernels' compile, as the drivers'), not at once; one whose kernels
    are there takes them at once."""
    slot = driver.VALUES + OPCODE["arccosh"]
    monkeypatch.setattr(compiled._gate, "ready", lambda kernel=None: True)
    monkeypatch.setattr(array_kernels, "_made", {k: v for k, v in array_kernels._made.items() if k != slot})
    monkeypatch.setattr(array_kernels, "wanted", lambda slots: {slot} & set(slots))  # (as if not on disk)
    monkeypatch.setattr(array_records, "SMALL", 1)
    x = np.linspace(1.5, 4.0, 64)
    F, G = (tape.trace(f, x) for f in (lambda x: (np.arccosh(x) * x).sum(), lambda x: (np.sqrt(x) * x).sum()))
    assert not compiled.ready(F, {}) and compiled.ready(G, {})
    F._swept = compiled.PAYBACK
    assert compiled.ready(F, {})
