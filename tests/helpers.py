"""Helpers the kernel tests share (tests/ is on sys.path under pytest: ``from helpers import ...``).

``filled_buffer(dev, array)``: a new device buffer holding ``array``;
``empty_buffer(dev, n, dtype)``: one for ``n`` items; ``read_back(dev, buf, n,
dtype)``: its first ``n`` items; ``seeded_normal(seed)``: a function giving
standard-normal arrays of any shape and dtype from that seed, the same ones on
every run. Every buffer is at least 4 bytes (a buffer of 0 bytes is refused).
"""

from __future__ import annotations

import numpy as np


def filled_buffer(dev, array):
    array = np.ascontiguousarray(array)
    buf = dev.buffer(max(array.nbytes, 4))
    dev.upload(buf, array)
    return buf


def empty_buffer(dev, n: int, dtype=np.float32):
    return dev.buffer(max(n * np.dtype(dtype).itemsize, 4))


def read_back(dev, buf, n: int, dtype=np.float32) -> np.ndarray:
    return dev.download(buf, dtype=np.dtype(dtype))[:n]


def seeded_normal(seed: int):
    rng = np.random.default_rng(seed)

    def normal(*shape, dtype=np.float32) -> np.ndarray:
        return rng.standard_normal(shape, dtype=np.float32).astype(dtype)

    return normal
