"""Every misuse of the runtime's public API is answered in one line.

Each refusal must be a ``GenspirvError`` (a wrong kind of argument an
``ArgumentTypeError``, which is also a ``TypeError``), one line long, naming
the argument (the binding by index and name, the option, the byte sizes) and
what to pass, and must leave ``dev.stats`` as it was (``rt.refused``). Each
case has its negative control: the same call made right goes through (and
computes the right values where it computes anything). Before these checks,
a numpy array where a buffer goes died in the ownership check with
``AttributeError: 'str' object has no attribute 'label'`` (numpy >= 2 arrays
have ``.device == "cpu"``), and a download whose shape did not fit died in
numpy's reshape.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "shaders_rt"))
import rt  # noqa: E402

from genspirv.errors import (  # noqa: E402
    ArgumentTypeError,
    BufferRangeError,
    DispatchError,
    GenspirvError,
)
from genspirv.runtime import Device  # noqa: E402

pytestmark = pytest.mark.skipif(not rt.device_present(), reason="no Vulkan device")

N = 100
ADD_PUSH = struct.pack("<I", N)


def refused(dev, exc_type, *needles, call) -> str:
    """``rt.refused`` (the class, every needle, counters unchanged), and one line."""
    msg = rt.refused(dev, exc_type, *needles, call=call)
    assert "\n" not in msg, f"more than one line: {msg!r}"
    return msg


@pytest.fixture(scope="module")
def dev():
    with Device(manifest=rt.MANIFEST, validation=True) as d:
        yield d
    assert d.validation_messages == []


@pytest.fixture
def abc(dev):
    a, b, c = (dev.buffer(4 * N, name=n) for n in "abc")
    dev.upload(a, np.arange(N, dtype=np.float32))
    dev.upload(b, np.ones(N, np.float32))
    yield a, b, c
    for x in (a, b, c):
        x.destroy()


# -- a numpy array (or anything else) where a buffer goes ------------------------------


def test_an_array_where_a_binding_goes_names_the_binding(dev, abc):
    a, b, c = abc
    x = np.zeros(N, np.float32)
    msg = refused(dev, ArgumentTypeError, "kernel rt_add, binding 2 (CBuf)",
                  "numpy array (float32, shape (100,))",
                  "pass a Buffer from dev.buffer(...) or a view", "dev.upload",
                  call=lambda: dev.dispatch("rt_add", [a, b, x], groups=1, push=ADD_PUSH))
    assert "AttributeError" not in msg
    refused(dev, ArgumentTypeError, "kernel rt_add, binding 0 (ABuf)", "str 'a'",
            call=lambda: dev.dispatch("rt_add", ["a", b, c], groups=1, push=ADD_PUSH))
    with pytest.raises(TypeError):          # also an ordinary TypeError
        dev.dispatch("rt_add", [a, b, x], groups=1, push=ADD_PUSH)
    # Negative control: the same dispatch over buffers runs and adds.
    dev.dispatch("rt_add", [a, b, c], groups=1, push=ADD_PUSH)
    np.testing.assert_array_equal(dev.download(c), np.arange(N, dtype=np.float32) + 1)


def test_an_array_where_a_transfer_buffer_goes(dev, abc):
    a, _, c = abc
    x = np.arange(N, dtype=np.float32)
    refused(dev, ArgumentTypeError, "upload destination", "numpy array", "pass a Buffer",
            call=lambda: dev.upload(x, x))
    refused(dev, ArgumentTypeError, "download source", "numpy array", "pass a Buffer",
            call=lambda: dev.download(x))
    refused(dev, ArgumentTypeError, "copy destination", "numpy array", call=lambda: dev.copy(a, x))
    refused(dev, ArgumentTypeError, "copy source", "list", call=lambda: dev.copy([1, 2], a))
    refused(dev, ArgumentTypeError, "a view needs a Buffer", call=lambda: type(a.view(0, 4))(x, 0, 4))
    dev.upload(c, x)                                   # negative control
    dev.copy(c, a)
    np.testing.assert_array_equal(dev.download(a), x)


# -- downloads whose dtype or shape does not fit ---------------------------------------


def test_a_download_shape_that_does_not_fit_names_both_byte_sizes(dev, abc):
    _, _, c = abc                                       # 400 bytes: 50 float64 items
    dev.upload(c, np.arange(N, dtype=np.float32))
    msg = refused(dev, BufferRangeError, "download of 400 bytes from c", "shape (100,) of float64 is 800 bytes",
                  "pass a shape of 50 items", call=lambda: dev.download(c, dtype="float64", shape=(N,)))
    assert "cannot reshape" not in msg
    refused(dev, BufferRangeError, "shape (3, -1)", "a multiple of 24 bytes",
            call=lambda: dev.download(c, dtype="float64", shape=(3, -1)))
    refused(dev, BufferRangeError, "negative size", call=lambda: dev.download(c, shape=(-2, -50)))
    refused(dev, ArgumentTypeError, "shape must be an int or a tuple of ints, not 'x'",
            call=lambda: dev.download(c, shape="x"))
    refused(dev, ArgumentTypeError, "object has no fixed-size items",
            call=lambda: dev.download(c, dtype=object))
    refused(dev, ArgumentTypeError, "'nope' is not a numpy dtype", call=lambda: dev.download(c, dtype="nope"))
    # Negative controls: shapes that fit, with -1 and numpy integers.
    assert dev.download(c, dtype="float64", shape=(50,)).shape == (50,)
    assert dev.download(c, shape=(-1, 10)).shape == (10, 10)
    got = dev.download(c, shape=(np.int64(4), 25))
    np.testing.assert_array_equal(got, np.arange(N, dtype=np.float32).reshape(4, 25))


def test_uploads_of_what_has_no_bytes(dev, abc):
    a = abc[0]
    refused(dev, ArgumentTypeError, "upload takes a numpy array or bytes, not list",
            call=lambda: dev.upload(a, [1.0, 2.0]))
    refused(dev, ArgumentTypeError, "array of Python objects",
            call=lambda: dev.upload(a, np.array([1, "x"], dtype=object)))
    refused(dev, BufferRangeError, "upload of 800 bytes into a [0, 400)",
            call=lambda: dev.upload(a, np.zeros(2 * N, np.float32)))
    dev.upload(a, np.full(N, 3.0, np.float32).tobytes())          # negative control
    np.testing.assert_array_equal(dev.download(a), np.full(N, 3.0, np.float32))


# -- wrong types for the dispatch's other arguments ------------------------------------


def test_groups_of_the_wrong_type(dev, abc):
    a, b, c = abc
    for groups in (1.0, "2", (1, 1, 1, 1), None, (1, 2.0), True):
        refused(dev, ArgumentTypeError, "kernel rt_add: groups must be",
                call=lambda: dev.dispatch("rt_add", [a, b, c], groups=groups, push=ADD_PUSH))
    refused(dev, DispatchError, "-1 groups along x; a dispatch needs at least 1",
            call=lambda: dev.dispatch("rt_add", [a, b, c], groups=-1, push=ADD_PUSH))
    before = dev.stats["dispatches"]
    for groups in (np.int64(1), [1, 1, 1], (1,), (np.uint32(1), 1)):     # negative controls
        dev.dispatch("rt_add", [a, b, c], groups=groups, push=ADD_PUSH)
    assert dev.stats["dispatches"] == before + 4


def test_kernel_push_and_spec_of_the_wrong_type(dev, abc):
    a, b, c = abc
    refused(dev, ArgumentTypeError, "dispatch: kernel must be a kernel's name or dev.kernel(...), not int 3",
            call=lambda: dev.dispatch(3, [a, b, c], groups=1, push=ADD_PUSH))
    refused(dev, ArgumentTypeError, "not None",
            call=lambda: dev.dispatch(None, [a, b, c], groups=1, push=ADD_PUSH))
    refused(dev, ArgumentTypeError, "dev.kernel: the kernel's name must be a str",
            call=lambda: dev.kernel(b"rt_add"))
    refused(dev, ArgumentTypeError, "kernel rt_add: push data must be a dict of named members, bytes or a numpy array, not str",
            call=lambda: dev.dispatch("rt_add", [a, b, c], groups=1, push="1"))
    refused(dev, ArgumentTypeError, "kernel rt_add: buffers must be a list in binding order",
            call=lambda: dev.dispatch("rt_add", a, groups=1, push=ADD_PUSH))
    refused(dev, ArgumentTypeError, "kernel rt_spec: spec must be a dict of spec constant name to value",
            call=lambda: dev.kernel("rt_spec", spec=[("COUNT", 1)]))
    assert dev.kernel("rt_spec", spec={"COUNT": 1}).name == "rt_spec"      # negative controls
    dev.dispatch(dev.kernel("rt_add"), (a, b, c), groups=1, push=np.array([N], np.uint32))


# -- buffers and views -----------------------------------------------------------------


def test_buffer_sizes_and_view_ranges(dev):
    refused(dev, ArgumentTypeError, "buffer size must be a positive integer, not str '4'",
            call=lambda: dev.buffer("4"))
    refused(dev, ArgumentTypeError, "not float 4.0", call=lambda: dev.buffer(4.0))
    refused(dev, BufferRangeError, "buffer size must be a positive integer, not -4",
            call=lambda: dev.buffer(-4))
    buf = dev.buffer(np.int64(64), name="w")                 # a numpy integer is an integer
    assert buf.nbytes == 64 and type(buf.nbytes) is int
    refused(dev, ArgumentTypeError, "w: view offset must be a non-negative integer, not float 0.5",
            call=lambda: buf.view(0.5, 4))
    refused(dev, BufferRangeError, "w: view offset must be a non-negative integer, not -4",
            call=lambda: buf.view(-4, 4))
    refused(dev, BufferRangeError, "w: sub-view offset must be a non-negative integer, not -4",
            call=lambda: buf.view(0, 32).view(-4, 8))
    refused(dev, ArgumentTypeError, "sub-view offset and size must be integers",
            call=lambda: buf.view(0, 32).view("0", 8))
    for name, shown in ((None, "buffer#"), ("", "buffer#"), (3, "3")):
        other = dev.buffer(16, name=name)
        assert other.name.startswith(shown)
        other.destroy()
    v = buf.view(np.int64(16), np.uint32(16))                # negative control
    assert (v.offset, v.size) == (16, 16) and type(v.offset) is int
    assert v.view(4, 8).offset == 20
    buf.destroy()


# -- the Device's own options ----------------------------------------------------------


@pytest.mark.parametrize("kwargs, exc, needle", [
    ({"inflight": "2"}, ArgumentTypeError, "inflight must be an integer, 1..4, not str '2'"),
    ({"inflight": 9}, GenspirvError, "inflight must be 1..4, not 9"),
    ({"batch": 2.5}, ArgumentTypeError, "batch size must be an integer, at least 1, not float 2.5"),
    ({"batch": 0}, GenspirvError, "batch size must be at least 1, not 0"),
    ({"device": [0]}, ArgumentTypeError, "device must be an index or a name substring, not list"),
    ({"manifest": 3}, ArgumentTypeError, "manifest must be a path to shaders.json or a Manifest"),
    ({"upload": "fast"}, GenspirvError, "upload must be staged or blocking, not 'fast'"),
    ({"barriers": 3}, GenspirvError, "unknown barrier policy 3 (known: smart, always, none)"),
    ({"transfer_queue": None}, GenspirvError, "transfer_queue must be auto, off or same, not None"),
])
def test_device_options_are_checked(kwargs, exc, needle):
    with pytest.raises(exc) as info:
        Device(**{"manifest": rt.MANIFEST, **kwargs})
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_device_options_that_are_right(dev):
    """The negative control of the options above, and the batch size set later."""
    with Device(manifest=str(rt.MANIFEST), inflight=np.int64(1), batch=3, device=0, upload="blocking",
                barriers="always", transfer_queue="off") as d:
        assert (d.inflight, d.batch_size, d.upload_mode, d.barrier_policy) == (1, 3, "blocking", "always")
    refused(dev, ArgumentTypeError, "batch size must be an integer",
            call=lambda: setattr(dev, "batch_size", "x"))
    refused(dev, GenspirvError, "batch size must be at least 1, not 0",
            call=lambda: setattr(dev, "batch_size", 0))
    saved = dev.batch_size
    dev.batch_size = 7
    assert dev.batch_size == 7
    dev.batch_size = saved


# -- a closed device ------------------------------------------------------------------


def test_a_closed_device_refuses_everything_in_one_line():
    d = Device(manifest=rt.MANIFEST, validation=True)
    y = d.buffer(4 * N)
    with d.record() as g:
        rt.fill(d, y, N, 1.0)
    with d.gpu_timer() as t:
        rt.fill(d, y, N, 2.0)
    d.close()
    calls = {
        "kernel": lambda: d.kernel("rt_fill"), "buffer": lambda: d.buffer(16),
        "dispatch": lambda: rt.fill(d, y, N, 1.0), "upload": lambda: d.upload(y, b"\0" * 4),
        "download": lambda: d.download(y), "copy": lambda: d.copy(y, y),
        "flush": d.flush, "synchronize": d.synchronize, "debug": lambda: d.debug,
        "gpu_busy": d.gpu_busy, "copy_crossover": d.copy_crossover,
        "record": lambda: d.record().__enter__(), "gpu_timer": lambda: d.gpu_timer().__enter__(),
        "run": g.run, "timer": lambda: t.ns,
    }
    for name, call in calls.items():
        with pytest.raises(GenspirvError) as info:
            call()
        msg = str(info.value)
        assert ("closed" in msg or "destroyed" in msg) and "\n" not in msg, f"{name}: {msg}"
    d.close()                     # twice is fine; so are these
    g.destroy()
    y.destroy()
    assert d.stats["dispatches"] == 2 and d.validation_messages == []
