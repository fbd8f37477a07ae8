"""Collection.find, find_one, count, distinct, aggregate and create_index: every answer
checked against the same question asked of plain Python values."""

from __future__ import annotations

import datetime
import json
from collections import Counter, defaultdict

import pytest

import stele

STATUSES = ["paid", "shipped", "pending", "refunded"]


def order(i: int) -> dict:
    doc = {
        "status": STATUSES[i % 4],
        "total": (i * 37) % 500 + 0.5,
        "created": f"2026-{i % 12 + 1:02}-{i % 28 + 1:02}T{i % 24:02}:00:00Z",
        "customer": {"name": f"c{i % 17}", "city": ["Lima", "Oslo", "Pune"][i % 3]},
        "items": [{"sku": f"s{(i + k) % 5}", "qty": k + 1} for k in range(i % 3)],
        "tags": [t for t, every in (("gift", 3), ("b2b", 5)) if i % every == 0],
    }
    if i % 7:
        doc["note"] = None if i % 2 else f"note {i}"
    return doc


ORDERS = {f"o{i:04}": order(i) for i in range(400)}


@pytest.fixture
def orders(tmp_path):
    with stele.open(tmp_path / "db") as db:
        coll = db["orders"]
        coll.put_many(ORDERS.items())
        yield coll


def ids(rows) -> list[str]:
    return [i for i, _ in rows]


def test_find_filters_sorts_skips_and_projects(orders):
    paid_big = [k for k, o in ORDERS.items() if o["status"] == "paid" and o["total"] >= 200]
    assert len(paid_big) > 10
    # A dict or JSON text: the same filter.
    cursor = orders.find({"status": "paid", "total": {"$gte": 200}})
    assert isinstance(cursor, stele.Cursor)
    got = list(cursor)
    assert ids(got) == paid_big
    assert all(isinstance(d, stele.Document) for _, d in got)
    assert got[0][1].to_python() == ORDERS[paid_big[0]]
    assert ids(orders.find('{"status": "paid", "total": {"$gte": 200}}')) == paid_big
    # Sorts: "field", "field:desc", {"f": 1}, [(f, 1), (g, -1)]; then skip and limit.
    def by(key, reverse=False):
        return [k for k, _ in sorted(ORDERS.items(), key=lambda kv: (key(kv[1]), kv[0]), reverse=reverse)]

    assert ids(orders.find(sort="total", limit=5)) == by(lambda o: o["total"])[:5]
    by_city_total = sorted(ORDERS, key=lambda k: (ORDERS[k]["customer"]["city"], -ORDERS[k]["total"], k))
    for sort in ([("customer.city", 1), ("total", -1)], {"customer.city": 1, "total": -1}, ["customer.city", "total:desc"]):
        assert ids(orders.find(sort=sort, skip=3, limit=4)) == by_city_total[3:7], sort
    # Projections: a list of paths (nested as in the document) or a dict.
    _, doc = orders.find_one({"status": "pending"}, projection=["customer.city", "total"])
    first = next(o for o in ORDERS.values() if o["status"] == "pending")
    assert doc.to_python() == {"customer": {"city": first["customer"]["city"]}, "total": first["total"]}
    _, doc = orders.find_one({"status": "pending"}, projection={"items": 0, "tags": 0, "customer": 0})
    assert set(doc.to_python()) == set(first) - {"items", "tags", "customer"}
    # Operators on arrays and missing fields, $or and $not.
    cases = [
        ({"tags": "gift"}, lambda o: "gift" in o["tags"]),
        ({"items.sku": {"$in": ["s1", "s4"]}}, lambda o: any(i["sku"] in ("s1", "s4") for i in o["items"])),
        ({"note": {"$exists": False}}, lambda o: "note" not in o),
        ({"note": None}, lambda o: o.get("note") is None),
        ({"items": {"$size": 2}}, lambda o: len(o["items"]) == 2),
        ({"$or": [{"tags": "b2b"}, {"total": {"$lt": 10}}]}, lambda o: "b2b" in o["tags"] or o["total"] < 10),
        ({"total": {"$not": {"$gte": 100}}}, lambda o: not o["total"] >= 100),
        ({"created": {"$prefix": "2026-03"}}, lambda o: o["created"].startswith("2026-03")),
    ]
    for flt, model in cases:
        assert ids(orders.find(flt)) == [k for k, o in ORDERS.items() if model(o)], flt
    assert ids(orders.find({"_id": {"$gte": "o0390"}})) == [f"o{i:04}" for i in range(390, 400)]
    assert orders.find_one({"status": "nope"}) is None


def test_find_is_lazy_and_explains_itself(orders):
    cursor = orders.find({"status": "shipped"}, sort=[("total", -1)], limit=3)
    assert "not run" in repr(cursor)
    first = next(cursor)
    assert "rows read: 1" in repr(cursor)
    assert [first[0], *ids(cursor)] == sorted(
        (k for k, o in ORDERS.items() if o["status"] == "shipped"), key=lambda k: (-ORDERS[k]["total"], k)
    )[:3]
    plan = orders.find({"status": "shipped"}).explain()
    assert plan["full_scan"] is True and plan["index"] is None
    assert plan["docs_examined"] == len(ORDERS)
    assert plan["rows"] == sum(o["status"] == "shipped" for o in ORDERS.values())
    assert set(plan) >= {"plan", "candidates", "keys_examined", "elapsed_us", "sorted_in_memory", "covered"}


def test_a_cursor_pulls_rows_as_the_scan_finds_them(tmp_path):
    with stele.open(tmp_path / "db") as db:
        coll = db["many"]
        coll.put_many((f"d{i:05}", {"n": i}) for i in range(20000))
        cursor = coll.find({"n": {"$gte": 10}})
        assert cursor.stats()["docs_examined"] == 0
        assert next(cursor)[0] == "d00010"
        # The scan reads ahead only as far as its bounded buffer of rows (and, over packed
        # blocks, the stretches of its first wave).
        assert cursor.stats()["docs_examined"] < 10000
        assert len(list(cursor)) == 19989
        assert cursor.stats()["docs_examined"] == 20000 and cursor.stats()["rows"] == 19990
        assert "done" in repr(cursor)


def test_an_index_changes_the_plan_not_the_answer(orders):
    queries = [
        dict(filter={"status": "paid", "total": {"$lt": 250}}, sort=[("total", -1)]),
        dict(filter={"status": {"$in": ["paid", "refunded"]}}, sort="created:desc", limit=7),
        dict(filter={"customer.city": "Oslo", "tags": "gift"}),
        dict(filter={"$or": [{"status": "pending"}, {"customer.city": "Lima"}]}),
        dict(filter={"note": {"$exists": True}}, sort={"total": 1}),
    ]

    def answers():
        return [[(k, d.to_python()) for k, d in orders.find(**q)] for q in queries]

    before = answers()
    assert all(orders.find(**q).explain()["full_scan"] for q in queries)
    assert orders.create_index(["status", ("total", -1)]) == "status_1_total_-1"
    orders.create_index([("customer.city", 1), "tags"], name="by_city_tag")
    orders.create_index({"status": 1, "created": -1})
    orders.create_index("note")
    after = answers()
    for q, a, b in zip(queries, before, after):
        if q.get("sort"):
            # Ties may come in another order through an index: same rows, same sort keys.
            assert sorted(a) == sorted(b), q
            assert len(a) == len(b)
        else:
            assert a == b, q
    used = [orders.find(**q).explain()["index"] for q in queries]
    assert used[0] == "status_1_total_-1" and used[2] == "by_city_tag", used
    assert not orders.find(**queries[0]).explain()["full_scan"]


def test_sort_and_limit_served_by_a_compound_index(orders):
    orders.create_index(["status", "created:desc"], name="by_status_created")
    orders.create_index("total")
    cursor = orders.find({"status": "paid"}, sort=[("created", -1)], limit=5)
    plan = cursor.explain()
    assert plan["index"] == "by_status_created", plan
    assert plan["sorted_in_memory"] is False and plan["rows"] == 5
    assert plan["docs_examined"] < 20, plan
    chosen = {c["index"]: c["chosen"] for c in plan["candidates"]}
    assert chosen == {"by_status_created": True, "total_1": False}, plan
    paid = sorted((k for k, o in ORDERS.items() if o["status"] == "paid"), key=lambda k: ORDERS[k]["created"], reverse=True)
    assert [ORDERS[k]["created"] for k in ids(cursor)] == [ORDERS[k]["created"] for k in paid[:5]]


def test_a_sort_over_a_tested_field_is_served_until_it_holds_an_array(orders):
    orders.create_index(["status", ("total", -1)], name="by_status_total")
    q = dict(filter={"status": "paid", "total": {"$lt": 250}}, sort=[("total", -1)], limit=5)
    want = sorted((o["total"] for o in ORDERS.values() if o["status"] == "paid" and o["total"] < 250), reverse=True)
    assert orders.index_stats()["by_status_total"]["array_fields"] == []
    plan = orders.find(**q).explain()
    assert plan["index"] == "by_status_total" and plan["sorted_in_memory"] is False, plan
    assert [d["total"] for _, d in orders.find(**q)] == want[:5]
    # One paid order whose total is an array: 900 is its largest element (its sort key),
    # 1 the one under 250; the index no longer serves the sort, and the answer follows it.
    orders["odd"] = {"status": "paid", "total": [1, 900]}
    stats = orders.index_stats()["by_status_total"]
    assert stats["array_fields"] == ["total"] and stats["fields"] == ["status", "total"], stats
    plan = orders.find(**q).explain()
    assert plan["sorted_in_memory"] is True, plan
    reason = {c["index"]: c["reason"] for c in plan["candidates"]}["by_status_total"]
    assert 'held an array at "total"' in reason, reason
    assert [k for k, _ in orders.find(**q)][0] == "odd"


def test_counts_from_index_keys_when_covered(orders):
    flt = {"status": {"$in": ["paid", "shipped"]}}
    want = sum(o["status"] in ("paid", "shipped") for o in ORDERS.values())
    assert orders.count(flt) == want
    assert orders.count() == len(ORDERS)
    assert orders.count(flt, limit=7) == 7 and orders.count(flt, skip=want - 2) == 2
    assert orders.count_explain(flt)["covered"] is False
    orders.create_index("status")
    assert orders.count(flt) == want
    plan = orders.count_explain(flt)
    assert plan["covered"] is True and plan["docs_examined"] == 0 and plan["count"] == want, plan
    both = {"status": "paid", "total": {"$gt": 100}}
    plan = orders.count_explain(both)
    assert plan["covered"] is False
    assert plan["count"] == sum(o["status"] == "paid" and o["total"] > 100 for o in ORDERS.values())


def test_distinct_and_aggregate(orders):
    assert orders.distinct("status") == sorted(STATUSES)
    gift_cities = sorted({o["customer"]["city"] for o in ORDERS.values() if "gift" in o["tags"]})
    assert orders.distinct("customer.city", {"tags": "gift"}) == gift_cities
    assert orders.distinct("items.sku") == [f"s{i}" for i in range(5)]
    assert orders.distinct("note", '{"note": {"$ne": null}}') == sorted(
        o["note"] for o in ORDERS.values() if o.get("note") is not None
    )
    groups = orders.aggregate(
        [{"$group": {"_id": "$status", "n": {"$sum": 1}, "top": {"$max": "$total"}}}, {"$sort": {"_id": 1}}]
    )
    want = defaultdict(list)
    for o in ORDERS.values():
        want[o["status"]].append(o["total"])
    assert groups == [{"_id": s, "n": len(t), "top": max(t)} for s, t in sorted(want.items())]
    sold = orders.aggregate(
        json.dumps([{"$unwind": "$items"}, {"$group": {"_id": "$items.sku", "qty": {"$sum": "$items.qty"}}}, {"$sort": {"_id": 1}}])
    )
    qty = Counter()
    for o in ORDERS.values():
        for i in o["items"]:
            qty[i["sku"]] += i["qty"]
    assert sold == [{"_id": k, "qty": v} for k, v in sorted(qty.items())]
    assert orders.aggregate([{"$match": {"note": None}}, {"$count": "n"}]) == [
        {"n": sum(o.get("note") is None for o in ORDERS.values())}
    ]


def test_errors_name_the_place(orders):
    with pytest.raises(stele.InvalidInput) as e:
        orders.find({"total": {"$gtx": 1}})
    assert isinstance(e.value, ValueError)
    assert e.value.at == "$.total.$gtx" and "not a supported operator" in str(e.value)
    with pytest.raises(stele.InvalidInput) as e:
        orders.count({"$or": [{"a": 1}, {"b": {"$regex": "x"}}]})
    assert e.value.at == "$.$or[1].b.$regex"
    with pytest.raises(stele.InvalidInput) as e:
        orders.aggregate([{"$group": {"_id": "$status", "n": {"$median": "$total"}}}])
    assert e.value.at == "$[0].$group.n.$median"
    with pytest.raises(stele.InvalidInput) as e:
        orders.find(projection={"a": 1, "b": 0})
    assert e.value.at == "$.b"
    with pytest.raises(stele.InvalidInput, match="not JSON"):
        orders.find('{"a":')
    with pytest.raises(stele.InvalidInput, match="direction"):
        orders.find(sort=[("total", 2)])
    with pytest.raises(TypeError, match="sort takes"):
        orders.find(sort=5)
    with pytest.raises(stele.InvalidInput, match="limit of 0"):
        list(orders.find(limit=0))
    with pytest.raises(stele.InvalidInput, match="field path"):
        orders.distinct("a..b")
    # A budget that cannot be met stops the query and says so.
    with pytest.raises(stele.QueryTimeout, match="time budget") as e:
        list(orders.find({"note": {"$exists": True}}, time_budget=1e-6))
    assert isinstance(e.value, TimeoutError)
    with pytest.raises(stele.QueryTimeout):
        orders.count({"note": {"$exists": True}}, time_budget=datetime.timedelta(microseconds=1))
    with pytest.raises(stele.InvalidInput, match="positive"):
        orders.find(time_budget=0)


def test_a_missing_collection_is_an_error_not_nothing(tmp_path):
    with stele.open(tmp_path / "db") as db:
        db["orders"]["a"] = {"x": 1}
        for call in (
            lambda c: c.find(),
            lambda c: c.find_one(),
            lambda c: c.count(),
            lambda c: c.distinct("x"),
            lambda c: c.aggregate([]),
        ):
            with pytest.raises(stele.InvalidInput, match='no collection "order".*orders'):
                call(db["order"])


def test_queries_read_a_snapshot_as_of_its_moment(tmp_path):
    with stele.open(tmp_path / "db") as db:
        coll = db["orders"]
        coll.put_many(ORDERS.items())
        snap = db.snapshot()
        lazy = coll.find({"status": "paid"})  # the snapshot of this call
        coll["new"] = {"status": "paid", "total": 1.0}
        frozen = snap["orders"]
        paid = [k for k, o in ORDERS.items() if o["status"] == "paid"]
        assert ids(frozen.find({"status": "paid"})) == paid
        assert ids(lazy) == paid
        assert frozen.count({"status": "paid"}) == len(paid)
        assert coll.count({"status": "paid"}) == len(paid) + 1
        assert frozen.distinct("status") == sorted(STATUSES)
        with pytest.raises(TypeError, match="read-only"):
            frozen.create_index("total")


def test_create_index_forms(orders):
    assert orders.create_index(["customer.city", ("total", -1)]) == "customer.city_1_total_-1"
    assert orders.create_index("created:desc", name="newest") == "newest"
    orders.create_index("by_status", ["status"])  # the form of earlier versions
    orders.create_index("by_total", "total")
    assert orders.indexes() == {
        "by_status": ["status"],
        "by_total": ["total"],
        "customer.city_1_total_-1": ["customer.city", "total:desc"],
        "newest": ["created:desc"],
    }
    with pytest.raises(stele.InvalidInput, match="name twice"):
        orders.create_index("x", ["a"], name="y")
    with pytest.raises(TypeError, match="first of two arguments is the name"):
        orders.create_index(["a"], ["b"])
    with pytest.raises(stele.InvalidInput, match="direction"):
        orders.create_index([("a", 0)])
    with pytest.raises(TypeError):
        orders.create_index(5)
    with pytest.raises(stele.InvalidInput, match="already exists"):
        orders.create_index("status", name="by_status")


def test_stubs_declare_the_query_methods():
    import ast
    from pathlib import Path

    tree = ast.parse((Path(stele.__file__).parent / "__init__.pyi").read_text())
    declared = {
        node.name: {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
        for node in tree.body
        if isinstance(node, ast.ClassDef)
    }
    for cls in (stele.Collection, stele.Cursor):
        public = {m for m in dir(cls) if not m.startswith("_")}
        assert public <= declared[cls.__name__], public - declared[cls.__name__]
