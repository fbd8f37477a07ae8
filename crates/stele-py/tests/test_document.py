"""Documents: conversion, lazy access, exact values, errors, corrupt bytes."""

from __future__ import annotations

import gc
import json
import threading
from collections.abc import Mapping, Sequence
from decimal import Decimal

import pytest

import stele
from conftest import first_lines

SAMPLE = (
    '{"name":"Ada","office":{"city":"London","floors":[1,2,{"x":3}]},'
    '"langs":["en","fr"],"born":1815,"ok":true,"none":null,"pi":3.14}'
)


@pytest.fixture
def doc() -> stele.Document:
    return stele.Document.from_json(SAMPLE)


def test_to_python_equals_json_loads_on_every_corpus_file(corpus):
    for name, text in corpus.items():
        d = stele.Document.from_json(text)
        assert d.to_python() == json.loads(text), name
        assert json.loads(d.json()) == json.loads(text), name
        assert stele.Document(d.to_bytes()).to_python() == json.loads(text), name


def test_decimal_policy_matches_parse_float_decimal(corpus):
    for name in ["canada.json", "numbers.json", "mesh.json"]:
        text = corpus[name]
        d = stele.Document.from_json(text, decimals="decimal")
        assert d.decimals == "decimal"
        assert d.to_python() == json.loads(text, parse_float=Decimal), name


def test_three_fields_of_collection_documents():
    for line in first_lines("collections/geonames-cities.jsonl.zst", 300):
        expected = json.loads(line)
        d = stele.Document(stele.json_to_document(line))
        for key in list(expected)[:3]:
            assert d[key] == expected[key]
            assert d.get(key) == expected[key]


def test_nested_views_are_lazy_and_typed(doc):
    office = doc["office"]
    assert isinstance(office, stele.Object) and isinstance(office, stele.View)
    assert isinstance(office, Mapping)
    floors = office["floors"]
    assert isinstance(floors, stele.Array) and isinstance(floors, Sequence)
    assert floors[2]["x"] == 3
    assert doc["office"]["city"] == "London"
    assert doc.root == doc.to_python()


def test_views_outlive_the_document():
    d = stele.Document.from_json(SAMPLE)
    floors = d["office"]["floors"]
    it = iter(floors)
    del d
    gc.collect()
    assert floors[-1]["x"] == 3
    assert list(it)[:2] == [1, 2]


def test_scalars(doc):
    assert doc["name"] == "Ada"
    assert doc["born"] == 1815
    assert doc["ok"] is True
    assert doc["none"] is None
    assert doc["pi"] == 3.14 and isinstance(doc["pi"], float)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("18446744073709551615", 18446744073709551615),
        ("-9223372036854775808", -9223372036854775808),
        ("123456789012345678901234567890", 123456789012345678901234567890),
        ("-0", 0),
        ("1E5", 100000.0),
        ("1e400", float("inf")),
        ("-0.0", -0.0),
        ("10.50", 10.5),
        ('"\\u00e9t\\u00e9 \\ud83d\\ude00"', "été 😀"),
    ],
)
def test_numbers_and_strings_like_json_loads(text, expected):
    value = stele.Document.from_json(text).root
    assert value == expected == json.loads(text)
    assert type(value) is type(json.loads(text))


def test_decimals_keep_exact_text():
    d = stele.Document.from_json('{"a":10.50,"b":1E5,"c":7}', decimals="decimal")
    assert str(d["a"]) == "10.50" and isinstance(d["a"], Decimal)
    assert d["b"] == Decimal("1E5")
    assert d["c"] == 7 and isinstance(d["c"], int)
    with pytest.raises(stele.InvalidInput, match="decimals"):
        stele.Document.from_json("1", decimals="double")


def test_long_compressed_strings_read_back():
    long = "abc" * 500
    d = stele.Document.from_json(json.dumps({"s": long, "t": [long]}))
    assert d["s"] == long and d["t"][0] == long
    assert d.nbytes < len(long)


def test_mapping_methods(doc):
    assert len(doc) == 7
    assert list(doc) == ["name", "office", "langs", "born", "ok", "none", "pi"]
    assert doc.keys() == list(doc)
    assert doc.values()[0] == "Ada"
    assert doc.items()[3] == ("born", 1815)
    assert "name" in doc and "nope" not in doc and 5 not in doc
    assert doc.get("nope") is None and doc.get("nope", 1) == 1 and doc.get(5, 2) == 2
    with pytest.raises(KeyError):
        doc["nope"]
    with pytest.raises(KeyError):
        doc[0]


def test_sequence_methods(doc):
    floors = doc["office"]["floors"]
    assert len(floors) == 3
    assert floors[0] == 1 and floors[-1] == {"x": 3}
    assert floors[1:] == [2, {"x": 3}] and floors[::-1][0] == {"x": 3}
    assert 2 in floors and {"x": 3} in floors and 9 not in floors
    assert floors.get(5) is None and floors.get(-1) == {"x": 3}
    with pytest.raises(IndexError):
        floors[3]
    with pytest.raises(IndexError):
        floors[-4]
    with pytest.raises(TypeError):
        floors["a"]
    with pytest.raises(TypeError):
        floors.keys()
    with pytest.raises(TypeError):
        floors.to_dict()
    assert [v for v in floors][:2] == [1, 2]


def test_array_root_and_scalar_root():
    arr = stele.Document.from_json("[1,[2,3]]")
    assert arr[1][0] == 2 and len(arr) == 2 and list(arr)[0] == 1
    assert arr.path("[1][1]") == 3
    scalar = stele.Document.from_json('"hi"')
    assert scalar.root == "hi" and scalar.to_python() == "hi"
    with pytest.raises(TypeError):
        len(scalar)
    with pytest.raises(TypeError):
        scalar["a"]
    with pytest.raises(TypeError):
        iter(scalar)
    with pytest.raises(TypeError):
        "a" in scalar


def test_path(doc):
    assert doc.path("office.floors[2].x") == 3
    assert doc.path("office.city") == "London"
    assert doc["office"].path("floors[0]") == 1
    assert doc.path("office.nope") is None
    assert doc.path("office.nope", "d") == "d"
    assert doc.path("") == doc.to_python()
    with pytest.raises(stele.InvalidInput, match="invalid path"):
        doc.path("a[")


def test_json_output(doc):
    assert doc.json() == SAMPLE
    assert json.loads(doc.json(pretty=True)) == json.loads(SAMPLE)
    assert list(json.loads(doc.json(sorted=True))) == sorted(json.loads(SAMPLE))
    assert doc["office"].json(sorted=True) == '{"city":"London","floors":[1,2,{"x":3}]}'
    assert doc["office"]["floors"].json(pretty=True).startswith("[\n  1,")
    assert stele.document_to_json(doc.to_bytes(), sorted=True) == doc.json(sorted=True)


def test_from_json_inputs_and_options():
    text = '{"b":1,"a":2,"b":3}'
    for given in [text, text.encode(), bytearray(text.encode()), memoryview(text.encode())]:
        assert stele.Document.from_json(given).to_python() == {"b": 3, "a": 2}
    assert stele.Document.from_json(text, duplicates="first_wins")["b"] == 1
    with pytest.raises(stele.InvalidInput, match="duplicate key"):
        stele.Document.from_json(text, duplicates="reject")
    with pytest.raises(stele.InvalidInput, match="duplicates"):
        stele.Document.from_json(text, duplicates="maybe")
    assert stele.Document.from_json(text, sort_keys=True).keys() == ["a", "b"]
    with pytest.raises(TypeError):
        stele.Document.from_json(12)


def test_bad_json_has_position():
    with pytest.raises(stele.InvalidInput) as info:
        stele.Document.from_json('{\n  "a": tru\n}')
    err = info.value
    assert isinstance(err, ValueError) and isinstance(err, stele.SteleError)
    assert (err.line, err.column) == (2, 8)
    assert err.offset == 9
    assert "line 2, column 8" in str(err)
    with pytest.raises(stele.InvalidInput, match="nest deeper"):
        stele.Document.from_json("[" * 200 + "]" * 200)


def test_document_from_bytes_types(doc):
    data = doc.to_bytes()
    assert bytes(doc) == data
    for given in [data, bytearray(data), memoryview(data)]:
        assert stele.Document(given) == doc
    with pytest.raises(TypeError, match="from_json"):
        stele.Document(SAMPLE)
    with pytest.raises(TypeError):
        stele.Document(123)


def test_corrupt_bytes_are_rejected_or_valid(doc):
    data = doc.to_bytes()
    for i in range(len(data)):
        for flip in (0x01, 0x80, 0xFF):
            broken = bytearray(data)
            broken[i] ^= flip
            try:
                other = stele.Document(bytes(broken))
            except stele.CorruptError as e:
                assert e.offset is not None and "not a valid stele document" in str(e)
            else:
                other.to_python()
                other.json()
    for n in range(len(data)):
        with pytest.raises(stele.CorruptError):
            stele.Document(data[:n])


def test_python_values_round_trip():
    value = {
        "s": "x",
        "i": -5,
        "u": 2**64 - 1,
        "big": 10**30,
        "f": 2.5,
        "n": None,
        "b": False,
        "l": [1, (2, 3)],
        "d": Decimal("10.50"),
    }
    data = stele.dumps(value)
    back = stele.loads(data)
    assert back == {**value, "l": [1, [2, 3]], "d": 10.5}
    assert str(stele.loads(data, decimals="decimal")["d"]) == "10.50"
    d = stele.Document.from_python(value, sort_keys=True)
    assert d.keys() == sorted(value)
    assert stele.Document.from_python({"v": d["l"]}).to_python() == {"v": [1, [2, 3]]}


def test_python_values_refused():
    with pytest.raises(TypeError, match="keys must be str"):
        stele.dumps({1: 2})
    with pytest.raises(TypeError, match="documents hold"):
        stele.dumps({"a": object()})
    with pytest.raises(stele.InvalidInput, match="not finite"):
        stele.dumps(float("nan"))
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(stele.InvalidInput, match="nest deeper"):
        stele.dumps(cycle)


def test_equality_repr_hash(doc):
    assert doc == stele.Document.from_json(SAMPLE)
    assert doc["office"] == {"city": "London", "floors": [1, 2, {"x": 3}]}
    assert doc["office"] != {"city": "Paris"}
    assert repr(doc).startswith('<stele.Document {"name":"Ada"')
    assert repr(doc).endswith("...>")
    assert repr(doc["langs"]) == '<stele.Array ["en","fr"]>'
    with pytest.raises(TypeError):
        hash(doc["office"])


def test_large_documents_convert_in_threads(corpus):
    text = corpus["citm_catalog.json"]
    assert len(text) > stele._stele.DETACH_BYTES
    results = []

    def work():
        d = stele.Document.from_json(text)
        results.append(stele.Document(d.to_bytes()).json() == d.json())

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * 4
