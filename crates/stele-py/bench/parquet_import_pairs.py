#!/usr/bin/env python3
"""Two `stele` binaries' `import DB c x.parquet --id-field _id` and DuckDB reading the same
file into a table of a database file it closes, in turn (old, new, DuckDB; N rounds), for
comparing builds on a shared machine: CPU (user + sys) of each child from
getrusage(RUSAGE_CHILDREN), DuckDB's in this process from RUSAGE_SELF, and wall times (a
direction only under load). Medians and ratios printed per file.

    python parquet_import_pairs.py OLD_STELE NEW_STELE a.parquet,b.parquet 5
"""
from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import duckdb

OLD, NEW = sys.argv[1], sys.argv[2]
files = sys.argv[3].split(",")
pairs = int(sys.argv[4])
work = tempfile.mkdtemp()

def child(binary, pq):
    target = tempfile.mkdtemp(dir=work) + "/db"
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([binary, "import", target, "c", pq, "--id-field", "_id"], check=True, capture_output=True)
    w = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    shutil.rmtree(os.path.dirname(target))
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), w

def duck(pq):
    f = work + "/duck.db"
    for x in (f, f + ".wal"):
        if os.path.exists(x):
            os.unlink(x)
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    con = duckdb.connect(f)
    con.sql(f"create table t as select * from read_parquet('{pq}')")
    con.close()
    w = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), w

duckdb.sql("select 1").fetchall()
for pq in files:
    res = {"old": [], "new": [], "duck": []}
    for i in range(pairs):
        res["old"].append(child(OLD, pq))
        res["new"].append(child(NEW, pq))
        res["duck"].append(duck(pq))
    name = os.path.basename(pq)
    for k, v in res.items():
        cpu = [c for c, _ in v]; wall = [w for _, w in v]
        print(f"{name} {k:4} cpu " + " ".join(f"{c:.3f}" for c in cpu) + f" median {statistics.median(cpu):.3f} | wall " + " ".join(f"{w:.3f}" for w in wall) + f" median {statistics.median(wall):.3f}")
    mo = statistics.median(c for c, _ in res["old"]); mn = statistics.median(c for c, _ in res["new"])
    wo = statistics.median(w for _, w in res["old"]); wn = statistics.median(w for _, w in res["new"]); wd = statistics.median(w for _, w in res["duck"])
    print(f"{name} new/old cpu {mn/mo:.3f} wall {wn/wo:.3f}; duck/new wall {wd/wn:.3f}, duck/old wall {wd/wo:.3f}; load {os.getloadavg()[0]:.1f}")
shutil.rmtree(work)
