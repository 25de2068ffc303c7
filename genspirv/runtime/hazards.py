"""Hazard tracking: which accesses need a barrier before them. No Vulkan here.

Takes a stream of ``Access`` records (memory object, byte range, read or write,
pipeline stage) in command order and gives, for each one, either ``None`` (no
barrier needed) or a ``Barrier`` describing the stages and access kinds the
barrier must cover. The device turns a ``Barrier`` into one global
``VkMemoryBarrier`` and records it before the access.

Rules (docs/RULES.md#access-and-hazard-rules): the tracker holds the byte ranges read and
written since the last recorded barrier. An access with reads R and writes W
is a hazard iff R overlaps a pending write (RAW), or W overlaps a pending write
(WAW) or a pending read (WAR). Overlap means same memory object and
intersecting ``[offset, offset + size)``. Only a recorded barrier clears the
pending sets: not a flush, a submit or a fence wait, because none of those is
a memory dependency between two commands on the device.

Policies: ``smart`` reports exactly the hazards; ``always`` asks for a barrier
before every access while anything is pending; ``none`` (tests only) never
does, to prove the tests can see a missing barrier.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from enum import Enum
from typing import Optional


class _Name(str, Enum):
    """A closed set of names that are also the strings people write ("smart",
    "RAW"): a member equals, hashes and prints as its string."""

    __str__ = str.__str__
    __format__ = str.__format__


class Stage(_Name):
    """Where an access happens: the tracker's and the barriers' stages."""

    COMPUTE = "compute"
    TRANSFER = "transfer"
    HOST = "host"


class HazardKind(_Name):
    """Read after write, write after write, write after read."""

    RAW = "RAW"
    WAW = "WAW"
    WAR = "WAR"


class BarrierPolicy(_Name):
    """When the tracker asks for a barrier (``GENSPIRV_BARRIERS``)."""

    SMART = "smart"       # exactly on a hazard
    ALWAYS = "always"     # before every access while anything is pending
    NONE = "none"         # never (tests only: proves a missing barrier is seen)


POLICIES = tuple(p.value for p in BarrierPolicy)


@dataclass(frozen=True)
class Range:
    """Bytes ``[offset, offset + size)`` of one memory object (any hashable key)."""

    memory: object
    offset: int
    size: int

    @property
    def end(self) -> int:
        return self.offset + self.size

    def overlaps(self, other: "Range") -> bool:
        return (self.memory == other.memory and self.offset < other.end
                and other.offset < self.end)


@dataclass(frozen=True)
class Access:
    """One command's memory use: the ranges it reads and writes, in one stage."""

    stage: Stage                    # a Stage, or its name ("compute"), made a Stage here
    reads: tuple[Range, ...] = ()
    writes: tuple[Range, ...] = ()
    # The non-empty ranges as (memory, lo, hi), made once: the tracker meets the
    # same Access at every dispatch of a cached plan.
    read_spans: tuple = field(init=False, repr=False, compare=False)
    write_spans: tuple = field(init=False, repr=False, compare=False)
    stage_bit: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        bit = _STAGE_BITS.get(self.stage)
        if bit is None:
            from ..errors import GenspirvError
            raise GenspirvError(f"unknown access stage {self.stage!r} (known: {', '.join(_STAGE_BITS)})")
        if self.stage.__class__ is not Stage:
            object.__setattr__(self, "stage", Stage(self.stage))
        object.__setattr__(self, "read_spans", _spans(self.reads))
        object.__setattr__(self, "write_spans", _spans(self.writes))
        object.__setattr__(self, "stage_bit", bit)


# The tracker keeps the stages with pending reads or writes as bit masks.
_STAGE_BITS = {Stage.COMPUTE: 1, Stage.TRANSFER: 2, Stage.HOST: 4}
_STAGE_SETS = tuple(frozenset(s for s, bit in _STAGE_BITS.items() if mask & bit) for mask in range(8))


def _spans(ranges) -> tuple:
    return tuple((r.memory, r.offset, r.offset + r.size) for r in ranges if r.size > 0)


@dataclass(frozen=True)
class Barrier:
    """What one global memory barrier must cover.

    ``src_*``: everything pending (the barrier clears it all, so all of it must
    be in the first scope). ``dst_stages``: every stage the runtime uses on
    the device plus the new access's own, because an access after the barrier
    finds nothing pending and gets no barrier of its own.
    """

    src_stages: frozenset[Stage]
    src_writes: frozenset[Stage]    # stages whose writes must be made available
    dst_stages: frozenset[Stage]
    dst_reads: frozenset[Stage]     # stages whose reads must see them
    dst_writes: frozenset[Stage]
    kinds: frozenset[HazardKind]    # empty for policy "always"


def access_of(entry, ranges, stage: Stage = Stage.COMPUTE) -> Access:
    """The access a dispatch makes: binding *i* reads ``ranges[i]`` if bit *i* of
    ``entry.readable_mask`` is set, writes it if bit *i* of ``writable_mask`` is.

    ``entry`` is anything with the manifest's two masks (a manifest entry, a
    ``ShaderInfo``, a loaded kernel); ``ranges`` the bound ranges in binding
    order. The one place the manifest's masks become an ``Access``.
    """
    readable, writable = entry.readable_mask, entry.writable_mask
    reads, writes = [], []
    for i, r in enumerate(ranges):       # one pass: a new plan's cost at every new view
        if readable >> i & 1:
            reads.append(r)
        if writable >> i & 1:
            writes.append(r)
    return Access(stage, tuple(reads), tuple(writes))


def merge_accesses(accesses) -> tuple[Access, ...]:
    """The bytes ``accesses`` read and write, as one ``Access`` per stage with each
    memory object's ranges merged: the same hazards against any pending state
    (each check is a union over ranges) and the same pending state once recorded."""
    by_stage: dict[Stage, tuple[dict, dict]] = {}
    for a in accesses:
        reads, writes = by_stage.setdefault(a.stage, ({}, {}))
        for sets, spans in ((reads, a.read_spans), (writes, a.write_spans)):
            for memory, lo, hi in spans:
                s = sets.get(memory)
                if s is None:
                    s = sets[memory] = _RangeSet()
                s.add(lo, hi)
    return tuple(Access(stage, _ranges(reads), _ranges(writes))
                 for stage, (reads, writes) in by_stage.items())


def _ranges(sets: dict) -> tuple[Range, ...]:
    return tuple(Range(memory, lo, hi - lo) for memory, s in sets.items()
                 for lo, hi in zip(s.starts, s.ends))


DEVICE_STAGES = frozenset({Stage.COMPUTE, Stage.TRANSFER})
_NO_KINDS: frozenset[HazardKind] = frozenset()
# hazards() answers with one of these eight, indexed by the bits RAW 4, WAW 2, WAR 1.
_KINDS = tuple(frozenset(k for k, bit in ((HazardKind.RAW, 4), (HazardKind.WAW, 2), (HazardKind.WAR, 1))
                         if i & bit)
               for i in range(8))
_BARRIERS: dict[tuple, Barrier] = {}
_HOST = 4
_NOTHING_PENDING = (None, False)
# Answers a tracker remembers (HazardTracker._memo); past this it starts afresh.
MAX_MEMO = 1 << 15
_SKIPPED = (None, True)


class _RangeSet:
    """Disjoint, sorted, merged intervals of one memory object.

    The tracker keeps a memory object's pending bytes as a plain ``(lo, hi)``
    tuple while they are one interval (nearly always) and as a ``_RangeSet``
    from the first gap on."""

    __slots__ = ("starts", "ends")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def overlaps(self, lo: int, hi: int) -> bool:
        # The last interval starting before hi is the only candidate; disjoint
        # and sorted means earlier ones end before it starts.
        i = bisect_left(self.starts, hi) - 1
        return i >= 0 and self.ends[i] > lo

    def add(self, lo: int, hi: int) -> None:
        # Ends are sorted too (disjoint intervals): [i, j) are the intervals that
        # overlap or touch [lo, hi), replaced by their union.
        starts, ends = self.starts, self.ends
        i = bisect_left(ends, lo)
        if i == len(ends):          # past every interval (and the first one)
            starts.append(lo)
            ends.append(hi)
            return
        j = bisect_right(starts, hi)
        if j == i + 1:              # one interval met: widen it in place
            if lo < starts[i]:
                starts[i] = lo
            if hi > ends[i]:
                ends[i] = hi
        elif i == j:
            starts.insert(i, lo)
            ends.insert(i, hi)
        else:
            starts[i:j] = [min(lo, starts[i])]
            ends[i:j] = [max(hi, ends[j - 1])]

    def __bool__(self) -> bool:
        return bool(self.starts)


class HazardTracker:
    """Pending reads and writes since the last barrier, per memory object."""

    def __init__(self, policy: str = BarrierPolicy.SMART) -> None:
        self._policy = check_policy(policy)
        self._reads: dict[object, _RangeSet] = {}
        self._writes: dict[object, _RangeSet] = {}
        self._read_stages = 0           # bit mask (_STAGE_BITS) of stages with pending reads
        self._write_stages = 0          # ... and with pending writes
        # Decisions remembered. A step meets the same Access objects (its dispatch plans')
        # in the same order from the same pending state, step after step: the answer to
        # an access depends only on that state, so it is worked out once. The state is
        # named by a node: 0 is nothing pending, _first[id(a)] is ``a`` alone pending
        # (after a barrier before it), and every other node is one step of one path from
        # those (an access answered, or one added by add_pending); None is a state no
        # path names (after _forget), until the next barrier. _memo[(node, id(a))] =
        # (answer, next node, a): ``a`` is kept so its id names it while the entry lives.
        self._node: Optional[int] = 0
        self._memo: dict[tuple[int, int], tuple] = {}
        self._first: dict[int, tuple[int, Access]] = {}
        self._by_policy: dict[BarrierPolicy, tuple[dict, dict]] = {}   # the other policies' _memo, _first
        self._nodes = 0
        # Accesses answered from _memo and not yet added to _reads / _writes: added
        # (in order) before anything else reads the pending state.
        self._unapplied: list[Access] = []

    @property
    def policy(self) -> BarrierPolicy:
        return self._policy

    @policy.setter
    def policy(self, policy: str) -> None:
        # Each policy keeps its answers: a program (or a benchmark) that alternates
        # policies finds its steps remembered when it comes back to one.
        policy = check_policy(policy)
        self._apply()
        self._by_policy[self._policy] = (self._memo, self._first)
        self._memo, self._first = self._by_policy.pop(policy, None) or ({}, {})
        self._policy = policy
        self._node = None           # the pending state has no name in this policy's paths

    # -- queries --------------------------------------------------------------

    @property
    def pending(self) -> bool:
        if self._unapplied:
            self._apply()
        return bool(self._read_stages or self._write_stages)

    def hazards(self, access: Access) -> frozenset[str]:
        """The hazard kinds ``access`` has against what is pending."""
        if self._unapplied:
            self._apply()
        writes, reads = self._writes, self._reads
        raw = waw = war = 0
        if writes:
            for memory, lo, hi in access.read_spans:
                s = writes.get(memory)
                if s is not None and (s[0] < hi and lo < s[1] if s.__class__ is tuple
                                      else s.overlaps(lo, hi)):
                    raw = 4
                    break
        for memory, lo, hi in access.write_spans:
            if not waw:
                s = writes.get(memory)
                if s is not None and (s[0] < hi and lo < s[1] if s.__class__ is tuple
                                      else s.overlaps(lo, hi)):
                    waw = 2
            if not war:
                s = reads.get(memory)
                if s is not None and (s[0] < hi and lo < s[1] if s.__class__ is tuple
                                      else s.overlaps(lo, hi)):
                    war = 1
        return _KINDS[raw | waw | war]

    # -- the one entry point the device uses ----------------------------------

    def access(self, access: Access) -> tuple[Optional[Barrier], bool]:
        """Decide for one access, then record it as pending.

        Returns ``(barrier, skipped)``: ``barrier`` to record before the access
        (the pending sets are then cleared first), or None; ``skipped`` is True
        when something was pending and no barrier was needed — a barrier the
        policy ``always`` would have emitted.
        """
        node = self._node
        if node is not None:
            known = self._memo.get((node, id(access)))
            if known is not None:
                result, self._node, _ = known
                if result[0] is not None:       # a barrier: ``access`` alone is pending after it
                    self._reads.clear()
                    self._writes.clear()
                    self._read_stages = self._write_stages = 0
                    self._unapplied.clear()
                self._unapplied.append(access)
                return result
        if self._unapplied:
            self._apply()
        result = self._decide(access)
        if result[0] is not None or node == 0:
            first = self._first.get(id(access))
            if first is None:
                self._nodes += 1
                first = self._first[id(access)] = (self._nodes, access)
            after = first[0]
        elif node is not None:
            self._nodes += 1
            after = self._nodes
        else:
            return result
        if node is not None:
            if len(self._memo) >= MAX_MEMO:
                self._forget()
                return result
            self._memo[(node, id(access))] = (result, after, access)
        self._node = after
        return result

    def _decide(self, access: Access) -> tuple[Optional[Barrier], bool]:
        """``access``'s answer worked out from the pending sets, which it then joins.

        Called only where no remembered answer fits (a step met for the first time), so
        it asks ``hazards`` and records through ``_record`` like any other caller."""
        kinds = None                    # None: no barrier
        if not (self._read_stages or self._write_stages):
            result = _NOTHING_PENDING
        else:
            result = _SKIPPED
            if self._policy is BarrierPolicy.ALWAYS:
                kinds = _NO_KINDS
            elif self._policy is BarrierPolicy.SMART or access.stage_bit == _HOST:
                # Host reads of mapped memory are never left unsynchronised,
                # even under "none": that policy exists to test device hazards.
                kinds = self.hazards(access) or None
        if kinds is not None:
            # The barrier clears everything pending; the access is then recorded alone.
            result = (self._barrier_for(access, kinds), False)
            self._reads.clear()
            self._writes.clear()
            self._read_stages = self._write_stages = 0
        self._record(access)
        return result

    def barrier_all(self) -> Optional[Barrier]:
        """A barrier ordering everything pending before everything after, or None."""
        if self._unapplied:
            self._apply()
        if not self.pending:
            return None
        key = (self._read_stages, self._write_stages)
        b = _BARRIERS.get(key)
        if b is None:
            b = _BARRIERS[key] = Barrier(src_stages=_STAGE_SETS[self._read_stages | self._write_stages],
                                         src_writes=_STAGE_SETS[self._write_stages],
                                         dst_stages=DEVICE_STAGES, dst_reads=DEVICE_STAGES,
                                         dst_writes=DEVICE_STAGES, kinds=_NO_KINDS)
        self.clear()
        return b

    def add_pending(self, access: Access) -> None:
        """Record an access ordered by other means (its own barriers) as pending."""
        node = self._node
        if node is not None and len(self._memo) < MAX_MEMO:
            # A step of its own in the paths of _memo, keyed by ~id (ids are positive).
            known = self._memo.get((node, ~id(access)))
            if known is None:
                self._nodes += 1
                known = self._memo[(node, ~id(access))] = (None, self._nodes, access)
            self._node = known[1]
            self._unapplied.append(access)
            return
        if self._unapplied:
            self._apply()
        self._record(access)
        self._node = None           # a state no path of answers names

    def clear(self) -> None:
        """Forget everything pending: call only when a barrier has been recorded."""
        self._reads.clear()
        self._writes.clear()
        self._read_stages = self._write_stages = 0
        self._unapplied.clear()
        self._node = 0

    def _apply(self) -> None:
        """Add the accesses answered from memory to the pending sets."""
        unapplied, self._unapplied = self._unapplied, []
        for a in unapplied:
            self._record(a)

    def _forget(self) -> None:
        """Drop the policy's remembered answers (there are too many of them)."""
        self._memo.clear()
        self._first.clear()
        self._node = None

    # -- internals ------------------------------------------------------------

    def _barrier_for(self, access: Access, kinds: frozenset[str]) -> Barrier:
        # A barrier is a function of these four small values: each distinct one is
        # built once, and the device can keep its Vulkan form beside it.
        key = (self._read_stages, self._write_stages, access.stage, kinds)
        b = _BARRIERS.get(key)
        if b is None:
            reads, writes = _STAGE_SETS[self._read_stages], _STAGE_SETS[self._write_stages]
            dst = DEVICE_STAGES | {access.stage}
            b = _BARRIERS[key] = Barrier(src_stages=reads | writes, src_writes=writes,
                                         dst_stages=dst, dst_reads=dst, dst_writes=DEVICE_STAGES,
                                         kinds=kinds)
        return b

    def _record(self, access: Access) -> None:
        spans = access.read_spans
        if spans:
            sets = self._reads
            for memory, lo, hi in spans:
                s = sets.get(memory)
                if s is None:
                    sets[memory] = (lo, hi)
                elif s.__class__ is tuple:
                    if lo < s[0] or hi > s[1]:          # else already covered
                        _widen(sets, memory, s, lo, hi)
                else:
                    s.add(lo, hi)
            self._read_stages |= access.stage_bit
        spans = access.write_spans
        if spans:
            sets = self._writes
            for memory, lo, hi in spans:
                s = sets.get(memory)
                if s is None:
                    sets[memory] = (lo, hi)
                elif s.__class__ is tuple:
                    if lo < s[0] or hi > s[1]:          # else already covered
                        _widen(sets, memory, s, lo, hi)
                else:
                    s.add(lo, hi)
            self._write_stages |= access.stage_bit


def _widen(sets: dict, memory, pending: tuple[int, int], lo: int, hi: int) -> None:
    """Add [lo, hi) to a memory object's one pending interval: still one interval
    if they overlap or touch, else a ``_RangeSet`` of both."""
    a, b = pending
    if lo <= b and a <= hi:
        if lo < a or hi > b:
            sets[memory] = (lo if lo < a else a, hi if hi > b else b)   # min, max without the calls
        return
    s = sets[memory] = _RangeSet()
    s.add(a, b)
    s.add(lo, hi)


def check_policy(policy: str) -> BarrierPolicy:
    """``policy`` (a BarrierPolicy or its name) as a BarrierPolicy; refused if unknown."""
    try:
        return BarrierPolicy(policy)
    except ValueError:
        from ..errors import GenspirvError
        raise GenspirvError(f"unknown barrier policy {policy!r} (known: {', '.join(POLICIES)})") from None
