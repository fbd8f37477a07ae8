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

Then millions of small documents (issue 33, "Import at scale"): `npm-packages.jsonl`, one
document a line, `{"name": <package>, "repository": "https://github.com/<package>.git"}` for
each of the 4,499,322 npm package names of `data/keys` (shuffled, so unsorted by name), written
once into the cache folder (never into the repository). Each way runs in a child process of
its own (Python with the stele, sqlite3 and duckdb modules loaded: about 60 MB before any
work), timed inside it, its peak memory its own `VmHWM`, its CPU time from the operating
system; runs alternate between the ways, best of `--repeat`:
  - Stele numbered (`import_jsonl(file)`), and with ids from a field (`id_field="name"`);
  - SQLite as above, and keyed: `id TEXT PRIMARY KEY` (`WITHOUT ROWID`) from
    `json_extract(line, '$.name')`, the line as the body;
  - DuckDB `read_json` as above, and keyed: the table made empty from the file's schema,
    `ALTER TABLE t ADD PRIMARY KEY (name)`, then `INSERT INTO t SELECT * FROM read_json(file)`.
`--quick` takes the first 20,000 names only; `--only-small` skips the collections.
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


def run_stele(path: Path, work: Path, id_field: str | None = None) -> tuple[float, int]:
    d = work / "stele"
    start = time.perf_counter()
    db = stele.open(d)
    report = db["c"].import_jsonl(path, id_field=id_field)
    db.close()
    seconds = time.perf_counter() - start
    assert report["imported"] > 0, report
    return seconds, folder_bytes(d)


def run_sqlite(path: Path, work: Path, key: str | None = None) -> tuple[float, int]:
    """Rows numbered by SQLite, or keyed by the field `key` of each line."""
    f = work / "sqlite.db"
    start = time.perf_counter()
    con = sqlite3.connect(f)
    con.execute("PRAGMA journal_mode=WAL")
    if key is None:
        con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")
        insert = "INSERT INTO t (body) VALUES (?1)"
    else:
        con.execute("CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT) WITHOUT ROWID")
        insert = f"INSERT OR REPLACE INTO t VALUES (json_extract(?1, '$.{key}'), ?1)"
    with open(path, encoding="utf-8") as lines:
        with con:
            con.executemany(insert, ((line,) for line in lines if line.strip()))
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


SMALL_DOCS = "npm-packages"


def small_docs(quick: bool) -> Path:
    """The JSON Lines file of small documents, made once in CACHE from the npm package names
    (the first 20,000 of them when `quick`)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    limit = 20_000 if quick else None
    dst = CACHE / (f"{SMALL_DOCS}-quick.jsonl" if quick else f"{SMALL_DOCS}.jsonl")
    if dst.exists():
        return dst
    src = DATA / "keys" / "npm-package-names.shuffled.txt.zst"
    tmp = dst.with_suffix(".tmp")
    proc = subprocess.Popen(["zstd", "-qdc", str(src)], stdout=subprocess.PIPE)
    written = 0
    with open(tmp, "w", encoding="utf-8") as out:
        for raw in proc.stdout:
            name = raw.decode("utf-8").rstrip("\n")
            if not name:
                continue
            doc = {"name": name, "repository": f"https://github.com/{name.lstrip('@')}.git"}
            out.write(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n")
            written += 1
            if limit is not None and written >= limit:
                break
    proc.stdout.close()
    proc.kill() if limit is not None else proc.wait()
    proc.wait()
    tmp.rename(dst)
    return dst


def run_duckdb_keyed(path: Path, work: Path) -> tuple[float, int]:
    f = work / "duck.db"
    start = time.perf_counter()
    con = duckdb.connect(str(f))
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_json('{path}') LIMIT 0")
    con.execute("ALTER TABLE t ADD PRIMARY KEY (name)")
    con.execute(f"INSERT INTO t SELECT * FROM read_json('{path}')")
    con.close()
    seconds = time.perf_counter() - start
    return seconds, sum(folder_bytes(p) for p in work.glob("duck.db*"))


WAYS = {
    "Stele numbered": run_stele,
    "Stele, ids from name": lambda path, work: run_stele(path, work, id_field="name"),
    "SQLite": run_sqlite,
    "SQLite, name as key": lambda path, work: run_sqlite(path, work, key="name"),
    "DuckDB read_json": run_duckdb,
    "DuckDB, name as key": run_duckdb_keyed,
}


def peak_mb() -> float:
    """This process's peak resident memory since it started (`VmHWM`: unlike the child's
    `ru_maxrss`, which Linux carries over from the parent it was forked from)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024 / MB
    return float("nan")


def child(way: str, path: Path, work: Path) -> None:
    """Runs one way in this process (a child of the benchmark) and prints its result."""
    r = WAYS[way](path, work)
    if isinstance(r, str):
        print(json.dumps(r))
    else:
        print(json.dumps({"seconds": r[0], "bytes": r[1], "peak_mb": peak_mb()}))


def run_child(way: str, path: Path) -> dict | str:
    """One run of `way` in a child process, in a fresh folder: its time, bytes and peak
    memory, and its CPU seconds from the operating system."""
    with tempfile.TemporaryDirectory(dir=CACHE) as work:
        proc = subprocess.Popen(
            [sys.executable, __file__, "--child", way, str(path), work],
            stdout=subprocess.PIPE,
        )
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        return f"failed (exit {proc.returncode})"
    result = json.loads(out)
    if isinstance(result, str):
        return result
    result["cpu"] = usage.ru_utime + usage.ru_stime
    return result


def small_docs_run(quick: bool, repeat: int) -> str:
    path = small_docs(quick)
    docs = sum(1 for line in open(path, "rb") if line.strip())
    json_bytes = path.stat().st_size
    z = zstd3(path)
    ways = [w for w in WAYS if duckdb or not w.startswith("DuckDB")]
    runs: dict[str, list] = {w: [] for w in ways}
    for _ in range(repeat):
        for way in ways:  # alternating, so that a change of load hits every way alike
            runs[way].append(run_child(way, path))
            print(f"{SMALL_DOCS} {way}: done", file=sys.stderr, flush=True)
    best_of = {}
    for way, rs in runs.items():
        ok = [r for r in rs if not isinstance(r, str)]
        best_of[way] = min(ok, key=lambda r: r["seconds"]) if ok else rs[0]
    duck = best_of.get("DuckDB read_json")
    duck_s = duck["seconds"] if isinstance(duck, dict) else None
    numbered = best_of["Stele numbered"]
    rows = []
    for way, r in best_of.items():
        if isinstance(r, str):
            rows.append([way, r, "-", "-", "-", "-", "-", "-"])
            continue
        rows.append([
            way, f"{r['seconds']:.2f}", f"{r['cpu']:.2f}",
            "-" if duck_s is None else f"{r['seconds'] / duck_s:.2f}",
            f"{r['bytes'] / MB:.1f}", f"{r['bytes'] / z:.2f}", f"{r['peak_mb']:.0f}",
            f"{r['seconds'] / numbered['seconds']:.2f}" if isinstance(numbered, dict) else "-",
        ])
    head = [
        f"{SMALL_DOCS}: {docs} documents, {json_bytes / MB:.1f} MB of JSON, "
        f"zstd -3 {z / MB:.1f} MB (best of {repeat}, ways alternating)",
        "",
    ]
    out = table(
        ["way", "s", "CPU s", "x DuckDB", "at rest MB", "x zstd -3", "peak MB", "x Stele numbered"],
        rows,
    )
    checks = []
    keyed = best_of["Stele, ids from name"]
    if isinstance(numbered, dict) and isinstance(keyed, dict):
        checks.append(f"Stele numbered / DuckDB read_json time: "
                      + ("-" if duck_s is None else f"{numbered['seconds'] / duck_s:.2f}")
                      + " (target <= 1)")
        checks.append(f"Stele numbered at rest / zstd -3: {numbered['bytes'] / z:.2f} (target <= 1.2)")
        checks.append(f"ids from name / numbered: time {keyed['seconds'] / numbered['seconds']:.2f} "
                      f"(target <= 1.3), bytes {keyed['bytes'] / numbered['bytes']:.2f} (target <= 1.10)")
        dk = best_of.get("DuckDB, name as key")
        if isinstance(dk, dict):
            checks.append(f"ids from name / DuckDB with the key, time: "
                          f"{keyed['seconds'] / dk['seconds']:.2f} (target <= 1)")
    return "\n".join(head) + out + "\n\n" + "\n".join(checks)


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
    ap.add_argument("--only-small", action="store_true", help="the small documents only")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]), Path(args.child[2]))
        return 0
    repeat = 1 if args.quick else max(1, args.repeat)
    header = [
        "file", "docs", "JSON MB", "zstd-3 MB", "Stele s", "SQLite s", "DuckDB s",
        "Stele MB", "SQLite MB", "DuckDB MB", "Stele / zstd-3", "Stele / JSON",
        "Stele s / DuckDB s", "Stele s / SQLite s", "Stele MB / DuckDB MB",
    ]
    rows, sqlite_ratios, misses = [], [], []
    smaller_than_duck, duck_compared = 0, 0
    for name, path in [] if args.only_small else inputs(args.quick):
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
    out, summary = "", []
    if rows:
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
    small = small_docs_run(args.quick, repeat)
    print()
    print(small)
    if args.out:
        args.out.write_text(
            out + "\n\n" + "\n".join(f"- {s}" for s in summary) + "\n\n" + small + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
