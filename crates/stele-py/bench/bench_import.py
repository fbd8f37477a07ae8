#!/usr/bin/env python3
"""Import benchmark: a JSON Lines file to a database at rest, Stele against SQLite and DuckDB.

Inputs: every collection under `data/collections` (and `collections/mongodb-samples`), and the
files of `data/json-corpus` that are arrays of objects (each element a line). Each is
decompressed or converted to JSON Lines once, into a cache folder, before anything is timed.

For each file, in one run, each engine in a fresh folder, timed from the JSON Lines file to a
database at rest (opened, imported, closed; no separate compact):
  - Stele: `stele.open(dir)[c].import_jsonl(file)`, then `close()` (the Python package, the
    import `stele import` runs; records numbered from 1 as ids);
  - SQLite (`sqlite3`): WAL journal, one table (id INTEGER PRIMARY KEY, body TEXT), every line
    inserted as JSON text in one transaction, then closed (the WAL checkpointed into the file);
  - DuckDB (`duckdb`): `CREATE TABLE t AS SELECT * FROM read_json(file)` (auto schema), closed;
    where the schema detected on read_json's sample fails on the file, again with
    `sample_size=-1` (both attempts timed).
Bytes at rest: every file each engine left in its folder (Stele's close gives back the zeroes
its write-ahead log kept ahead of its records, so they do not count).

Printed: times (best of `--repeat` runs), bytes at rest, zstd -3 of the whole file (the `zstd`
command), ratios, the geometric mean of Stele's time over SQLite's, and the issue's targets
checked per file. `--quick` runs two small files (the smoke run of scripts/check.sh); peers
that are not installed are skipped.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import stele

try:
    import duckdb
except ImportError:  # the smoke run works without peers
    duckdb = None

REPO = Path(__file__).resolve().parents[3]
DATA = Path(os.environ.get("STELE_DATA", REPO.parent / "shared" / "data"))
CACHE = REPO / "target" / "data" / "import-bench"
MB = 1e6


def folder_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def inputs(quick: bool) -> list[tuple[str, Path]]:
    """(name, JSON Lines file) of every input, made once in CACHE."""
    CACHE.mkdir(parents=True, exist_ok=True)
    out = []
    colls = sorted((DATA / "collections").glob("*.jsonl.zst"))
    colls += sorted((DATA / "collections" / "mongodb-samples").glob("*.jsonl.zst"))
    if quick:
        colls = [c for c in colls if c.name.startswith(("mongodb-zips", "github-webhooks"))]
    for src in colls:
        name = src.name.removesuffix(".jsonl.zst")
        if src.parent.name == "mongodb-samples":
            name = "mongodb-" + name
        dst = CACHE / f"{name}.jsonl"
        if not dst.exists():
            with open(dst, "wb") as f:
                subprocess.run(["zstd", "-qdc", str(src)], stdout=f, check=True)
        out.append((name, dst))
    if quick:
        return out
    for src in sorted((DATA / "json-corpus").glob("*.json")):
        try:
            value = json.loads(src.read_bytes())
        except ValueError:
            continue
        if not (isinstance(value, list) and value and all(isinstance(v, dict) for v in value)):
            continue
        dst = CACHE / f"corpus-{src.stem}.jsonl"
        if not dst.exists():
            dst.write_text("".join(json.dumps(v, ensure_ascii=False) + "\n" for v in value))
        out.append((f"corpus-{src.stem}", dst))
    return out


def zstd3(path: Path) -> int:
    proc = subprocess.run(["zstd", "-3", "-c", str(path)], stdout=subprocess.PIPE, check=True)
    return len(proc.stdout)


def run_stele(path: Path, work: Path) -> tuple[float, int]:
    d = work / "stele"
    start = time.perf_counter()
    db = stele.open(d)
    report = db["c"].import_jsonl(path)
    db.close()
    seconds = time.perf_counter() - start
    assert report["imported"] > 0, report
    return seconds, folder_bytes(d)


def run_sqlite(path: Path, work: Path) -> tuple[float, int]:
    f = work / "sqlite.db"
    start = time.perf_counter()
    con = sqlite3.connect(f)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")
    with open(path, encoding="utf-8") as lines:
        with con:
            con.executemany(
                "INSERT INTO t (body) VALUES (?)", ((line,) for line in lines if line.strip())
            )
    con.close()
    seconds = time.perf_counter() - start
    return seconds, sum(folder_bytes(p) for p in work.glob("sqlite.db*"))


def run_duckdb(path: Path, work: Path) -> tuple[float, int] | str:
    """Auto schema from read_json's default sample; where that schema does not fit the rest
    of the file (an error), again with the schema detected over the whole file
    (`sample_size=-1`), the time of both attempts counted, as a user would spend it."""
    f = work / "duck.db"
    start = time.perf_counter()
    for options in ["", ", sample_size=-1"]:
        con = duckdb.connect(str(f))
        try:
            con.execute(f"CREATE TABLE t AS SELECT * FROM read_json('{path}'{options})")
        except duckdb.Error as e:
            con.close()
            for p in work.glob("duck.db*"):
                p.unlink()
            error = f"failed: {str(e).splitlines()[0][:60]}"
            continue
        con.close()
        seconds = time.perf_counter() - start
        return seconds, sum(folder_bytes(p) for p in work.glob("duck.db*"))
    return error


def best(fn, path: Path, repeat: int):
    """The run of `fn` with the best time, each in a fresh folder."""
    results = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(dir=CACHE) as work:
            r = fn(path, Path(work))
        if isinstance(r, str):
            return r
        results.append(r)
    return min(results, key=lambda r: r[0])


def table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    fmt = lambda r: "| " + " | ".join(str(c).rjust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([fmt(header), sep, *[fmt(r) for r in rows]])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="two small files (smoke run)")
    ap.add_argument("--repeat", type=int, default=2, help="runs per engine and file (best kept)")
    ap.add_argument("--out", type=Path, help="also write the table (markdown) to this file")
    args = ap.parse_args()
    repeat = 1 if args.quick else max(1, args.repeat)
    header = [
        "file", "docs", "JSON MB", "zstd-3 MB", "Stele s", "SQLite s", "DuckDB s",
        "Stele MB", "SQLite MB", "DuckDB MB", "Stele / zstd-3", "Stele / JSON",
        "Stele s / DuckDB s", "Stele s / SQLite s", "Stele MB / DuckDB MB",
    ]
    rows, sqlite_ratios, misses = [], [], []
    smaller_than_duck, duck_compared = 0, 0
    for name, path in inputs(args.quick):
        json_bytes = path.stat().st_size
        docs = sum(1 for line in open(path, "rb") if line.strip())
        z = zstd3(path)
        s_time, s_bytes = best(run_stele, path, repeat)
        q_time, q_bytes = best(run_sqlite, path, repeat)
        duck = best(run_duckdb, path, repeat) if duckdb else "not installed"
        sqlite_ratios.append(s_time / q_time)
        if isinstance(duck, str):
            d_time = d_bytes = None
        else:
            d_time, d_bytes = duck
            duck_compared += 1
            smaller_than_duck += s_bytes < d_bytes
            if json_bytes >= 10 * MB and s_time > d_time:
                misses.append(f"{name}: time {s_time:.2f} s > DuckDB {d_time:.2f} s")
        if json_bytes >= 1 * MB and s_bytes > 1.2 * z:
            misses.append(f"{name}: {s_bytes / z:.2f}x zstd -3 at rest (target 1.2x)")
        if s_bytes > json_bytes:
            misses.append(f"{name}: {s_bytes / json_bytes:.2f}x the JSON at rest")
        rows.append([
            name, docs, f"{json_bytes / MB:.2f}", f"{z / MB:.2f}", f"{s_time:.3f}",
            f"{q_time:.3f}", "-" if d_time is None else f"{d_time:.3f}",
            f"{s_bytes / MB:.2f}", f"{q_bytes / MB:.2f}",
            duck if d_bytes is None else f"{d_bytes / MB:.2f}",
            f"{s_bytes / z:.2f}", f"{s_bytes / json_bytes:.2f}",
            "-" if d_time is None else f"{s_time / d_time:.2f}", f"{s_time / q_time:.2f}",
            "-" if d_bytes is None else f"{s_bytes / d_bytes:.2f}",
        ])
        print(f"{name}: done", file=sys.stderr, flush=True)
    out = table(header, rows)
    geo = math.exp(sum(map(math.log, sqlite_ratios)) / len(sqlite_ratios))
    summary = [
        f"geometric mean of Stele s / SQLite s: {geo:.2f} (target <= 1)",
        f"Stele smaller at rest than DuckDB on {smaller_than_duck} of {duck_compared} files",
        "targets missed: " + ("none" if not misses else "; ".join(misses)),
    ]
    print(out)
    print()
    print("\n".join(summary))
    if args.out:
        args.out.write_text(out + "\n\n" + "\n".join(f"- {s}" for s in summary) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
