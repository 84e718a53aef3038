import json

import pytest

from vitrine.store._errors import TamperedRunError, UnsupportedSchemaError
from vitrine.store._receipts import ReceiptStore, new_session_id, sanitize_document


def test_a_receipt_round_trips_and_is_appended_to_the_index(tmp_path):
    store = ReceiptStore(tmp_path)
    first, second = new_session_id(), new_session_id()
    store.write(first, {"plan": "eval01-agent", "exit_code": 4, "exit_reason": "not ready"})
    store.write(second, {"plan": "eval02-workflow", "exit_code": 0, "exit_reason": "ok"})
    data = store.read(first)
    assert data["schema_version"] == 1 and data["session_id"] == first
    entries = store.entries()
    assert [e.session_id for e in entries] == [first, second]
    assert entries[0].outcome == f"live-sessions/{first}/outcome.json"
    assert (tmp_path / entries[1].outcome).is_file()


def test_every_string_is_scrubbed_on_the_way_to_disk(tmp_path):
    store = ReceiptStore(tmp_path)
    sid = new_session_id()
    store.write(
        sid,
        {
            "plan": "p",
            "exit_code": 0,
            "note": "call https://secret.example.net/v1",
            "nested": [{"k": "api_key=sk-abcdefghijklmnopqrstuvwxyz"}],
        },
    )
    text = (tmp_path / "live-sessions" / sid / "outcome.json").read_text()
    assert "secret.example.net" not in text
    assert "sk-abcdefghijklmnopqrstuvwxyz" not in text


def test_only_json_values_enter_a_receipt():
    with pytest.raises(TypeError, match="JSON values only"):
        sanitize_document({"x": object()})
    assert sanitize_document({"n": float("nan")}) == {"n": None}


def test_an_edited_index_is_refused_and_the_next_write_rebuilds_it_from_the_receipts(tmp_path):
    store = ReceiptStore(tmp_path)
    good = new_session_id()
    store.write(good, {"plan": "p", "exit_code": 1})
    index = json.loads(store.index_path.read_text())
    index["sessions"][0]["exit_code"] = 0  # a failed session edited into a pass
    index["sessions"].append({"plan": "no id"})
    store.index_path.write_text(json.dumps(index))
    with pytest.raises(TamperedRunError, match=r"index\.json cannot be trusted: it does not match"):
        store.entries()
    later = new_session_id()
    store.write(later, {"plan": "p", "exit_code": 0})
    entries = store.entries()
    assert [(e.session_id, e.exit_code) for e in entries] == [(good, 1), (later, 0)]


def test_an_unreadable_index_is_refused_and_does_not_block_a_write(tmp_path):
    store = ReceiptStore(tmp_path)
    store.sessions_dir.mkdir(parents=True)
    store.index_path.write_text("{torn")
    with pytest.raises(TamperedRunError, match=r"index\.json cannot be read"):
        store.entries()
    sid = new_session_id()
    store.write(sid, {"plan": "p", "exit_code": 0})
    assert [e.session_id for e in store.entries()] == [sid]


def test_a_receipt_of_an_unknown_schema_version_is_refused(tmp_path):
    store = ReceiptStore(tmp_path)
    sid = new_session_id()
    path = store.write(sid, {"plan": "p", "exit_code": 0})
    data = json.loads(path.read_text())
    data["schema_version"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(UnsupportedSchemaError, match="version 99"):
        store.read(sid)


def test_a_session_id_that_is_not_one_cannot_name_a_path(tmp_path):
    with pytest.raises(ValueError, match="not a session id"):
        ReceiptStore(tmp_path).outcome_path("../escape")
