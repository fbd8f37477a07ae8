#!/usr/bin/env python3
"""Arrow benchmark (issue 35): a Stele collection to Arrow against DuckDB's `read_json` of the
same JSON Lines file, in one run.

For each collection under `data/collections` of 10 MB or more (uncompressed), decompressed once
into a cache folder, and each file of `data/json-corpus` that is an array of objects (each
element a line, as bench_import.py picks them), imported once into a Stele database (not
timed), best of `--repeat`:
  - three fields (the first three root properties of the first document):
    `pyarrow.table(coll.to_arrow(fields=[..]))` against DuckDB
    `SELECT a, b, c FROM read_json(file)` fetched as an Arrow table;
  - every field: `pyarrow.table(coll.to_arrow())` against `SELECT * FROM read_json(file)`;
  - a group-by count over the first field: `duckdb.sql("select a, count(*) from r group by a")`
    over a Stele reader of that one field, against the same query over `read_json(file)`;
  - Parquet export: `coll.to_parquet(x.parquet)` (in this process, as DuckDB's COPY runs
    in it) against DuckDB `COPY (SELECT * FROM read_json(file)) TO 'x.parquet'`; and, when
    the `stele` command is built (`target/release/stele`) and `/usr/bin/time` is there to
    measure its peak memory, `stele export DB c -o x.parquet` (a process: start, open, read,
    write; its peak memory from the OS) against the same COPY;
  - Parquet import of that file: `stele import DB2 c x.parquet` (a process, a new database
    each time) against DuckDB `CREATE TABLE t AS SELECT * FROM read_parquet('x.parquet')`
    in memory, and into a database file closed after it (checkpointed: compressed and
    durable, as Stele's import lands).
Each Stele timing includes `to_arrow`, which infers the schema from every document (one more
pass), as DuckDB's `read_json` infers its own from a sample. Printed: seconds and the ratio
DuckDB / Stele (above 1: Stele faster), then a Markdown table of all of it. Last, the peak
memory of `stele export -o x.parquet` of debian-packages and of collections of `--copies`
and twice as many copies of it (every document once per copy, numbered ids: 6 copies are
318 MB of JSON, above the 256 MiB memory budget of an import), resident (mapped tables
included) and anonymous: bounded by the batch if the peaks stay alike.
`--quick` runs the first 5,000 lines of one collection (the smoke run of scripts/check.sh).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import stele

try:
    import duckdb
    import pyarrow as pa
except ImportError:  # the smoke run works without peers
    duckdb = pa = None

REPO = Path(__file__).resolve().parents[3]
DATA = Path(os.environ.get("STELE_DATA", REPO.parent / "shared" / "data"))
CACHE = REPO / "target" / "data"


def jsonl(name: str, lines: int | None) -> Path:
    """The collection `name` decompressed (its first `lines` lines) into the cache folder."""
    CACHE.mkdir(parents=True, exist_ok=True)
    out = CACHE / (name.replace("/", "__").removesuffix(".zst") + (f".{lines}" if lines else ""))
    if not out.exists():
        text = subprocess.run(
            ["zstd", "-dc", str(DATA / "collections" / name)], capture_output=True, check=True
        ).stdout
        if lines:
            text = b"\n".join(text.split(b"\n")[:lines]) + b"\n"
        out.write_bytes(text)
    return out


def corpus_arrays() -> list[tuple[str, Path]]:
    """The files of `data/json-corpus` that are arrays of objects, each as JSON Lines (an
    element a line) in the cache folder."""
    out = []
    for src in sorted((DATA / "json-corpus").glob("*.json")):
        try:
            value = json.loads(src.read_bytes())
        except ValueError:
            continue
        if not (isinstance(value, list) and value and all(isinstance(v, dict) for v in value)):
            continue
        CACHE.mkdir(parents=True, exist_ok=True)
        dst = CACHE / f"corpus-{src.stem}.jsonl"
        if not dst.exists():
            dst.write_text("".join(json.dumps(v, ensure_ascii=False) + "\n" for v in value))
        out.append((f"corpus-{src.stem}", dst))
    return out


def best(repeat: int, f) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


TABLE: list[tuple[str, str, float, float]] = []
STELE_CLI = REPO / "target" / "release" / "stele"


def export_parquet(db_dir: Path, out: Path) -> int:
    """`stele export DB c -o out` in a child process; returns its own peak memory in KiB,
    as `/usr/bin/time` reports it (the child's `ru_maxrss` seen from Python would count the
    pages it shared with this process between its fork and its exec)."""
    return export_parquet_memory(db_dir, out)[0]


def export_parquet_memory(db_dir: Path, out: Path) -> tuple[int, int]:
    """`export_parquet`, returning (peak resident KiB from `/usr/bin/time`, the largest
    anonymous resident KiB seen polling `/proc/PID/status` every 5 ms). The first counts the
    memory-mapped tables' pages, which the OS drops when it needs them; the second is the
    process's own memory (heap: batches, the row group being encoded, the block cache)."""
    proc = subprocess.Popen(
        ["/usr/bin/time", "-f", "%M", str(STELE_CLI), "export", str(db_dir), "c", "-o", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    anon_kib = 0
    child = None
    while proc.poll() is None:
        if child is None:
            try:
                kids = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
                child = int(kids[0]) if kids else None
            except OSError:
                pass
        if child is not None:
            try:
                for line in Path(f"/proc/{child}/status").read_text().splitlines():
                    if line.startswith("RssAnon:"):
                        anon_kib = max(anon_kib, int(line.split()[1]))
            except OSError:
                pass
        time.sleep(0.005)
    _, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"stele export failed: {err.strip()[-300:]}")
    return int(err.strip().splitlines()[-1]), anon_kib


def duckdb_persistent(pq: Path, work: Path) -> None:
    """DuckDB reading the Parquet file into a table of a database file, closed (which
    checkpoints it: compressed, durable), as `stele import` lands a database."""
    f = work / "duck-import.db"
    for leftover in (f, work / "duck-import.db.wal"):
        leftover.unlink(missing_ok=True)
    con = duckdb.connect(str(f))
    con.sql(f"create table t as select * from read_parquet('{pq}')")
    con.close()


def import_parquet(pq: Path, work: Path) -> None:
    """`stele import` of a Parquet file into a new database."""
    target = Path(tempfile.mkdtemp(dir=work)) / "db"
    subprocess.run([str(STELE_CLI), "import", str(target), "c", str(pq), "--id-field", "_id"],
                   check=True, capture_output=True)


def run(name: str, path: Path, repeat: int, work: Path) -> None:
    db_dir = work / name.replace("/", "_")
    db = stele.open(db_dir)
    coll = db["c"]
    coll.import_jsonl(path)
    # At rest, as a database is opened by a later process (nothing left in the log).
    db.close()
    db = stele.open(db_dir)
    coll = db["c"]
    first = coll.to_arrow(batch_rows=1).columns[1:4]
    rows = len(coll)
    print(f"\n{name}: {rows} documents, {path.stat().st_size / 1e6:.1f} MB; fields {first}")
    if pa is None:
        pa_rows = sum(1 for _ in coll.to_arrow(fields=first).columns)
        print(f"  (pyarrow/duckdb not installed: reader made, {pa_rows} columns)")
        return
    cols = ", ".join(quote(c) for c in first)
    src = f"read_json('{path}')"
    cases = [
        (
            "3 fields",
            lambda: pa.table(coll.to_arrow(fields=first)),
            lambda: duckdb.sql(f"select {cols} from {src}").to_arrow_table(),
        ),
        (
            "every field",
            lambda: pa.table(coll.to_arrow()),
            lambda: duckdb.sql(f"select * from {src}").to_arrow_table(),
        ),
    ]
    key = quote(first[0])
    reader = coll.to_arrow(fields=first[:1])
    cases.append(
        (
            "group-by count",
            lambda reader=reader: duckdb.sql(f"select {key}, count(*) from reader group by 1").fetchall(),
            lambda: duckdb.sql(f"select {key}, count(*) from {src} group by 1").fetchall(),
        )
    )
    # Warm-up: pyarrow's first table takes ~0.6 s of its own set-up, DuckDB's first query too.
    pa.table(coll.to_arrow(fields=first[:1], batch_rows=10))
    duckdb.sql("select 1").fetchall()
    duck_copy = lambda: duckdb.sql(f"copy (select * from {src}) to '{work / 'd.parquet'}'")
    # In this process, as DuckDB's COPY runs in it.
    cases.append(("parquet export", lambda: coll.to_parquet(work / "p.parquet"), duck_copy))
    if STELE_CLI.exists() and Path("/usr/bin/time").exists():
        cases.append(
            (
                "parquet export, CLI process",
                lambda: export_parquet(db_dir, work / "s.parquet"),
                duck_copy,
            )
        )
        pq = work / "s.parquet"
        cases.append(
            (
                "parquet import",
                lambda: import_parquet(pq, work),
                lambda: duckdb.connect().sql(f"create table t as select * from read_parquet('{pq}')"),
            )
        )
        cases.append(
            (
                "parquet import, DuckDB to a file",
                lambda: import_parquet(pq, work),
                lambda: duckdb_persistent(pq, work),
            )
        )
    short = name.removesuffix(".jsonl.zst")
    for what, ours, theirs in cases:
        try:
            s = best(repeat, ours)
            d = best(repeat, theirs)
            print(f"  {what:<15} stele {s:8.3f} s   duckdb {d:8.3f} s   ratio {d / s:5.2f}x")
            TABLE.append((short, what, s, d))
        except Exception as e:  # a peer refusing a file is reported, not fatal
            print(f"  {what:<15} failed: {str(e).splitlines()[0][:200]}")
    if STELE_CLI.exists() and Path("/usr/bin/time").exists():
        kib = export_parquet(db_dir, work / "s.parquet")
        print(f"  parquet export peak memory (VmHWM of the stele process): {kib / 1024:.0f} MiB")
    db.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: 5,000 lines of one file")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--copies", type=int, default=6,
                    help="copies of debian-packages in the export-memory collection")
    ap.add_argument("--only", action="append", default=[], metavar="NAME",
                    help="run only the inputs whose name contains NAME (repeatable); "
                         "skips the export-memory runs")
    args = ap.parse_args()
    names = (
        ["geonames-cities.jsonl.zst"]
        if args.quick
        else [
            "geonames-cities.jsonl.zst",
            "emojibase.jsonl.zst",
            "mdn-compat-features.jsonl.zst",
            "debian-packages.jsonl.zst",
        ]
    )
    print(f"stele {stele.__version__ if hasattr(stele, '__version__') else ''} cores {os.cpu_count()}"
          f" load {os.getloadavg()[0]:.2f}")
    if args.only:
        names = [n for n in names if any(o in n for o in args.only)]
    inputs = [(name, jsonl(name, 5000 if args.quick else None)) for name in names]
    if not args.quick:
        inputs += corpus_arrays()
    if args.only:
        inputs = [(n, p) for n, p in inputs if any(o in n for o in args.only)]
    with tempfile.TemporaryDirectory() as work:
        for name, path in inputs:
            run(name, path, 1 if args.quick else args.repeat, Path(work))
        if not args.quick and not args.only and STELE_CLI.exists() and Path("/usr/bin/time").exists():
            export_memory(args.copies, Path(work))
    print(f"\nload {os.getloadavg()[0]:.2f}")
    print("\n| collection | what | Stele s | DuckDB s | DuckDB / Stele |")
    print("|---|---|---:|---:|---:|")
    for short, what, s, d in TABLE:
        print(f"| {short} | {what} | {s:.3f} | {d:.3f} | {d / s:.2f} |")


def export_memory(copies: int, work: Path) -> None:
    """Peak memory of `stele export -o x.parquet`: debian-packages, then `copies` and
    2 x `copies` copies of it in one collection each (imported by `stele import`, not timed):
    bounded by the batch if the peaks stay alike while the collection grows."""
    one = jsonl("debian-packages.jsonl.zst", None)
    text = one.read_bytes()
    sources = [("debian-packages", one)]
    for n in (copies, 2 * copies):
        many = work / f"debian-x{n}.jsonl"
        with open(many, "wb") as out:
            for _ in range(n):
                out.write(text)
        sources.append((f"debian-packages x{n}", many))
    print(f"\nexport peak memory (up to {2 * copies} copies: "
          f"{sources[-1][1].stat().st_size / 1e6:.0f} MB of JSON)")
    for label, src in sources:
        db_dir = work / ("mem-" + label.replace(" ", "-"))
        subprocess.run([str(STELE_CLI), "import", str(db_dir), "c", str(src)],
                       check=True, capture_output=True)
        t = time.perf_counter()
        kib, anon = export_parquet_memory(db_dir, work / "m.parquet")
        secs = time.perf_counter() - t
        rows = sum(1 for _ in open(src, "rb"))
        size = (work / "m.parquet").stat().st_size
        print(f"  {label:<22} {rows:>8} documents  export {secs:6.2f} s  "
              f"peak {kib / 1024:6.0f} MiB  anonymous {anon / 1024:6.0f} MiB  "
              f"parquet {size / 1e6:6.1f} MB")
        MEMORY.append((label, rows, src.stat().st_size, secs, kib, anon))
        shutil.rmtree(db_dir)
        if src != one:
            src.unlink()
    print("\n| collection | documents | JSON MB | export s | peak MiB | anonymous peak MiB |")
    print("|---|--:|--:|--:|--:|--:|")
    for label, rows, size, secs, kib, anon in MEMORY:
        print(f"| {label} | {rows} | {size / 1e6:.0f} | {secs:.2f} | {kib / 1024:.0f} | {anon / 1024:.0f} |")


MEMORY: list[tuple[str, int, int, float, int, int]] = []


if __name__ == "__main__":
    main()
