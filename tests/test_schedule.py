"""The reorder pass on synthetic dispatch DAGs (no device).

The oracle here is independent of examples.llm.reorder and of the runtime's tracker: byte sets per memory object,
compared by intersection, and a tracker simulation written from docs/RULES.md#access-and-hazard-rules.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from examples.llm.reorder import count_barriers, dependencies, levels, reorder


@dataclass(frozen=True)
class R:
    memory: str
    offset: int
    size: int

    def bytes(self) -> set[tuple[str, int]]:
        return {(self.memory, b) for b in range(self.offset, self.offset + self.size)}


@dataclass(frozen=True)
class Node:
    reads: tuple[R, ...]
    writes: tuple[R, ...]


def _bytes(ranges) -> set:
    out = set()
    for r in ranges:
        out |= r.bytes()
    return out


def must_follow(earlier: Node, later: Node) -> bool:
    """RAW, WAW or WAR by byte-set intersection."""
    ew, er = _bytes(earlier.writes), _bytes(earlier.reads)
    lw, lr = _bytes(later.writes), _bytes(later.reads)
    return bool(lr & ew or lw & ew or lw & er)


def tracker_barriers(nodes, order) -> int:
    """The tracker as docs/RULES.md#access-and-hazard-rules states it: pending byte sets since the last barrier."""
    reads, writes, barriers = set(), set(), 0
    for j in order:
        r, w = _bytes(nodes[j].reads), _bytes(nodes[j].writes)
        if (r & writes) or (w & writes) or (w & reads):
            barriers += 1
            reads, writes = set(), set()
        reads |= r
        writes |= w
    return barriers


ranges = st.builds(R, memory=st.sampled_from("abc"), offset=st.integers(0, 24),
                   size=st.integers(0, 12))
nodes_st = st.lists(st.builds(Node, reads=st.lists(ranges, max_size=3).map(tuple),
                              writes=st.lists(ranges, max_size=2).map(tuple)),
                    max_size=14)


@settings(max_examples=60, deadline=None)
@given(nodes_st)
def test_levels_respect_every_edge(nodes):
    order = reorder(nodes)
    assert sorted(order) == list(range(len(nodes)))
    position = {j: p for p, j in enumerate(order)}
    for j in range(len(nodes)):
        for i in range(j):
            if must_follow(nodes[i], nodes[j]):
                assert position[i] < position[j], (i, j)


@settings(max_examples=60, deadline=None)
@given(nodes_st)
def test_levels_are_independent_and_asap(nodes):
    grouped = levels(nodes)
    level_of = {j: k for k, g in enumerate(grouped) for j in g}
    for group in grouped:
        assert group == sorted(group)          # program order kept inside a level
        for a in group:
            for b in group:
                if a < b:
                    assert not must_follow(nodes[a], nodes[b])
    # ASAP: every node above level 0 depends on some node exactly one level lower.
    for j, k in level_of.items():
        if k > 0:
            assert any(must_follow(nodes[i], nodes[j]) and level_of[i] == k - 1 for i in range(j))


@settings(max_examples=60, deadline=None)
@given(nodes_st)
def test_levelled_order_needs_fewest_barriers(nodes):
    order = reorder(nodes)
    n_levels = len(levels(nodes))
    levelled = tracker_barriers(nodes, order)
    assert levelled == max(n_levels - 1, 0)
    assert levelled <= tracker_barriers(nodes, range(len(nodes)))
    # The runtime's tracker agrees with the byte-set one.
    assert count_barriers(nodes, order) == levelled
    assert count_barriers(nodes) == tracker_barriers(nodes, range(len(nodes)))


def test_dependencies_known_dag():
    x, h, q, k, v = (R(m, 0, 16) for m in "xhqkv")
    seq = [
        Node(reads=(x,), writes=(h,)),      # 0 norm
        Node(reads=(h,), writes=(q,)),      # 1 q proj
        Node(reads=(q,), writes=(R("qr", 0, 16),)),   # 2 rope q
        Node(reads=(h,), writes=(k,)),      # 3 k proj
        Node(reads=(k,), writes=(R("kc", 0, 16),)),   # 4 rope k
        Node(reads=(h,), writes=(v,)),      # 5 v proj
        Node(reads=(x,), writes=()),        # 6 reads x only: independent of all
        Node(reads=(), writes=(x,)),        # 7 WAR on x with 0 and 6
    ]
    assert dependencies(seq) == [frozenset(), {0}, {1}, {0}, {3}, {0}, frozenset(), {0, 6}]
    assert levels(seq) == [[0, 6], [1, 3, 5, 7], [2, 4]]
    assert count_barriers(seq) == 4          # before 1, 2, 4 and 7 (WAR with 6)
    assert count_barriers(seq, reorder(seq)) == 2


def test_empty_and_disjoint_ranges():
    assert reorder([]) == [] and levels([]) == []
    # Adjacent but not overlapping ranges of one buffer are independent.
    a = Node(reads=(), writes=(R("m", 0, 8),))
    b = Node(reads=(R("m", 8, 8),), writes=(R("m", 16, 4),))
    assert levels([a, b]) == [[0, 1]]
    # A zero-size range touches nothing.
    c = Node(reads=(R("m", 0, 0),), writes=())
    assert levels([a, c]) == [[0, 1]]
