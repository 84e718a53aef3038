"""The one cost rule: what moves a run onto another cost lane needs ``--confirm-paid``.

A paid model (``--provider`` openai, azure, anthropic), paid embeddings (``vitrine rag
--embedding-mode prod``) and the subject CLI's live embedding flags (``--real-vectors``,
``--rebuild-embeddings``, which the protocol puts in the confirmed lane whatever the embedder
costs) are refused before anything runs unless the operator confirmed. A service the operator
declared free (``--provider local``, ``VITRINE_PROVIDER_COST=free``) is not paid. Every command
asks this function, so the rule and its message are the same everywhere.
"""

from __future__ import annotations

__all__ = ["CONFIRM_FLAG", "confirmation_refusal"]

CONFIRM_FLAG = "--confirm-paid"


def confirmation_refusal(lane: str, *, paid: bool, confirmed: bool) -> str | None:
    """The refusal sentence when ``lane`` (what the run would do, said in full) is paid and
    not confirmed; None when it may run."""
    if paid and not confirmed:
        return f"{lane}; add {CONFIRM_FLAG}"
    return None
