"""Integer ids keep their type: `c[1] = ...`, put_many and import_file with an id field of
integers make a collection of integer ids, in numeric order, given back as int; ids of the
other kind raise, saying which kind the collection holds."""

from __future__ import annotations

import json

import pytest

import stele


@pytest.fixture
def db(tmp_path):
    with stele.open(tmp_path / "db") as d:
        yield d


def test_int_keys_sort_as_numbers_and_come_back_as_int(db):
    c = db["n"]
    for i in [10, 2, -3, 10014, 1]:
        c[i] = {"v": i}
    assert list(c) == [-3, 1, 2, 10, 10014]
    assert list(c.keys()) == [-3, 1, 2, 10, 10014]
    assert [k for k, _ in c.items()] == [-3, 1, 2, 10, 10014]
    assert c[1]["v"] == 1 and c.get(10014)["v"] == 10014
    assert 2 in c and 7 not in c and "x" not in c
    assert c["2"]["v"] == 2, "an int written as text is that int"
    with pytest.raises(stele.InvalidInput, match='holds integer ids, and "abc" is not one'):
        c["abc"] = {}
    with pytest.raises(stele.InvalidInput, match="holds integer ids"):
        c["abc"]
    rows = list(c.find({"_id": {"$gte": 2, "$lt": 10014}}, sort="_id:desc"))
    assert [i for i, _ in rows] == [10, 2]
    assert c.find_one({"v": 1})[0] == 1
    assert c.pop(-3)["v"] == -3 and c.popitem()[0] == 1
    del c[2]
    assert list(c) == [10, 10014]
    with db.batch() as b:
        b.put("n", 5, {"v": 5})
        b.delete("n", 10)
    assert list(c) == [5, 10014]


def test_a_collection_of_text_ids_refuses_int(db):
    t = db["t"]
    t["1"] = {}
    with pytest.raises(stele.InvalidInput, match="holds text ids"):
        t[2] = {}
    with pytest.raises(TypeError, match='collection "t" holds text ids, not int'):
        t[1]
    assert list(t) == ["1"] and 1 not in t and "1" in t
    with pytest.raises(OverflowError, match="beyond the range of integer ids"):
        db["big"][2**63] = {}
    with pytest.raises(TypeError, match="document ids are str or int, not float"):
        t[1.5] = {}


def test_put_many_and_imports_keep_integer_ids(db, tmp_path):
    m = db["m"]
    assert m.put_many(({"id": i, "x": "y"} for i in [30, 4, 200]), id_field="id") == 3
    assert list(m) == [4, 30, 200]
    lines = ['{"newid":10122,"a":1}', '{"a":2,"newid":1}', '{"newid":2}']
    path = tmp_path / "in.jsonl"
    path.write_text("\n".join(lines) + "\n")
    i = db["i"]
    assert i.import_jsonl(path, id_field="newid")["imported"] == 3
    assert list(i) == [1, 2, 10122]
    assert i[1].json() == '{"a":2,"newid":1}'
    assert [json.loads(d.json())["newid"] for d in i.values()] == [1, 2, 10122]
    path.write_text('{"id":1}\n{"id":"x"}\n')
    with pytest.raises(stele.InvalidInput, match="ids are all integers or all strings") as info:
        db["mixed"].import_jsonl(path, id_field="id")
    assert info.value.line == 2
