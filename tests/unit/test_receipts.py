import json

import pytest

from vitrine.store._errors import UnsupportedSchemaError
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


def test_the_index_reader_skips_damaged_entries_and_a_new_write_keeps_the_good_ones(tmp_path):
    store = ReceiptStore(tmp_path)
    good = new_session_id()
    store.write(good, {"plan": "p", "exit_code": 0})
    index = json.loads(store.index_path.read_text())
    index["sessions"].append({"plan": "no id"})
    index["sessions"].append("not an object")
    store.index_path.write_text(json.dumps(index))
    assert [e.session_id for e in store.entries()] == [good]
    later = new_session_id()
    store.write(later, {"plan": "p", "exit_code": 1})
    assert [e.session_id for e in store.entries()] == [good, later]


def test_an_unreadable_index_shows_no_entries_and_does_not_block_a_write(tmp_path):
    store = ReceiptStore(tmp_path)
    store.sessions_dir.mkdir(parents=True)
    store.index_path.write_text("{torn")
    assert store.entries() == []
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
