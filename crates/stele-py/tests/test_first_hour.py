"""What a new user meets in the first hour (issue "The first hour, second pass"), from Python:
folders that are not databases, a file given as a database, collection names, empty and
non-object imports."""

from __future__ import annotations

from pathlib import Path

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


def test_a_bad_collection_name_says_which_rule_it_breaks(tmp_path):
    with stele.open(tmp_path / "db") as db:
        for name, why in [("my coll", "character 3 (' ')"), ("ünïcødé", "character 1 ('ü')")]:
            with pytest.raises(stele.InvalidInput, match="ASCII letters") as info:
                db[name]
            assert why in str(info.value)


def test_a_record_that_is_not_an_object_is_refused_unless_wrapped(tmp_path):
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text('{"a": 1}\n2\n"s"\n')
    with stele.open(tmp_path / "db") as db:
        with pytest.raises(stele.InvalidInput, match="is a number, not a JSON object") as info:
            db["c"].import_jsonl(mixed)
        assert info.value.line == 2
        assert 'wrap_non_objects="field"' in str(info.value)
        assert "c" not in db
        report = db["c"].import_jsonl(mixed, skip_bad=True)
        assert (report["imported"], report["skipped"]) == (1, 2)
        db["w"].import_jsonl(mixed, wrap_non_objects="value")
        assert [d.to_python() for d in db["w"].values()] == [{"a": 1}, {"value": 2}, {"value": "s"}]


def test_the_wheel_is_built_without_debug_information():
    # `pip install ./crates/stele-py` builds the profile pyproject.toml names: release code
    # without the debug information that was 33 of the extension's 37 MB.
    tomllib = pytest.importorskip("tomllib")
    package = Path(__file__).resolve().parents[1]
    with open(package / "pyproject.toml", "rb") as f:
        profile = tomllib.load(f)["tool"]["maturin"]["profile"]
    with open(package.parents[1] / "Cargo.toml", "rb") as f:
        profiles = tomllib.load(f)["profile"]
    assert profile != "release" and profiles[profile]["inherits"] == "release"
    assert profiles[profile]["debug"] is False
