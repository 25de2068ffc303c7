"""HazardTracker against a brute-force oracle, and its fixed rules. No Vulkan."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genspirv.errors import GenspirvError
from genspirv.runtime.hazards import Access, HazardTracker, Range, merge_accesses


def R(mem, off, size):
    return Range(mem, off, size)


def compute(reads=(), writes=()):
    return Access("compute", tuple(reads), tuple(writes))


# -- the oracle: a list of every pending (range, is_write), checked pair by pair --------

def oracle_kinds(pending, access):
    kinds = set()
    for r in access.reads:
        if any(w and r.size and p.size and r.overlaps(p) for p, w in pending):
            kinds.add("RAW")
    for wr in access.writes:
        if any(w and wr.size and p.size and wr.overlaps(p) for p, w in pending):
            kinds.add("WAW")
        if any(not w and wr.size and p.size and wr.overlaps(p) for p, w in pending):
            kinds.add("WAR")
    return kinds


def run_oracle(accesses):
    """Barrier decisions of the brute-force model, and the kinds found at each."""
    pending, out = [], []
    for a in accesses:
        kinds = oracle_kinds(pending, a)
        out.append(frozenset(kinds))
        if kinds:
            pending = []
        pending += [(r, False) for r in a.reads] + [(w, True) for w in a.writes]
    return out


ranges = st.builds(R, st.sampled_from(["A", "B", "C"]), st.integers(0, 64), st.integers(0, 24))
stage = st.sampled_from(["compute", "transfer"])
accesses = st.builds(Access, stage, st.lists(ranges, max_size=3).map(tuple),
                     st.lists(ranges, max_size=2).map(tuple))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(accesses, min_size=1, max_size=30))
def test_smart_barrier_exactly_when_the_oracle_finds_a_hazard(seq):
    tracker = HazardTracker("smart")
    expected = run_oracle(seq)
    for a, kinds in zip(seq, expected):
        assert tracker.hazards(a) == kinds
        barrier, _ = tracker.access(a)
        assert (barrier is not None) == bool(kinds)
        if barrier is not None:
            assert barrier.kinds == kinds


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(st.lists(accesses, min_size=1, max_size=30))
def test_always_barriers_whenever_anything_is_pending(seq):
    tracker = HazardTracker("always")
    pending = False
    for a in seq:
        barrier, skipped = tracker.access(a)
        assert (barrier is not None) == pending and not skipped
        pending = any(r.size for r in a.reads + a.writes) or (pending and barrier is None)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(st.lists(accesses, min_size=1, max_size=30))
def test_barrier_covers_every_pending_stage_and_write(seq):
    tracker = HazardTracker("smart")
    stages, write_stages = set(), set()
    for a in seq:
        barrier, _ = tracker.access(a)
        if barrier is not None:
            assert barrier.src_stages == frozenset(stages)
            assert barrier.src_writes == frozenset(write_stages)
            assert {"compute", "transfer", a.stage} <= barrier.dst_stages
            stages, write_stages = set(), set()
        stages |= {a.stage} if any(r.size for r in a.reads + a.writes) else set()
        write_stages |= {a.stage} if any(w.size for w in a.writes) else set()


def test_each_hazard_kind():
    t = HazardTracker()
    t.access(compute(writes=[R("A", 0, 16)]))
    assert t.hazards(compute(reads=[R("A", 8, 4)])) == {"RAW"}
    assert t.hazards(compute(writes=[R("A", 15, 1)])) == {"WAW"}
    t.clear()
    t.access(compute(reads=[R("A", 0, 16)]))
    assert t.hazards(compute(writes=[R("A", 0, 1)])) == {"WAR"}
    assert t.hazards(compute(reads=[R("A", 0, 16)])) == set()      # read after read


def test_touching_ranges_do_not_overlap():
    t = HazardTracker()
    t.access(compute(writes=[R("A", 0, 16)]))
    assert t.hazards(compute(reads=[R("A", 16, 16)], writes=[R("A", 32, 4)])) == set()
    assert t.hazards(compute(reads=[R("B", 0, 16)])) == set()      # another memory object


def test_two_disjoint_writers_then_one_reader_of_both():
    t = HazardTracker()
    results = [t.access(compute(writes=[R("A", 0, 256)])),
               t.access(compute(writes=[R("A", 256, 256)])),
               t.access(compute(reads=[R("A", 0, 512)]))]
    assert [(b is not None, s) for b, s in results] == [(False, False), (False, True), (True, False)]


def test_only_a_barrier_clears_pending():
    t = HazardTracker()
    t.access(compute(writes=[R("A", 0, 4)]))
    # Nothing else the device does (flush, submit, fence wait) talks to the tracker;
    # pending state survives until the next barrier.
    assert t.pending
    barrier, _ = t.access(compute(reads=[R("A", 0, 4)]))
    assert barrier is not None and barrier.kinds == {"RAW"}
    assert t.hazards(compute(writes=[R("A", 0, 4)])) == {"WAR"}     # the read is pending now


def test_merged_ranges_still_answer_exactly():
    t = HazardTracker()
    for off in (0, 8, 4, 100):
        t.access(compute(reads=[R("A", off, 4)]))
    assert t.hazards(compute(writes=[R("A", 12, 88)])) == set()
    assert t.hazards(compute(writes=[R("A", 11, 1)])) == {"WAR"}
    assert t.hazards(compute(writes=[R("A", 103, 10)])) == {"WAR"}


def test_policy_none_skips_device_hazards_but_not_host_reads():
    t = HazardTracker("none")
    t.access(Access("transfer", writes=(R("S", 0, 4),)))
    assert t.access(compute(reads=[R("S", 0, 4)])) == (None, True)
    barrier, _ = t.access(Access("host", reads=(R("S", 0, 4),)))
    assert barrier is not None and "host" in barrier.dst_stages


def test_unknown_policy_is_refused():
    with pytest.raises(GenspirvError, match="unknown barrier policy 'sometimes'"):
        HazardTracker("sometimes")


def test_unknown_stage_is_refused():
    with pytest.raises(GenspirvError, match="unknown access stage 'vertex'"):
        Access("vertex", reads=(R("A", 0, 4),))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(accesses, max_size=12), st.lists(accesses, min_size=1, max_size=12),
       st.lists(accesses, min_size=1, max_size=6))
def test_merged_accesses_answer_as_the_accesses_they_merge(pending, captured, probes):
    """A replay graph checks (and leaves pending) its captured accesses merged:
    the same hazards against any pending state, the same pending state after."""
    merged = merge_accesses(captured)
    assert len({a.stage for a in merged}) == len(merged)
    one, other = HazardTracker(), HazardTracker()
    for a in pending:
        one.add_pending(a)
        other.add_pending(a)
    assert (any(one.hazards(a) for a in captured)
            == any(one.hazards(a) for a in merged))
    for a in captured:
        one.add_pending(a)
    for a in merged:
        other.add_pending(a)
    assert one.pending == other.pending
    for p in probes:
        assert one.hazards(p) == other.hazards(p)
    assert one.barrier_all() == other.barrier_all()


def test_merging_drops_nothing():
    """Negative control for the property above: merging only the first access
    misses a hazard the second one has."""
    a, b = compute(writes=[R("A", 0, 4)]), compute(writes=[R("B", 0, 4)])
    t = HazardTracker()
    t.add_pending(compute(reads=[R("B", 0, 4)]))
    assert not any(t.hazards(x) for x in merge_accesses([a]))
    assert any(t.hazards(x) for x in merge_accesses([a, b])) == bool(t.hazards(b)) is True


# -- remembered answers: a step met again is answered from memory, the same way ------


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(accesses, min_size=1, max_size=8), st.integers(2, 5))
def test_a_repeated_step_gets_the_oracles_answers_every_time(step, repeats):
    """The same Access objects in the same order, step after step (as a cached plan's
    accesses come back): every answer is still the oracle's."""
    tracker = HazardTracker("smart")
    seq = step * repeats
    for a, kinds in zip(seq, run_oracle(seq)):
        barrier, _ = tracker.access(a)
        assert (barrier is not None) == bool(kinds)
        if barrier is not None:
            assert barrier.kinds == kinds


def test_a_repeated_step_is_answered_from_memory(monkeypatch):
    """Counted at the one place answers are worked out: after the first step, none is
    (negative control: a tracker that forgets before each access works every one out)."""
    x, t1, t2, t3 = "x", "t1", "t2", "t3"
    step = [compute([R(x, 0, 64)], [R(t1, 0, 64)]), compute([R(x, 0, 64)], [R(t2, 0, 64)]),
            compute([R(t1, 0, 64), R(t2, 0, 64)], [R(t3, 0, 64)]),
            compute([R(t3, 0, 64), R(x, 0, 64)], [R(x, 0, 64)])]

    def answers(forget):
        tracker, worked = HazardTracker("smart"), []
        decide = tracker._decide
        monkeypatch.setattr(tracker, "_decide", lambda a: worked.append(a) or decide(a))
        out = []
        for _ in range(5):
            for a in step:
                if forget:
                    tracker._forget()
                barrier, skipped = tracker.access(a)
                out.append((barrier and barrier.kinds, skipped))
        return out, len(worked)

    remembered, worked = answers(forget=False)
    forgetting, worked_out = answers(forget=True)
    assert remembered == forgetting
    assert worked_out == 20 and worked <= 8
    assert sum(1 for b, _ in remembered if b) == 4 * 3 + 2    # RAW/WAR at 3 of 4 after the first


def test_a_policy_keeps_its_answers_while_another_one_runs(monkeypatch):
    """Alternating policies (as the decode benchmark does): back under ``smart``, its step
    is answered from memory with the same answers (negative control: forgetting on the
    switch works the step out again)."""
    step = [compute([R("x", 0, 64)], [R("t", 0, 64)]), compute([R("t", 0, 64)], [R("y", 0, 64)]),
            compute([R("y", 0, 64)], [R("x", 0, 64)])]

    def run(forget_on_switch):
        tracker, worked, out = HazardTracker("smart"), [], []
        decide = tracker._decide
        monkeypatch.setattr(tracker, "_decide", lambda a: worked.append(a) or decide(a))
        for policy in ("smart", "always", "smart", "always", "smart"):
            tracker.policy = policy
            if forget_on_switch:
                tracker._forget()
            before = len(worked)
            for _ in range(2):
                for a in step:
                    barrier, skipped = tracker.access(a)
                    out.append((policy, barrier and barrier.kinds, skipped))
            out.append((policy, "worked out", len(worked) - before))
        return out

    remembered, forgetting = run(False), run(True)
    answers = [o for o in remembered if o[1] != "worked out"]
    assert answers == [o for o in forgetting if o[1] != "worked out"]
    worked = [o[2] for o in remembered if o[1] == "worked out"]
    # Only the first access after a switch is worked out: the pending state left by the
    # other policy has no name among this one's answers until the next barrier.
    assert worked[2:] == [1, 1, 1] and min(worked[:2]) >= len(step)
    assert all(o[2] >= len(step) for o in forgetting if o[1] == "worked out")


ops = st.lists(st.one_of(st.tuples(st.just("access"), st.integers(0, 3)),
                        st.tuples(st.just("add_pending"), st.integers(0, 3)),
                        st.tuples(st.just("hazards"), st.integers(0, 3)),
                        st.tuples(st.sampled_from(["barrier_all", "clear", "pending"]), st.just(0)),
                        st.tuples(st.just("policy"), st.sampled_from(["smart", "always", "none"]))),
               min_size=1, max_size=12)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(accesses, min_size=4, max_size=4), ops, st.integers(2, 4))
def test_answers_from_memory_survive_added_pending_policy_changes_and_queries(pool, step, repeats):
    """add_pending, barrier_all, clear, a policy change and the queries between remembered
    answers, a step of them repeated: every answer and query is a forgetting tracker's."""
    results = []
    for forget in (False, True):
        tracker, out = HazardTracker("smart"), []
        for _ in range(repeats):
            for op, arg in step:
                if forget:
                    tracker._forget()
                if op == "access":
                    barrier, skipped = tracker.access(pool[arg])
                    out.append((barrier and (barrier.kinds, barrier.src_stages, barrier.src_writes), skipped))
                elif op == "add_pending":
                    tracker.add_pending(pool[arg])
                elif op == "hazards":
                    out.append(tracker.hazards(pool[arg]))
                elif op == "pending":
                    out.append(tracker.pending)
                elif op == "barrier_all":
                    barrier = tracker.barrier_all()
                    out.append(barrier and (barrier.src_stages, barrier.src_writes))
                elif op == "clear":
                    tracker.clear()
                else:
                    tracker.policy = arg
        for a in pool:                        # the pending state at the end, seen through each
            out.append(tracker.hazards(a))
        results.append(out)
    assert results[0] == results[1]


def test_closed_sets_are_enums_that_read_as_their_names():
    """Stages, hazard kinds and policies are enums; a member equals, hashes and prints
    as the name people write, and an Access made with a name holds the member."""
    from genspirv.runtime.hazards import BarrierPolicy, HazardKind, Stage
    assert Stage("compute") is Stage.COMPUTE and Stage.HOST == "host" and f"{Stage.TRANSFER}" == "transfer"
    assert {Stage.COMPUTE: 1}["compute"] == 1 and str(HazardKind.WAR) == "WAR"
    write, read = Access("compute", writes=(Range(1, 0, 4),)), Access("transfer", reads=(Range(1, 0, 4),))
    assert write.stage is Stage.COMPUTE and read.stage is Stage.TRANSFER
    t = HazardTracker("smart")
    assert t.policy is BarrierPolicy.SMART and t.policy == "smart"
    t.access(write)
    barrier, _ = t.access(read)
    assert barrier.kinds == {"RAW"} == {HazardKind.RAW}
    assert all(type(s) is Stage for s in barrier.src_stages | barrier.dst_stages | barrier.dst_reads)
    t.policy = "always"
    assert t.policy is BarrierPolicy.ALWAYS
    # Negative controls: names outside the sets are refused in one line.
    with pytest.raises(GenspirvError, match="unknown barrier policy 'sometimes' .known: smart, always, none"):
        HazardTracker("sometimes")
    with pytest.raises(GenspirvError, match="unknown access stage 'vertex'"):
        Access("vertex")
