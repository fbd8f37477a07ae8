"""Tables: build, open, every read method, duplicates, spills, errors, corruption."""

from __future__ import annotations

import gc
import os
from collections.abc import Mapping

import pytest

import stele
from conftest import first_lines

PAIRS = [(f"key{i:05}", f"value {i}") for i in range(3000)]


@pytest.fixture
def table(tmp_path) -> stele.Table:
    shuffled = PAIRS[1::2] + PAIRS[::2]
    return stele.Table.build(iter(shuffled), tmp_path)


def test_mapping(table):
    assert isinstance(table, Mapping)
    assert len(table) == 3000
    assert table["key00042"] == b"value 42"
    assert table[b"key00042"] == b"value 42"
    assert table.get("nope") is None and table.get("nope", b"d") == b"d"
    assert "key02999" in table and "key03000" not in table and 5 not in table
    with pytest.raises(KeyError):
        table["nope"]
    with pytest.raises(TypeError, match="bytes or str"):
        table[5]
    assert table.get_many(["key00001", "nope", b"key00002"]) == [b"value 1", None, b"value 2"]


def test_iteration(table):
    keys = [k.encode() for k, _ in PAIRS]
    assert list(table) == keys
    assert list(table.keys()) == keys
    assert list(table.values()) == [v.encode() for _, v in PAIRS]
    assert list(table.items()) == [(k.encode(), v.encode()) for k, v in PAIRS]
    it = iter(table)
    assert next(it) == b"key00000"
    del table
    gc.collect()
    assert len(list(it)) == 2999


def test_range_and_prefix(table):
    def keys(it):
        return [k for k, _ in it]

    assert keys(table.range("key00010", "key00013")) == [b"key00010", b"key00011", b"key00012"]
    assert keys(table.range("key00010", "key00013", reverse=True)) == [
        b"key00012",
        b"key00011",
        b"key00010",
    ]
    assert len(keys(table.range(end="key00100"))) == 100
    assert len(keys(table.range("key02990"))) == 10
    assert len(keys(table.range())) == 3000
    assert keys(table.range(reverse=True))[0] == b"key02999"
    assert keys(table.range("b", "a")) == []
    assert len(keys(table.prefix("key001"))) == 100
    assert keys(table.prefix(b"key0299", reverse=True))[0] == b"key02999"
    assert keys(table.prefix("nope")) == []
    assert len(keys(table.prefix(""))) == 3000


def test_positions(table):
    assert table.nth(0) == (b"key00000", b"value 0")
    assert table.nth(-1) == (b"key02999", b"value 2999")
    assert table.nth(1500) == (b"key01500", b"value 1500")
    with pytest.raises(IndexError):
        table.nth(3000)
    with pytest.raises(IndexError):
        table.nth(-3001)
    assert table.rank("key00100") == 100
    assert table.rank("key00100x") == 101
    assert table.rank("") == 0 and table.rank("z") == 3000
    assert table.first() == (b"key00000", b"value 0")
    assert table.last() == (b"key02999", b"value 2999")


def test_stats_verify_path(table):
    stats = table.stats()
    assert stats["entries"] == 3000
    assert stats["raw_key_bytes"] == sum(len(k) for k, _ in PAIRS)
    assert stats["file_bytes"] == os.path.getsize(table.path)
    assert table.path.suffix == ".stt"
    assert table.verify() is None
    assert repr(table).startswith("<stele.Table ")
    again = stele.Table.open(table.path)
    assert list(again) == list(table)
    assert len(stele.Table(str(table.path))) == 3000


def test_empty_table(tmp_path):
    t = stele.Table.build([], tmp_path)
    assert len(t) == 0 and list(t) == [] and t.first() is None and t.last() is None
    assert t.rank("a") == 0 and list(t.prefix("a")) == []


def test_build_to_a_file_path_with_documents(tmp_path):
    doc = stele.Document.from_json('{"a":[1,2]}')
    path = tmp_path / "sub" / "docs.stt"
    t = stele.Table.build([(b"d", doc), ("s", "text")], path)
    assert t.path == path and path.exists()
    assert stele.Document(t["d"])["a"][1] == 2
    assert t["s"] == b"text"


def test_duplicates(tmp_path):
    pairs = [("a", "1"), ("b", "2"), ("a", "3")]
    with pytest.raises(stele.InvalidInput, match="duplicate key"):
        stele.Table.build(pairs, tmp_path)
    assert stele.Table.build(pairs, tmp_path, duplicates="keep_last")["a"] == b"3"
    assert stele.Table.build(pairs, tmp_path, duplicates="keep_first")["a"] == b"1"
    with pytest.raises(stele.InvalidInput, match="duplicates"):
        stele.Table.build(pairs, tmp_path, duplicates="sometimes")


def test_spill_beyond_memory_budget(tmp_path):
    names = first_lines("keys/npm-package-names.shuffled.txt.zst", 20000)
    t = stele.Table.build(
        ((n, n[::-1]) for n in names), tmp_path, memory=1 << 16, temp_dir=tmp_path
    )
    assert list(t) == sorted(set(names))
    assert all(t[n] == n[::-1] for n in names[:500])
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".stt"]


def test_bad_arguments(tmp_path):
    with pytest.raises(TypeError, match="pairs"):
        stele.Table.build([("a", "b", "c")], tmp_path)
    with pytest.raises(TypeError, match="pairs"):
        stele.Table.build([5], tmp_path)
    with pytest.raises(TypeError, match="values are bytes, str or Document"):
        stele.Table.build([("a", 5)], tmp_path)
    with pytest.raises(TypeError, match="keys are bytes or str"):
        stele.Table.build([(5, "a")], tmp_path)
    with pytest.raises(stele.InvalidInput, match="memory_budget_bytes"):
        stele.Table.build([], tmp_path, memory=10)
    with pytest.raises(ZeroDivisionError):
        stele.Table.build(((str(1 / (3 - i)), "x") for i in range(5)), tmp_path)


def test_open_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.stt"):
        stele.Table.open(tmp_path / "nope.stt")
    junk = tmp_path / "junk.stt"
    junk.write_bytes(b"not a table at all" * 20)
    with pytest.raises(stele.FormatError, match="not a Stele table"):
        stele.Table.open(junk)
    with pytest.raises(OSError, match="mapping table"):
        stele.Table.open(tmp_path)


def test_corrupt_block_is_detected(table, tmp_path):
    data = bytearray(table.path.read_bytes())
    data[100] ^= 0xFF
    broken = tmp_path / "broken.stt"
    broken.write_bytes(bytes(data))
    t = stele.Table.open(broken)
    with pytest.raises(stele.CorruptError, match="data block 0"):
        t.verify()
    with pytest.raises(stele.CorruptError):
        list(t)
    with pytest.raises(stele.CorruptError):
        t["key00001"]
    data = bytearray(table.path.read_bytes())
    data[-30] ^= 0xFF
    broken.write_bytes(bytes(data))
    with pytest.raises(stele.SteleError):
        stele.Table.open(broken)
