#!/usr/bin/env python3
"""Python package benchmark: stele against the usual Python peers, on the shared data.

1. Reading 3 fields per document: stele lazy documents vs `json.loads` vs `orjson.loads`.
   Fields: the 3 most frequent top-level keys of a collection's first 1,000 documents (as in
   `stele-bench doc`). Readers:
     - json / orjson: parse the JSON text, then `d.get(f)` x3;
     - stele validated: `Document(data)` over document bytes (full validation, as for bytes
       fetched from a file or table), then `doc.get(f)` x3;
     - stele open: documents already open, `doc.get(f)` x3.
   Nested values come back as lazy views from stele, fully built dicts/lists from the parsers.
2. JSON text to Python (MB/s of JSON): `json.loads`, `orjson.loads`, and stele's
   `Document.from_json` (to a document, the write path) and `.to_python()` (document to dicts).
3. Key lookups: a stele `Table` vs LMDB (`lmdb` package, one read transaction) vs `sqlite3`
   (WITHOUT ROWID table, one prepared query) vs a Python `dict` (in memory, for scale); keys
   are npm package names, looked up in random order.
4. Stored documents (geonames slice): ingest rate, then get by id + 3 fields, in a stele
   database (`coll[id]`, then `doc.get(f)` x3) vs `sqlite3` (JSON in a TEXT column of a WITHOUT
   ROWID table; one `SELECT json_extract(...) x3`, and `SELECT body` + `orjson.loads`) vs LMDB
   (JSON values, `txn.get` + `orjson.loads`). Same documents, same ids, same random probes.
   Ingest commits every 1,000 documents durably in all three (stele: a batch with fsync;
   sqlite: a transaction, WAL journal, synchronous=FULL; lmdb: a write transaction, sync).

Ratios are peer time / stele time (above 1: stele is faster). `--quick` runs tiny inputs only
(the smoke run of scripts/check.sh); peers that are not installed are skipped.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import stele

try:
    import orjson
except ImportError:  # the smoke run works without peers
    orjson = None
try:
    import lmdb
except ImportError:
    lmdb = None

REPO = Path(__file__).resolve().parents[3]
DATA = Path(os.environ.get("STELE_DATA", REPO.parent / "shared" / "data"))

FULL_COLLECTIONS = [
    "debian-packages",
    "emojibase",
    "geonames-cities",
    "mdn-compat-features",
    "vega-flights-200k",
    "github-webhooks",
]
QUICK_COLLECTIONS = ["geonames-cities", "debian-packages"]
CORPUS = ["twitter.json", "citm_catalog.json", "canada.json"]


def lines(path: Path, limit: int | None) -> list[bytes]:
    """JSON Lines of a zstd file (the `zstd` command decompresses; nothing is written)."""
    out = []
    with subprocess.Popen(["zstd", "-dc", str(path)], stdout=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip(b"\n")
            if line:
                out.append(line)
            if limit is not None and len(out) >= limit:
                break
        proc.kill()
    return out


def best(fn, repeat: int) -> float:
    """Best wall time of `repeat` runs of `fn()`, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def top_fields(texts: list[bytes]) -> list[str]:
    counts: collections.Counter[str] = collections.Counter()
    for t in texts[:1000]:
        value = json.loads(t)
        if isinstance(value, dict):
            counts.update(value.keys())
    return [k for k, _ in counts.most_common(3)]


def table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    fmt = lambda r: "| " + " | ".join(str(c).rjust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([fmt(header), sep, *[fmt(r) for r in rows]])


def ratio(peer: float | None, ours: float) -> str:
    return "-" if peer is None else f"{peer / ours:.2f}x"


def bench_fields(sets: list[tuple[str, list[bytes]]], repeat: int) -> None:
    print("## 1. Reading 3 fields per document (ns per document, lower is better)\n")
    rows = []
    for name, texts in sets:
        fields = top_fields(texts)
        datas = [stele.json_to_document(t) for t in texts]
        docs = [stele.Document(d) for d in datas]

        def with_parser(loads):
            def run():
                for t in texts:
                    d = loads(t)
                    for f in fields:
                        d.get(f)

            return run

        def stele_validated():
            for data in datas:
                d = stele.Document(data)
                for f in fields:
                    d.get(f)

        def stele_open():
            for d in docs:
                for f in fields:
                    d.get(f)

        n = len(texts)
        t_json = best(with_parser(json.loads), repeat) / n * 1e9
        t_orjson = best(with_parser(orjson.loads), repeat) / n * 1e9 if orjson else None
        t_valid = best(stele_validated, repeat) / n * 1e9
        t_open = best(stele_open, repeat) / n * 1e9
        rows.append(
            [
                name,
                n,
                ", ".join(fields),
                f"{t_open:.0f}",
                f"{t_valid:.0f}",
                f"{t_json:.0f}",
                "-" if t_orjson is None else f"{t_orjson:.0f}",
                ratio(t_json, t_valid),
                ratio(t_orjson, t_valid),
                ratio(t_json, t_open),
                ratio(t_orjson, t_open),
            ]
        )
    print(
        table(
            [
                "data",
                "docs",
                "fields",
                "stele open",
                "stele validated",
                "json",
                "orjson",
                "json/validated",
                "orjson/validated",
                "json/open",
                "orjson/open",
            ],
            rows,
        )
    )
    print()


def bench_convert(sets: list[tuple[str, list[bytes]]], repeat: int) -> None:
    print("## 2. JSON text to Python values (MB/s of JSON input, higher is better)\n")
    rows = []
    for name, texts in sets:
        mb = sum(len(t) for t in texts) / 1e6
        docs = [stele.Document.from_json(t) for t in texts]

        def each(fn, items):
            return lambda: [fn(x) for x in items]

        t_json = best(each(json.loads, texts), repeat)
        t_orjson = best(each(orjson.loads, texts), repeat) if orjson else None
        t_from = best(each(stele.Document.from_json, texts), repeat)
        t_py = best(each(lambda d: d.to_python(), docs), repeat)
        rows.append(
            [
                name,
                f"{mb:.1f}",
                f"{mb / t_json:.0f}",
                "-" if t_orjson is None else f"{mb / t_orjson:.0f}",
                f"{mb / t_from:.0f}",
                f"{mb / t_py:.0f}",
            ]
        )
    print(
        table(
            [
                "data",
                "MB",
                "json.loads",
                "orjson.loads",
                "stele from_json (to document)",
                "stele to_python (document to dicts)",
            ],
            rows,
        )
    )
    print()


def bench_tables(n_keys: int, n_gets: int, repeat: int) -> None:
    print(f"## 3. Key lookups ({n_keys} npm names, {n_gets} random gets)\n")
    names = lines(DATA / "keys" / "npm-package-names.shuffled.txt.zst", n_keys)
    keys = list(dict.fromkeys(names))
    values = [k[::-1] for k in keys]
    rng = random.Random(7)
    probes = [rng.choice(keys) for _ in range(n_gets)]
    rows = []
    with tempfile.TemporaryDirectory(prefix="stele-bench-py-") as tmp:
        start = time.perf_counter()
        t = stele.Table.build(zip(keys, values), tmp, memory=256 << 20)
        build_stele = time.perf_counter() - start

        def get_stele():
            for k in probes:
                t[k]

        def get_many_stele():
            t.get_many(probes)

        ours = best(get_stele, repeat)
        rows.append(["stele Table t[k]", f"{build_stele:.2f}", f"{ours / n_gets * 1e9:.0f}", "1.00x"])
        many = best(get_many_stele, repeat)
        rows.append(["stele Table get_many", "", f"{many / n_gets * 1e9:.0f}", ratio(many, ours)])

        if lmdb is not None:
            env = lmdb.open(os.path.join(tmp, "lmdb"), map_size=4 << 30, writemap=True, sync=False)
            start = time.perf_counter()
            with env.begin(write=True) as txn:
                for k, v in zip(keys, values):
                    txn.put(k, v)
            build_lmdb = time.perf_counter() - start

            def get_lmdb():
                with env.begin() as txn:
                    for k in probes:
                        txn.get(k)

            peer = best(get_lmdb, repeat)
            rows.append(["lmdb txn.get", f"{build_lmdb:.2f}", f"{peer / n_gets * 1e9:.0f}", ratio(peer, ours)])
            env.close()

        db = sqlite3.connect(os.path.join(tmp, "kv.sqlite"))
        db.execute("PRAGMA journal_mode=OFF")
        db.execute("PRAGMA synchronous=OFF")
        db.execute("CREATE TABLE kv (k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID")
        start = time.perf_counter()
        db.executemany("INSERT INTO kv VALUES (?, ?)", zip(keys, values))
        db.commit()
        build_sqlite = time.perf_counter() - start

        def get_sqlite():
            cur = db.cursor()
            for k in probes:
                cur.execute("SELECT v FROM kv WHERE k = ?", (k,)).fetchone()

        peer = best(get_sqlite, repeat)
        rows.append(["sqlite3 SELECT", f"{build_sqlite:.2f}", f"{peer / n_gets * 1e9:.0f}", ratio(peer, ours)])
        db.close()

        d = dict(zip(keys, values))

        def get_dict():
            for k in probes:
                d[k]

        peer = best(get_dict, repeat)
        rows.append(["dict d[k] (in memory)", "", f"{peer / n_gets * 1e9:.0f}", ratio(peer, ours)])
    print(table(["store", "build s", "ns per get", "peer / stele"], rows))
    print()


def folder_bytes(path: str) -> int:
    return sum(
        os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(path) for f in files
    )


def bench_store(texts: list[bytes], n_gets: int, repeat: int) -> None:
    n = len(texts)
    print(f"## 4. Stored documents: geonames-cities, {n} documents, {n_gets} random gets by id\n")
    fields = top_fields(texts)
    ids = [f"{i:08}" for i in range(n)]
    rng = random.Random(11)
    probes = [rng.choice(ids) for _ in range(n_gets)]
    per_commit = 1000
    ingest: list[list[str]] = []
    gets: list[list[str]] = []

    def ingest_row(name: str, seconds: float, size: int | None) -> None:
        size_text = "-" if size is None else f"{size / 1e6:.1f}"
        ingest.append([name, f"{seconds:.2f}", f"{n / seconds:,.0f}", size_text])

    with tempfile.TemporaryDirectory(prefix="stele-bench-py-store-") as tmp:
        path = os.path.join(tmp, "stele")
        with stele.open(path) as db:
            coll = db["geo"]
            start = time.perf_counter()
            coll.put_many(zip(ids, texts), batch=per_commit)
            put_many_s = time.perf_counter() - start
            jsonl = os.path.join(tmp, "geo.jsonl")
            with open(jsonl, "wb") as f:
                f.write(b"\n".join(texts) + b"\n")
            start = time.perf_counter()
            db["geo_import"].import_jsonl(jsonl, batch=per_commit)
            import_s = time.perf_counter() - start
            db.checkpoint()
            stats = db.stats()
            ingest_row("stele put_many (JSON text)", put_many_s, stats["geo"]["table_bytes"])
            ingest_row("stele import_jsonl", import_s, stats["geo_import"]["table_bytes"])

            def get_live():
                for i in probes:
                    d = coll[i]
                    for fld in fields:
                        d.get(fld)

            snap = db.snapshot()["geo"]

            def get_snapshot():
                for i in probes:
                    d = snap[i]
                    for fld in fields:
                        d.get(fld)

            ours = best(get_live, repeat)
            gets.append(["stele coll[id] (validated)", f"{ours / n_gets * 1e9:.0f}", "1.00x"])
            t = best(get_snapshot, repeat)
            gets.append(["stele snapshot[id] (validated)", f"{t / n_gets * 1e9:.0f}", ratio(t, ours)])
        with stele.open(path, trusted=True) as db:
            trusted = db.snapshot()["geo"]

            def get_trusted():
                for i in probes:
                    d = trusted[i]
                    for fld in fields:
                        d.get(fld)

            t = best(get_trusted, repeat)
            gets.append(["stele snapshot[id], trusted=True", f"{t / n_gets * 1e9:.0f}", ratio(t, ours)])

        sq = sqlite3.connect(os.path.join(tmp, "docs.sqlite"), isolation_level=None)
        sq.execute("PRAGMA journal_mode=WAL")
        sq.execute("PRAGMA synchronous=FULL")
        sq.execute("CREATE TABLE docs (id TEXT PRIMARY KEY, body TEXT) WITHOUT ROWID")
        start = time.perf_counter()
        for lo in range(0, n, per_commit):
            sq.execute("BEGIN")
            sq.executemany(
                "INSERT INTO docs VALUES (?, ?)",
                zip(ids[lo : lo + per_commit], (t.decode() for t in texts[lo : lo + per_commit])),
            )
            sq.execute("COMMIT")
        sq_s = time.perf_counter() - start
        sq.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        ingest_row("sqlite3 executemany", sq_s, folder_bytes(tmp) - folder_bytes(path) - os.path.getsize(jsonl))
        extract = ", ".join(f"json_extract(body, '$.\"{fld}\"')" for fld in fields)
        query = f"SELECT {extract} FROM docs WHERE id = ?"

        def get_sqlite_extract():
            cur = sq.cursor()
            for i in probes:
                cur.execute(query, (i,)).fetchone()

        t = best(get_sqlite_extract, repeat)
        gets.append(["sqlite3 json_extract x3", f"{t / n_gets * 1e9:.0f}", ratio(t, ours)])
        if orjson is not None:

            def get_sqlite_loads():
                cur = sq.cursor()
                for i in probes:
                    d = orjson.loads(cur.execute("SELECT body FROM docs WHERE id = ?", (i,)).fetchone()[0])
                    for fld in fields:
                        d.get(fld)

            t = best(get_sqlite_loads, repeat)
            gets.append(["sqlite3 SELECT body + orjson.loads", f"{t / n_gets * 1e9:.0f}", ratio(t, ours)])
        sq.close()

        if lmdb is not None and orjson is not None:
            lpath = os.path.join(tmp, "lmdb")
            env = lmdb.open(lpath, map_size=8 << 30)
            start = time.perf_counter()
            for lo in range(0, n, per_commit):
                with env.begin(write=True) as txn:
                    for i, t in zip(ids[lo : lo + per_commit], texts[lo : lo + per_commit]):
                        txn.put(i.encode(), t)
            lmdb_s = time.perf_counter() - start
            ingest_row("lmdb txn.put", lmdb_s, env.info()["last_pgno"] * env.stat()["psize"])
            probe_keys = [i.encode() for i in probes]

            def get_lmdb():
                with env.begin() as txn:
                    for k in probe_keys:
                        d = orjson.loads(txn.get(k))
                        for fld in fields:
                            d.get(fld)

            t = best(get_lmdb, repeat)
            gets.append(["lmdb txn.get + orjson.loads", f"{t / n_gets * 1e9:.0f}", ratio(t, ours)])
            env.close()

    print(f"Ingest ({per_commit} documents per durable commit):\n")
    print(table(["store", "seconds", "documents/s", "MB on disk"], ingest))
    print(f"\nGet by id + 3 fields ({', '.join(fields)}):\n")
    print(table(["reader", "ns per get", "peer / stele"], gets))
    print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny inputs: a smoke run")
    args = parser.parse_args()
    if not DATA.is_dir():
        print(f"error: shared data {DATA} missing (set STELE_DATA)", file=sys.stderr)
        return 1
    repeat = 1 if args.quick else 3
    limit = 2000 if args.quick else None
    collections_ = QUICK_COLLECTIONS if args.quick else FULL_COLLECTIONS
    print("# stele Python benchmark" + (" (--quick)" if args.quick else "") + "\n")
    print(f"python {sys.version.split()[0]}, orjson {getattr(orjson, '__version__', 'missing')}, "
          f"lmdb {getattr(lmdb, '__version__', 'missing')}, sqlite {sqlite3.sqlite_version}\n")
    sets = [(c, lines(DATA / "collections" / f"{c}.jsonl.zst", limit)) for c in collections_]
    corpus = [] if args.quick else [(f, [(DATA / "json-corpus" / f).read_bytes()]) for f in CORPUS]
    bench_fields(sets + corpus, repeat)
    bench_convert(sets + corpus, repeat)
    if args.quick:
        bench_tables(20_000, 20_000, 1)
    else:
        bench_tables(1_000_000, 500_000, 3)
    geonames = dict(sets).get("geonames-cities") or lines(
        DATA / "collections" / "geonames-cities.jsonl.zst", limit
    )
    if args.quick:
        bench_store(geonames[:2000], 2000, 1)
    else:
        bench_store(geonames[:100_000], 200_000, 3)
    return 0


if __name__ == "__main__":
    sys.exit(main())
