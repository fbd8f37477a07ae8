"""What a new user meets in the first hour (issue "The first hour, second pass"), from Python:
folders that are not databases, a file given as a database, collection names, empty and
non-object imports."""

from __future__ import annotations

import pytest

import stele


def test_a_folder_of_other_files_is_not_taken_over(tmp_path):
    notdb = tmp_path / "notdb"
    notdb.mkdir()
    (notdb / "data.jsonl").write_text('{"a": 1}\n')
    (notdb / "readme.txt").write_text("mine")
    with pytest.raises(stele.InvalidInput) as info:
        stele.open(notdb)
    message = str(info.value)
    assert "is not a database and not empty" in message
    assert "data.jsonl, readme.txt" in message
    assert "create_here=True" in message and "DatabaseOptions" not in message
    assert sorted(p.name for p in notdb.iterdir()) == ["data.jsonl", "readme.txt"]
    # Asked for: created beside the files; then it opens as any database.
    with stele.open(notdb, create_here=True) as db:
        db["x"]["k1"] = {"a": 1}
    with stele.open(notdb) as db:
        assert db["x"]["k1"]["a"] == 1
    # New and empty folders are created as before.
    (tmp_path / "empty").mkdir()
    with stele.open(tmp_path / "empty") as db:
        assert db.collections() == []


def test_a_file_is_said_to_be_one_as_the_cli_says(tmp_path):
    data = tmp_path / "caniuse.jsonl"
    data.write_text('{"a": 1}\n')
    for readonly in (False, True):
        with pytest.raises(stele.InvalidInput, match="is a file, not a database folder"):
            stele.open(data, readonly=readonly)
    assert data.read_text() == '{"a": 1}\n'
