"""``--executor`` and ``--ray-address`` on the command line: refusals with their exit class."""

from __future__ import annotations

import socket
import sys

import pytest

from vitrine._cli import main


def run(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_ray_address_without_the_ray_executor_is_refused(capsys, tmp_path):
    code, _, err = run(
        ["--all", "--ray-address", "127.0.0.1:6379", "--output", str(tmp_path)], capsys
    )
    assert code == 2
    assert "--ray-address names the cluster for --executor ray" in err
    assert not list(tmp_path.iterdir())


def test_the_ray_executor_without_ray_names_the_install_command(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    code, _, err = run(["--all", "--executor", "ray", "--output", str(tmp_path)], capsys)
    assert code == 2
    assert "pip install 'vitrine[ray]'" in err
    assert not list(tmp_path.iterdir())


def test_a_ray_address_where_no_cluster_answers_is_an_infrastructure_failure(capsys, tmp_path):
    pytest.importorskip("ray")
    address = f"127.0.0.1:{_closed_port()}"
    argv = ["--all", "--executor", "ray", "--ray-address", address, "--output", str(tmp_path)]
    code, _, err = run(argv, capsys)
    assert code == 4
    assert f"no Ray cluster answers at '{address}'" in err
    assert "Traceback" not in err
    assert not list(tmp_path.glob("runs/*"))
