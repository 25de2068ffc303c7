#!/usr/bin/env python3
"""Fuzz the SPIR-V reader and the reflection engine with mutated real blobs.

Takes the committed blobs (spirv/*.spv, or the files/folders given with
--seeds), applies random mutations (truncation, bit flips, word overwrites,
word counts of 0 or past the end, ids past the bound, operands swapped for
other ids, random words after the header, spliced and dropped instructions)
and runs ``parse``, ``capabilities``, ``reflect_module`` and ``binding_usage``
on each.  Allowed outcomes: a result, ``SpirvError`` or ``ReflectError``.
Anything else, or an input running longer than --hang-seconds, is a failure:
the input is written to --failures and the run exits 1.

    python tools/fuzz_spirv.py --count 100000 --seed 1

``mutate`` and ``check_one`` are importable (tests/test_fuzz.py runs a bounded share).
"""

from __future__ import annotations

import argparse
import random
import signal
import struct
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from genspirv.reflect import spirv as sp  # noqa: E402
from genspirv.errors import ReflectError, SpirvError  # noqa: E402
from genspirv.reflect import binding_usage, reflect_module  # noqa: E402

SPECIAL_WORDS = (0, 1, 2, 3, 0xFFFF, 0x10000, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000,
                 sp.MAGIC, 0x00010000)


class Hang(Exception):
    pass


def _words(blob: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(blob) // 4}I", blob[:len(blob) // 4 * 4]))


def _pack(words: list[int]) -> bytes:
    return struct.pack(f"<{len(words)}I", *(w & 0xFFFFFFFF for w in words))


def _instruction_starts(words: list[int]) -> list[int]:
    starts, pos = [], sp.HEADER_WORDS
    while pos < len(words):
        count = words[pos] >> 16
        if count == 0:
            break
        starts.append(pos)
        pos += count
    return starts


def mutate(blob: bytes, rng: random.Random, donors: list[bytes]) -> bytes:
    """One to four random mutations of a valid module."""
    words = _words(blob)
    bound = words[3] if len(words) > 3 else 1
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 4))):
        starts = _instruction_starts(words) or [min(sp.HEADER_WORDS, len(words) - 1)]
        kind = rng.randrange(12)
        if kind == 0 and len(words) > 1:                          # truncate (maybe mid-word)
            cut = rng.randrange(len(words) * 4)
            return _pack(words)[:cut]
        elif kind == 1:                                           # flip bits
            for _ in range(rng.randint(1, 8)):
                i = rng.randrange(len(words))
                words[i] ^= 1 << rng.randrange(32)
        elif kind == 2:                                           # overwrite a word
            i = rng.randrange(len(words))
            words[i] = rng.choice(SPECIAL_WORDS + (rng.getrandbits(32), bound, bound - 1))
        elif kind == 3:                                           # word count 0 / past the end
            i = rng.choice(starts)
            count = rng.choice((0, 1, 0xFFFF, (words[i] >> 16) + 1, (words[i] >> 16) - 1))
            words[i] = ((count & 0xFFFF) << 16) | (words[i] & 0xFFFF)
        elif kind in (4, 5, 6):                                   # operand -> another id
            i = rng.choice(starts)
            count = words[i] >> 16
            if count > 1 and i + count <= len(words):
                j = i + rng.randrange(1, count)
                words[j] = rng.choice((rng.randrange(1, max(bound, 2)), bound, bound + 1, 0))
        elif kind == 7:                                           # opcode -> another opcode
            i = rng.choice(starts)
            op = rng.choice((sp.OP_TYPE_STRUCT, sp.OP_TYPE_ARRAY, sp.OP_TYPE_POINTER,
                             sp.OP_FUNCTION_CALL, sp.OP_ACCESS_CHAIN, sp.OP_LOAD, sp.OP_STORE,
                             sp.OP_PHI, sp.OP_FUNCTION, sp.OP_FUNCTION_END, sp.OP_DECORATE,
                             sp.OP_SPEC_CONSTANT, sp.OP_CONSTANT, sp.OP_ENTRY_POINT,
                             sp.OP_EXECUTION_MODE, sp.OP_VARIABLE, rng.randrange(0x10000)))
            words[i] = (words[i] & 0xFFFF0000) | op
        elif kind == 8:                                           # random words after header
            tail = [rng.getrandbits(32) for _ in range(rng.randint(1, 64))]
            return _pack(words[:sp.HEADER_WORDS] + tail)
        elif kind == 9 and len(starts) > 2:                       # drop an instruction
            k = rng.randrange(len(starts) - 1)
            del words[starts[k]:starts[k + 1]]
        elif kind == 10 and len(starts) > 2:                      # duplicate an instruction
            k = rng.randrange(len(starts) - 1)
            at = rng.choice(starts)
            words[at:at] = words[starts[k]:starts[k + 1]]
        elif kind == 11 and donors:                               # splice another module
            other = _words(rng.choice(donors))
            ostarts = _instruction_starts(other)
            if len(ostarts) > 2:
                k = rng.randrange(len(ostarts) - 1)
                at = rng.choice(starts)
                words[at:at] = other[ostarts[k]:ostarts[min(k + rng.randint(1, 8),
                                                             len(ostarts) - 1)]]
    return _pack(words)


def check_one(data: bytes) -> str:
    """'ok', 'spirv' or 'reflect'; any other exception escapes."""
    try:
        sp.parse(data)
        sp.capabilities(data)
        for info in reflect_module(data):
            binding_usage(data, info.entry_point)
        return "ok"
    except SpirvError as exc:
        if exc.offset is None:
            raise AssertionError(f"SpirvError without a word offset: {exc}") from exc
        return "spirv"
    except ReflectError:
        return "reflect"


def seed_blobs(paths: list[Path]) -> list[bytes]:
    blobs = []
    for p in paths:
        files = sorted(p.rglob("*.spv")) if p.is_dir() else [p]
        blobs += [f.read_bytes() for f in files]
    return blobs


def corpus_blobs() -> list[bytes]:
    """The edge-case corpus (images, acceleration structures, LocalSizeId...), compiled."""
    sys.path.insert(0, str(ROOT / "tests"))
    from corpus import tools
    return [tools.corpus_blob(p) for p in tools.corpus_files()]


def _on_alarm(signum, _frame):
    raise Hang()


def run(seeds: list[bytes], count: int, seed: int, hang_seconds: float = 5.0,
        failures: Path | None = None) -> dict:
    """Fuzz ``count`` inputs; returns the tally. Raises on the first real failure."""
    rng = random.Random(seed)
    tally = {"ok": 0, "spirv": 0, "reflect": 0}
    slowest = 0.0
    start = time.perf_counter()
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        for n in range(count):
            data = mutate(rng.choice(seeds), rng, seeds)
            t0 = time.perf_counter()
            signal.setitimer(signal.ITIMER_REAL, hang_seconds)
            try:
                tally[check_one(data)] += 1
            except BaseException as exc:
                signal.setitimer(signal.ITIMER_REAL, 0)
                if failures is not None:
                    failures.mkdir(parents=True, exist_ok=True)
                    (failures / f"input-{seed}-{n}.spv").write_bytes(data)
                what = "hang" if isinstance(exc, Hang) else type(exc).__name__
                raise AssertionError(f"input {n} (seed {seed}): {what}\n"
                                     + traceback.format_exc()) from exc
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            slowest = max(slowest, time.perf_counter() - t0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    return {"inputs": count, **tally, "seconds": round(time.perf_counter() - start, 1),
            "slowest_input_ms": round(slowest * 1000, 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seeds", type=Path, nargs="*", default=[ROOT / "spirv"],
                    help="blobs or folders of blobs to mutate (default: spirv/)")
    ap.add_argument("--no-corpus", dest="corpus", action="store_false",
                    help="leave out the edge-case corpus of tests/corpus (compiled here)")
    ap.add_argument("--hang-seconds", type=float, default=5.0)
    ap.add_argument("--failures", type=Path, default=Path("fuzz-failures"))
    args = ap.parse_args(argv)
    seeds = seed_blobs(args.seeds)
    if args.corpus:
        seeds += corpus_blobs()
    if not seeds:
        print("fuzz_spirv: no seed blobs found", file=sys.stderr)
        return 2
    try:
        result = run(seeds, args.count, args.seed, args.hang_seconds, args.failures)
    except AssertionError as exc:
        print(f"fuzz_spirv: FAILED: {exc}", file=sys.stderr)
        return 1
    print(f"fuzz_spirv: {len(seeds)} seed blobs, " +
          ", ".join(f"{k} {v}" for k, v in result.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
