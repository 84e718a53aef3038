"""Paths named by environment variables are checked as command-line paths are.

A store root, a cache folder or a model file named in the environment that no file system
accepts (a name over 255 bytes, a whole path over 4096, a NUL) is refused with exit 2 and one
sentence naming the variable, before anything uses it, never with a traceback.
"""

from __future__ import annotations

import pytest

from vitrine._cli import main
from vitrine._commandline import PATH_VARIABLES, environment_path_problem
from vitrine.errors import UsageError
from vitrine.store._naming import cache_dir, resolve_root

TOO_LONG_NAME = "/tmp/" + "a" * 300
TOO_LONG_PATH = "/tmp/" + "/".join(["b" * 200] * 25)


@pytest.mark.parametrize("name", PATH_VARIABLES)
@pytest.mark.parametrize(
    ("value", "why"),
    [
        (TOO_LONG_NAME, "a path component is 300 bytes long, over the 255-byte limit"),
        (TOO_LONG_PATH, f"the path is {len(TOO_LONG_PATH)} bytes long, over the 4096-byte limit"),
    ],
)
def test_a_command_refuses_an_unusable_path_in_the_environment(
    name, value, why, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv(name, value)
    assert main(["runs", "list", "--output", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith(f"vitrine: error: {name} cannot name a file or folder: {why}")
    assert len(line) < 400  # the value is named, not echoed whole


def test_a_nul_in_a_path_variable_is_refused():
    # A process environment cannot hold a NUL, but a mapping handed to the check can.
    problem = environment_path_problem(environ={"VITRINE_HOME": "/tmp/a\x00b"})
    assert problem == "VITRINE_HOME cannot name a file or folder: " + (
        "a path cannot contain a NUL character"
    )


def test_the_api_refuses_an_unusable_store_or_cache_path_in_the_environment(monkeypatch):
    monkeypatch.setenv("VITRINE_HOME", TOO_LONG_NAME)
    with pytest.raises(UsageError, match=r"^VITRINE_HOME cannot name a file or folder"):
        resolve_root()
    monkeypatch.delenv("VITRINE_HOME")
    monkeypatch.setenv("VITRINE_CACHE_DIR", TOO_LONG_NAME)
    with pytest.raises(UsageError, match=r"^VITRINE_CACHE_DIR cannot name a file or folder"):
        cache_dir("templates")


def test_usable_paths_in_the_environment_are_used(tmp_path, monkeypatch):
    monkeypatch.setenv("VITRINE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("VITRINE_CACHE_DIR", "~/cache")
    assert resolve_root() == tmp_path / "home"
    assert cache_dir("models").parts[-2:] == ("cache", "models")
    assert "~" not in str(cache_dir("models"))
