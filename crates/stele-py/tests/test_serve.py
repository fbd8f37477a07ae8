"""stele.serve and ``python -m stele serve``: the web view from Python."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

import stele


def make_db(path: Path) -> None:
    with stele.open(path) as db:
        people = db["people"]
        for i in range(30):
            people[f"p{i:02}"] = {"name": f"person {i}", "tags": ["a", "b"][: i % 3]}


def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_serve_without_blocking_answers_and_stops(tmp_path: Path) -> None:
    make_db(tmp_path / "db")
    with stele.serve(tmp_path / "db", port=0, block=False) as server:
        assert server.url.startswith("http://127.0.0.1:")
        assert server.port > 0
        status, body = fetch(server.url + ".json")
        assert status == 200
        names = [c["name"] for c in json.loads(body)["collections"]]
        assert names == ["people"]
        status, body = fetch(server.url + "c/people/d/p07.json")
        assert json.loads(body)["document"] == {"name": "person 7", "tags": ["a"]}
        status, body = fetch(server.url + "c/people/d/nobody.json")
        assert status == 404
        assert json.loads(body)["error"] == "no-document"
    assert "stopped" in repr(server)
    # Refused, or (a connection the closing listener had queued) reset: never answered.
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        urllib.request.urlopen(server.url, timeout=5)


def test_serve_errors(tmp_path: Path) -> None:
    with pytest.raises(stele.SteleError):
        stele.serve(tmp_path / "none", port=0, block=False)
    make_db(tmp_path / "db")
    with pytest.raises(stele.InvalidInput):
        stele.serve(tmp_path / "db", port=0, time_limit=-1, block=False)
    with pytest.warns(UserWarning, match="reachable from other machines"):
        s = stele.serve(tmp_path / "db", host="0.0.0.0", port=0, block=False)
    s.stop()


def test_python_m_stele_serve_prints_its_url_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    make_db(tmp_path / "db")
    proc = subprocess.Popen(
        [sys.executable, "-m", "stele", "serve", str(tmp_path / "db"), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert " at http://127.0.0.1:" in line, line
        url = line.split(" at ")[1].split(" ")[0]
        status, body = fetch(url + "c/people.json?limit=2")
        assert status == 200
        assert [d["id"] for d in json.loads(body)["documents"]] == ["p00", "p01"]
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
        assert "stopped" in err
    finally:
        proc.kill()
