"""Several p-values reported together, and how big a paired difference is.

When a report shows many checks or comparisons at once, the smallest raw p-value among them is
small by chance far more often than its own level says. :func:`holm` adjusts them so that the
family-wise error rate holds (Holm's step-down procedure: uniformly more powerful than
Bonferroni, valid under any dependence), and :func:`benjamini_hochberg` controls the false
discovery rate instead, on request. Both return adjusted p-values in the input order, to be
printed beside the raw ones.

A p-value says whether, not how much. :func:`paired_difference` is the effect size of a paired
comparison of pass/fail cells: the difference of the two arms' pass rates over the same cases,
``(wins - losses) / n``, with Newcombe's hybrid score interval for paired data (Newcombe 1998,
method 10): the two marginal Wilson intervals combined with the pairs' phi correlation, a
positive one corrected by ``n/2`` as Newcombe does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vitrine import _stats as stats

__all__ = ["PairedDifference", "benjamini_hochberg", "holm", "paired_difference"]


def _pvalues(values: Sequence[float]) -> list[float]:
    return [stats._probability(f"p-value {i}", p) for i, p in enumerate(values)]


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values: ``max over j <= i of min(1, (m - j) * p_(j))`` in sorted order."""
    ps = _pvalues(pvalues)
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * ps[index]))
        adjusted[index] = running
    return adjusted


def benjamini_hochberg(pvalues: Sequence[float]) -> list[float]:
    """BH-adjusted p-values: ``min over k >= i of min(1, m * p_(k) / k)`` in sorted order."""
    ps = _pvalues(pvalues)
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    adjusted = [0.0] * m
    running = 1.0
    for rank in range(m - 1, -1, -1):
        index = order[rank]
        running = min(running, m * ps[index] / (rank + 1))
        adjusted[index] = min(1.0, running)
    return adjusted


@dataclass(frozen=True, slots=True)
class PairedDifference:
    """Challenger pass rate minus reference pass rate over the same ``n`` paired cases."""

    both_pass: int
    reference_only: int  # a loss for the challenger
    challenger_only: int  # a win for the challenger
    neither: int
    estimate: float
    lower: float
    upper: float
    confidence: float

    @property
    def n(self) -> int:
        return self.both_pass + self.reference_only + self.challenger_only + self.neither

    def to_dict(self) -> dict[str, Any]:
        return {
            "measure": "difference of paired pass rates (challenger - reference)",
            "interval": "Newcombe hybrid score (method 10)",
            "estimate": self.estimate,
            "lower": self.lower,
            "upper": self.upper,
            "confidence": self.confidence,
            "cells": {
                "both_pass": self.both_pass,
                "reference_only": self.reference_only,
                "challenger_only": self.challenger_only,
                "neither": self.neither,
            },
        }


def paired_difference(
    both_pass: int,
    reference_only: int,
    challenger_only: int,
    neither: int,
    confidence: float = 0.95,
) -> PairedDifference | None:
    """The paired difference and its Newcombe interval; None with no pairs at all."""
    a = stats._count("both_pass", both_pass)
    b = stats._count("reference_only", reference_only)
    c = stats._count("challenger_only", challenger_only)
    d = stats._count("neither", neither)
    n = a + b + c + d
    if n == 0:
        return None
    ref = stats.wilson_interval(a + b, n, confidence)
    chal = stats.wilson_interval(a + c, n, confidence)
    assert ref is not None and chal is not None  # n > 0
    p_ref, p_chal = (a + b) / n, (a + c) / n
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    # Newcombe's corrected phi: a positive association is shrunk by n/2, so that a perfectly
    # concordant small table does not collapse the interval to a point.
    excess = float(a * d - b * c)
    if excess > 0:
        excess = max(0.0, excess - n / 2)
    phi = excess / math.sqrt(margins) if margins else 0.0
    estimate = p_chal - p_ref
    down_chal, up_chal = p_chal - chal.lower, chal.upper - p_chal
    down_ref, up_ref = p_ref - ref.lower, ref.upper - p_ref
    below = math.sqrt(max(0.0, down_chal**2 - 2 * phi * down_chal * up_ref + up_ref**2))
    above = math.sqrt(max(0.0, up_chal**2 - 2 * phi * up_chal * down_ref + down_ref**2))
    return PairedDifference(
        a,
        b,
        c,
        d,
        estimate,
        max(-1.0, estimate - below),
        min(1.0, estimate + above),
        confidence,
    )
