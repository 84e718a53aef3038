"""The subject: a tiny airline customer-service agent with three tools and two policies.

Nothing here knows about vitrine except the response it returns. The tools are plain functions
in ``TOOLS``; the agent calls them through that table, which is the seam a mutant plants into.
"""

from __future__ import annotations

from typing import Any

from vitrine import SubjectResponse, ToolCallRecord
from vitrine.subjects import ToolCallStatus

FLIGHTS = {
    "VA101": {"status": "delayed", "alternative": "VA103"},
    "VA202": {"status": "on time", "alternative": "VA204"},
    "VA303": {"status": "cancelled", "alternative": "VA305"},
}
BOOKINGS = {
    "ABC123": {"flight": "VA101", "fare": "flex"},
    "DEF456": {"flight": "VA202", "fare": "basic"},
    "GHI789": {"flight": "VA303", "fare": "flex"},
    "JKL012": {"flight": "VA303", "fare": "basic"},
}


def find_booking(reference: str) -> dict[str, str]:
    return BOOKINGS[reference]


def flight_status(flight: str) -> str:
    return FLIGHTS[flight]["status"]


def rebook(reference: str, flight: str) -> str:
    if BOOKINGS[reference]["fare"] == "basic":
        raise PermissionError("basic fares cannot be changed")
    return f"{reference} moved to {flight}"


TOOLS: dict[str, Any] = {
    "find_booking": find_booking,
    "flight_status": flight_status,
    "rebook": rebook,
}


def _call(journal: list[ToolCallRecord], name: str, **arguments: str) -> Any:
    try:
        result = TOOLS[name](**arguments)
    except PermissionError as exc:  # the tool said no: a refusal, not a crash
        journal.append(ToolCallRecord(name, arguments, ToolCallStatus.REFUSED, str(exc)))
        return None
    journal.append(ToolCallRecord(name, arguments, ToolCallStatus.OK, str(result)))
    return result


def careful_agent(request: dict[str, str]) -> SubjectResponse:
    """Looks the booking up, checks the flight, and only then answers or rebooks."""
    journal: list[ToolCallRecord] = []
    booking = _call(journal, "find_booking", reference=request["reference"])
    status = _call(journal, "flight_status", flight=booking["flight"])
    answer = f"Flight {booking['flight']} is {status}."
    if request["intent"] == "rebook":
        moved = _call(
            journal,
            "rebook",
            reference=request["reference"],
            flight=FLIGHTS[booking["flight"]]["alternative"],
        )
        answer += f" {moved}." if moved else " Your fare cannot be changed, sorry."
    return SubjectResponse(answer=answer, tool_calls=tuple(journal))


def hasty_agent(request: dict[str, str]) -> SubjectResponse:
    """Answers from memory: every flight is 'on time', and it promises a rebooking blind."""
    answer = "Your flight is on time."
    if request["intent"] == "rebook":
        answer += " Done, you are on the next flight."
    return SubjectResponse(answer=answer, tool_calls=())
