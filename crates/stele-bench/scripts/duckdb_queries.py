"""DuckDB's side of query_bench: the same scan questions over a `read_json` table.

    python duckdb_queries.py FILE.jsonl CAT NUM COMMON MEDIAN RUNS

COMMON and MEDIAN are JSON values. Prints one JSON object: the milliseconds (median of RUNS)
of each query, and the table's load time. Exits 3 when duckdb is not installed.
"""

import json
import statistics
import sys
import time

try:
    import duckdb
except ImportError:
    sys.exit(3)


def timed(runs, f):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main():
    path, cat, num, common, median, runs = sys.argv[1:7]
    common, median, runs = json.loads(common), json.loads(median), int(runs)
    con = duckdb.connect()
    t = time.perf_counter()
    con.execute("CREATE TABLE t AS SELECT * FROM read_json(?, format='newline_delimited')", [path])
    load_ms = (time.perf_counter() - t) * 1e3
    c, n = '"' + cat.replace('"', '""') + '"', '"' + num.replace('"', '""') + '"'
    out = {"load": load_ms}
    out["count"] = timed(runs, lambda: con.execute(
        f"SELECT count(*) FROM t WHERE {c} = ? AND {n} > ?", [common, median]).fetchall())
    out["group"] = timed(runs, lambda: con.execute(
        f"SELECT {c}, count(*) FROM t GROUP BY {c}").fetchall())
    out["top20"] = timed(runs, lambda: con.execute(
        f"SELECT * FROM t ORDER BY {n} DESC LIMIT 20").fetchall())
    print(json.dumps(out))


main()
