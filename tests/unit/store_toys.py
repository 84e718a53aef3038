"""The one-case toy benchmark the store tests seal, resume and tamper with."""

from vitrine import BenchmarkDefinition, Case, ChanceFloor, Observation, admit, check

FLOOR = ChanceFloor.not_derivable("a toy predicate has no random-draw population")


@check("answered")
def answered(case, response):
    return Observation.measured(1.0 if response.answer else 0.0, bool(response.answer))


def toy_definition(key: str) -> BenchmarkDefinition:
    return BenchmarkDefinition(key, "1.0.0", [Case("a", "x")], [admit(answered, FLOOR)])
