"""The comparison rule: a device decode against the numpy reference.

Takes a ``RunResult`` (``examples.llm.driver``) and the reference ``Decode``
(``examples.llm.model``) fed the device's own tokens; gives a ``Verdict``.

Logits: ``max |gpu - ref| <= tol * max |ref|`` at every step, the reference
being fed the device's own tokens (teacher forcing), so each step compares like
with like. Tokens: the device's token must be the reference's argmax; a
differing token is accepted as a *tie* only when the reference logits of both
tokens are within ``tol * max |ref|`` of each other (then either choice is as
right as float32 can tell), and ties are counted and reported. Default weights
give top-2 gaps far above that tolerance (see ``make_weights``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from . import model as ref
    from .driver import RunResult


@dataclass(frozen=True)
class Verdict:
    max_rel_err: float           # max over steps of max|gpu - ref| / max|ref|
    ties: tuple[int, ...]        # steps where a near-tie was resolved differently
    mismatches: tuple[str, ...]  # what failed, step by step

    @property
    def ok(self) -> bool:
        return not self.mismatches


def compare(run: RunResult, forced: ref.Decode, tol: float) -> Verdict:
    """Check a device decode against the reference fed the device's tokens."""
    import numpy as np
    worst, ties, bad = 0.0, [], []
    for step, (gpu_tok, g, r) in enumerate(zip(run.tokens, run.logits, forced.logits)):
        scale = max(float(np.max(np.abs(r))), 1e-30)
        err = float(np.max(np.abs(g.astype(np.float64) - r))) / scale
        if not math.isfinite(err):
            err = math.inf
        worst = max(worst, err)
        if err > tol:
            bad.append(f"step {step}: logits differ by {err:.3g} x max|logit| (tolerance {tol:g})")
        best = int(np.argmax(r))
        if gpu_tok != best:
            if 0 <= gpu_tok < len(r) and r[best] - r[gpu_tok] <= tol * scale:
                ties.append(step)
            else:
                got = f"{r[gpu_tok]:.6g}" if 0 <= gpu_tok < len(r) else "out of range"
                bad.append(f"step {step}: device chose token {gpu_tok} (reference logit {got}), "
                           f"reference argmax {best} (logit {r[best]:.6g})")
    return Verdict(max_rel_err=worst, ties=tuple(ties), mismatches=tuple(bad))



class Reference:
    """The reference decodes a run is checked against, each computed once.

    ``greedy`` is the reference's own greedy decode; a run that chose other
    tokens is checked against the reference fed those tokens (teacher forcing).
    """

    def __init__(self, weights: "ref.ModelWeights", prompt: Sequence[int], n_tokens: int):
        from . import model as ref

        self.weights, self.prompt, self.n_tokens = weights, tuple(prompt), n_tokens
        self.greedy = ref.greedy_decode(weights, self.prompt, n_tokens)
        self._forced = {self.greedy.tokens: self.greedy}

    def check(self, run: "RunResult", tol: float) -> Verdict:
        from . import model as ref

        forced = self._forced.get(run.tokens)
        if forced is None:
            forced = self._forced[run.tokens] = ref.teacher_forced(self.weights, self.prompt,
                                                                   self.n_tokens, run.tokens)
        return compare(run, forced, tol)
