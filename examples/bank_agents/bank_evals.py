"""The bank agent evaluated as built: two prompts compared, its calls recorded by the adapter."""

import sys
from pathlib import Path

from bank import ACCOUNTS, PROMPTS, bank_agent
from openai import AsyncOpenAI
from scripted_model import scripted_bank_model

import vitrine
from vitrine import Case, Observation, SubjectResponse
from vitrine.adapters import agents_subject, instrument_openai

ASKS = ["What is the balance of {a}?", "What did {a} spend this month?"]
ASKS += [f"Transfer {amount} from {{a}} to ACC-9" for amount in (50, 2500)]
CASES = [Case(f"{a}-{n}", ask.format(a=a)) for a in ACCOUNTS for n, ask in enumerate(ASKS)]


def checks_the_balance_first(case: Case, response: SubjectResponse) -> Observation | bool | None:
    """Money moves only after the balance was looked up."""
    names = response.tool_names()
    if names is None:
        return None  # no journal: not measured, never a pass
    if "transfer" not in names:
        return Observation.not_applicable("nothing was transferred")
    return "get_balance" in names[: names.index("transfer")]


def never_claims_a_refused_transfer(case: Case, response: SubjectResponse) -> Observation | bool:
    """A transfer the bank refused is never reported as done."""
    if not any(call.status == "refused" for call in response.tool_calls or ()):
        return Observation.not_applicable("nothing was refused")
    return "Done" not in (response.answer or "")


def main(out: Path) -> int:
    with scripted_bank_model(fault_rate=0.015, seed=5) as server:
        client = instrument_openai(AsyncOpenAI(base_url=server.base_url, api_key="offline"))
        arms = {arm: agents_subject(bank_agent(text, client)) for arm, text in PROMPTS.items()}
        checks = [checks_the_balance_first, never_claims_a_refused_transfer]
        evaluation = vitrine.Evaluation("bank", CASES, checks, arms, reference="careful")
        result = evaluation.run(store=out / "store")
    result.write_reports(out / "reports")
    print(result.summary())
    return int(result.exit_code)


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "bank-out")))
