"""The system user an embedded PostgreSQL runs as under root: a concurrent creation is success."""

import subprocess

import pytest

from vitrine.errors import DatabaseUnavailable
from vitrine.rag import _database


@pytest.fixture
def as_root_without_the_user(monkeypatch):
    import pwd

    monkeypatch.setattr(_database.os, "geteuid", lambda: 0)
    monkeypatch.setattr(_database.platform, "system", lambda: "Linux")

    def missing(name):
        raise KeyError(name)

    monkeypatch.setattr(pwd, "getpwnam", missing)
    calls: list[list[str]] = []

    def answer(status: int, stderr: str = ""):
        def run(args, **kwargs):
            calls.append(list(args))
            return subprocess.CompletedProcess(args, status, "", stderr)

        monkeypatch.setattr(_database.subprocess, "run", run)

    return answer, calls


def test_a_user_another_process_just_created_is_not_an_error(as_root_without_the_user):
    answer, calls = as_root_without_the_user
    answer(9, "useradd: user 'pgserver' already exists")
    _database.ensure_system_user()
    assert calls == [["useradd", "-s", "/bin/bash", "pgserver"]]


def test_any_other_useradd_failure_names_the_user_and_the_status(as_root_without_the_user):
    answer, _ = as_root_without_the_user
    answer(1, "useradd: cannot lock /etc/passwd")
    with pytest.raises(DatabaseUnavailable, match=r"'pgserver'.*exited 1.*cannot lock"):
        _database.ensure_system_user()


def test_nothing_is_created_when_not_root(monkeypatch, as_root_without_the_user):
    answer, calls = as_root_without_the_user
    answer(0)
    monkeypatch.setattr(_database.os, "geteuid", lambda: 1000)
    _database.ensure_system_user()
    assert calls == []
