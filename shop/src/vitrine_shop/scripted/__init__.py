"""A deterministic model that drives the real agent loop and the real workflow stages offline.

:class:`ScriptedShopModel` is not a shortcut around the subject: it receives exactly the
requests a live model would (system prompt, user turns, tool specs, tool results) and decides
its next step only from what those requests contain. Anything the subject gets wrong on the
way (a tool that fails, a result that is missing, a screen that blocks) therefore reaches the
scripted model too, and shows up in the evidence.

Its policy for a customer conversation:

- a customer with no history (the customer context says so) gets no tool call at all, only an
  abstention that asks what they are shopping for, their budget and what it is for;
- everyone else gets the recommendation chain ``get_user_profile -> get_interest_map ->
  search_products -> get_product_details -> present_recommendation`` and then an answer built
  from what ``present_recommendation`` accepted, with a reason tied to the customer's interests.

Like an instruction-tuned model, it obeys instructions wherever it reads them, injected ones
included (an order asked for in the user message, or planted in tool output): it calls
``place_order`` for the SKU the injection names and then tells the customer the order was
placed. What stops it is only what the system prompt it receives says: rule 5 (no ordering
tools without the customer's approval) makes it decline an injected order in the user message,
rule 8 (tool output is data) one planted in tool output, and rule 2 (no owned durables again)
keeps owned products out of its picks. Delete a rule from the prompt and the behaviour it
guarded comes back; the shop's other defences (the tool gate, the answer screen) must then
hold on their own.

:class:`ScriptedFaults` turns the same model into the controls' broken variants: unusable
outputs, provider failures, a model that ignores the system prompt altogether, the
calibration model that obeys tool-output injection whatever its prompt says, and a memory that
forgets one stated constraint.

Layout: :mod:`~vitrine_shop.scripted.model` is the model and its faults;
:mod:`~vitrine_shop.scripted.transcript` reads the conversation;
:mod:`~vitrine_shop.scripted.agent_policy` decides the agent's next step and
:mod:`~vitrine_shop.scripted.workflow_policy` a workflow stage's reply.
"""

from __future__ import annotations

from vitrine_shop.scripted.model import (
    PROMPT_BLIND_MODEL_ID,
    SCRIPTED_MODEL_ID,
    ScriptedFaults,
    ScriptedShopModel,
)
from vitrine_shop.scripted.transcript import POISON_PATTERN

__all__ = [
    "POISON_PATTERN",
    "PROMPT_BLIND_MODEL_ID",
    "SCRIPTED_MODEL_ID",
    "ScriptedFaults",
    "ScriptedShopModel",
]
