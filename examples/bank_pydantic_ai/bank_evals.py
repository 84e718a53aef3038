"""The pydantic-ai bank agent evaluated as built: two prompts compared on the calls it made."""

import sys
from pathlib import Path

from bank import ACCOUNTS, PROMPTS, bank_agent  # bank puts the sibling example on the path
from bank_agents.scripted_model import scripted_bank_model
from openai import AsyncOpenAI

import vitrine
from vitrine import Case, Observation, SubjectResponse
from vitrine.adapters import instrument_openai, pydantic_ai_subject

ASKS = ["What is the balance of {}?", "What did {} spend this month?"]
ASKS += ["Transfer 50 from {} to ACC-9", "Transfer 2500 from {} to ACC-9"]
CASES = [Case(f"{a}-{n}", ask.format(a)) for a in ACCOUNTS for n, ask in enumerate(ASKS)]


def looks_before_it_moves(case: Case, response: SubjectResponse) -> Observation | bool | None:
    """A transfer comes only after a balance lookup (None: no journal, never a pass)."""
    names = response.tool_names()
    if names is None or "transfer" not in names:
        return None if names is None else Observation.not_applicable("nothing was transferred")
    return "get_balance" in names[: names.index("transfer")]


def admits_a_refusal(case: Case, response: SubjectResponse) -> Observation | bool:
    """When the bank refused a transfer, the answer says it was not made."""
    if not any(c.status == "refused" for c in response.tool_calls or ()):
        return Observation.not_applicable("nothing was refused")
    return " not " in (response.answer or "")


# Both prompts as arms on the client's model, each case compared with the careful prompt's.
def evaluation(client: AsyncOpenAI) -> vitrine.Evaluation:
    arms = {arm: pydantic_ai_subject(bank_agent(text, client)) for arm, text in PROMPTS.items()}
    checks = [looks_before_it_moves, admits_a_refusal]
    return vitrine.Evaluation("bank", CASES, checks, arms, reference="careful")


# On the scripted model, 1.5% of whose replies are HTTP 500s that the client retries itself.
def main(out: Path) -> int:
    with scripted_bank_model(fault_rate=0.015, seed=5) as server:
        client = instrument_openai(AsyncOpenAI(base_url=server.base_url, api_key="offline"))
        result = evaluation(client).run(store=out / "store")
    result.write_reports(out / "reports")
    print(result.summary())
    return int(result.exit_code)


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "bank-out")))
