#!/usr/bin/env python3
"""Table sets built four ways on one machine, side by side, from the same TSV of keys:

  one     `stele table build` in one process (one table; the baseline)
  shards  `stele table build --shards N` (one sort, its stream cut into N tables, then the manifest)
  dask    stele.dask.build_table_set on a distributed.LocalCluster of W worker processes
  spark   stele.spark.write_table_set on Spark local[W]

For each: wall time, peak resident memory of the largest process (the builder, a worker, or
the JVM), bytes on disk; then warm and cold random gets on each set against the one table
(`set_bench`, in Rust). Keys derive from the shared 4.5M npm names: key i is name[i % 4.5M]
with `~<round>` after the first round; value is i in decimal. Ratios are to `one` in the same
run.

  python crates/stele-py/bench/bench_sets.py --keys 10M,30M,100M      # the full run
  python crates/stele-py/bench/bench_sets.py --quick                  # smoke run (CI)

Needs `cargo build --release -p stele-cli -p stele-bench --bin set_bench` (done here),
dask[distributed], pyspark 4, Java 17 and GNU time (/usr/bin/time, Debian package `time`).
"""

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
NPM = "keys/npm-package-names.shuffled.txt.zst"


def data_dir():
    return Path(os.environ.get("STELE_DATA", REPO.parent / "shared" / "data"))


def count(text):
    """'10M' -> 10_000_000, '200k' -> 200_000."""
    text = text.strip().lower()
    mult = {"k": 1_000, "m": 1_000_000, "g": 1_000_000_000}.get(text[-1:], 1)
    return int(float(text.rstrip("kmg")) * mult)


def make_keys(n, path):
    """Writes n `key<TAB>value` lines (deterministic) unless the file is there already."""
    if path.exists():
        return
    names = subprocess.run(["zstd", "-dc", str(data_dir() / NPM)], check=True, capture_output=True).stdout
    names = names.decode().split("\n")
    names = [x for x in names if x]
    tmp = path.with_suffix(".partial")
    with open(tmp, "w") as out:
        i = 0
        rnd = 0
        while i < n:
            take = min(len(names), n - i)
            suffix = f"~{rnd}" if rnd else ""
            out.write("".join(f"{names[j]}{suffix}\t{i + j}\n" for j in range(take)))
            i += take
            rnd += 1
    tmp.rename(path)


def _tree_rss(root):
    """RSS in bytes of every live process descending from pid `root` (from /proc)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                parents[int(entry)] = int(fields[1])
            except OSError:
                continue
    out = {}
    for pid in parents:
        p = pid
        while p in parents and p != root and p > 1:
            p = parents[p]
        if p == root:
            try:
                with open(f"/proc/{pid}/status") as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            out[pid] = int(line.split()[1]) * 1024
            except OSError:
                continue
    return out


def run(cmd):
    """Runs cmd; returns (seconds, peak RSS in bytes of the largest single process of its
    tree, stdout, CPU seconds). CPU is user + system time as GNU time counts it (the command
    and the children it reaped): on a loaded machine it compares builders where wall time
    cannot. The peak is the larger of GNU time's (wait4: the child and the children it
    reaped) and a sample of the live tree every 0.2 s (catches processes nobody reaps, such as
    Spark's JVM). A child forked from this script would inherit its high-water mark, hence
    GNU time as the parent."""
    started = time.perf_counter()
    timer = ["/usr/bin/time", "-f", "STELE_MAXRSS_KB %M\nSTELE_CPU_S %U %S"] if os.path.exists("/usr/bin/time") else []
    proc = subprocess.Popen([*timer, *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sampled = 0
    got = {}

    def drain(name, stream):
        got[name] = stream.read()

    readers = [
        threading.Thread(target=drain, args=("out", proc.stdout)),
        threading.Thread(target=drain, args=("err", proc.stderr)),
    ]
    for r in readers:
        r.start()
    while proc.poll() is None:
        sizes = _tree_rss(proc.pid)
        sampled = max([sampled, *sizes.values()])
        time.sleep(0.2)
    for r in readers:
        r.join()
    seconds = time.perf_counter() - started
    out, err = got["out"], got["err"].decode(errors="replace")
    if proc.returncode != 0:
        sys.stderr.write(err[-4000:])
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(map(str, cmd))}")
    kb = [line.split()[1] for line in err.splitlines() if line.startswith("STELE_MAXRSS_KB ")]
    timed = int(kb[-1]) * 1024 if kb else 0
    cpu = [line.split()[1:] for line in err.splitlines() if line.startswith("STELE_CPU_S ")]
    cpu_s = float(cpu[-1][0]) + float(cpu[-1][1]) if cpu else float("nan")
    return seconds, max(timed, sampled), out.decode(), cpu_s


def folder_bytes(path):
    return sum(f.stat().st_size for f in Path(path).iterdir() if f.is_file())


def build_dask(tsv, out, shards, workers, memory):
    import dask.dataframe as dd
    import distributed

    import stele.dask

    # Each worker may hold a shuffled partition in pandas, its Arrow copy and a sorter of
    # `memory` bytes: 3 GiB per worker is the stated budget.
    with distributed.LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None, memory_limit="3GiB"
    ) as cluster, distributed.Client(cluster):
        ddf = dd.read_csv(
            tsv,
            sep="\t",
            header=None,
            names=["k", "v"],
            dtype="string[pyarrow]",
            blocksize="64MB",
            keep_default_na=False,
            na_filter=False,
            quoting=csv.QUOTE_NONE,
        )
        s = stele.dask.build_table_set(ddf, out, key="k", value="v", shards=shards, memory=memory)
    print(json.dumps({"path": str(s.path), "entries": len(s), "shards": len(s.shards())}))


def build_spark(tsv, out, shards, workers, memory):
    from pyspark.sql import SparkSession

    import stele.spark

    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (
        SparkSession.builder.master(f"local[{workers}]")
        .appName("stele-bench-sets")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.shuffle.partitions", str(shards))
        .getOrCreate()
    )
    try:
        df = spark.read.csv(str(tsv), sep="\t", schema="k string, v string", quote="", escape="")
        s = stele.spark.write_table_set(df, out, key="k", value="v", shards=shards, memory=memory)
        print(json.dumps({"path": str(s.path), "entries": len(s), "shards": len(s.shards())}))
    finally:
        spark.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", default="10M,30M,100M", help="key counts, e.g. 10M,30M,100M")
    ap.add_argument("--engines", default="one,shards,dask,spark")
    ap.add_argument("--workers", type=int, default=2, help="worker processes (cores)")
    ap.add_argument("--shards", type=int, default=0, help="shards per set (default: 1 per 4M keys, at least --workers)")
    ap.add_argument("--memory", default="1GiB", help="budget of the one-process build; workers get a share")
    ap.add_argument("--work", default="/tmp/stele-bench-sets", help="scratch folder (keys and outputs)")
    ap.add_argument("--quick", action="store_true", help="200k keys, a smoke run")
    ap.add_argument("--worker-engine", nargs=6, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker_engine:
        engine, tsv, out, shards, workers, memory = args.worker_engine
        f = build_dask if engine == "dask" else build_spark
        f(tsv, out, int(shards), int(workers), int(memory))
        return
    units = {"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}
    m = args.memory.lower()
    budget = int(m[:-3]) * units[m[-3:]] if m[-3:] in units else int(m)
    sizes = [200_000] if args.quick else [count(x) for x in args.keys.split(",")]
    subprocess.run(
        ["cargo", "build", "--release", "--locked", "-q", "-p", "stele-cli", "-p", "stele-bench", "--bin", "stele", "--bin", "set_bench"],
        check=True,
        cwd=REPO,
    )
    stele = str(TARGET / "release" / "stele")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    engines = args.engines.split(",")
    rows = []
    for n in sizes:
        tsv = work / f"keys-{n}.tsv"
        t0 = time.perf_counter()
        make_keys(n, tsv)
        raw = tsv.stat().st_size
        shards = args.shards or max(args.workers, n // 4_000_000)
        share = budget // args.workers
        sys.stderr.write(f"== {n} keys, {raw / 1e9:.2f} GB of TSV ({time.perf_counter() - t0:.0f} s to make), {shards} shards\n")
        results = {}
        for engine in engines:
            out = work / f"{engine}-{n}"
            shutil.rmtree(out, ignore_errors=True)
            if engine == "one":
                cmd = [stele, "table", "build", str(tsv), "--format", "tsv", "--memory", str(budget), "-o", str(out), "--json"]
            elif engine == "shards":
                cmd = [stele, "table", "build", str(tsv), "--format", "tsv", "--memory", str(budget), "-o", str(out), "--json", "--shards", str(shards)]
            else:
                cmd = [sys.executable, __file__, "--worker-engine", engine, str(tsv), str(out), str(shards), str(args.workers), str(share)]
            sys.stderr.write(f"   {engine} ...\n")
            seconds, rss, stdout, cpu_s = run(cmd)
            info = json.loads(stdout.strip().splitlines()[-1])
            results[engine] = {"seconds": seconds, "cpu": cpu_s, "rss": rss, "bytes": folder_bytes(out), "path": info["path"], "entries": info["entries"]}
            if info["entries"] != n and engine != "one":
                raise SystemExit(f"{engine} built {info['entries']} entries of {n}")
        base = results.get("one")
        for engine, r in results.items():
            ratio = r["seconds"] / base["seconds"] if base else float("nan")
            cpu_ratio = r["cpu"] / base["cpu"] if base else float("nan")
            rows.append((n, raw, engine, r["seconds"], ratio, r["cpu"], cpu_ratio, r["rss"], r["bytes"]))
        if base:
            for engine, r in results.items():
                if engine == "one":
                    continue
                lookups = "20000" if args.quick else "1000000"
                cold = "200" if args.quick else "2000"
                many = ["--many-shards", "10000"] if (not args.quick and n == sizes[-1] and engine == "shards") else []
                _, _, table, _ = run([str(TARGET / "release" / "set_bench"), "--table", base["path"], "--set", r["path"], "--lookups", lookups, "--cold", cold, *many])
                print(f"\n#### Reads: {engine} set of {n} keys against one table\n\n{table}")
    print("\n#### Builds (ratio: wall time over `one` in the same run)\n")
    print("| keys | TSV GB | engine | wall s | / one | CPU s (user + sys, reaped processes) | / one | peak RSS of the largest process, MiB | on disk, MB |")
    print("|--:|--:|---|--:|--:|--:|--:|--:|--:|")
    for n, raw, engine, s, ratio, cpu, cpu_ratio, rss, b in rows:
        print(f"| {n:,} | {raw / 1e9:.2f} | {engine} | {s:.1f} | {ratio:.2f} | {cpu:.1f} | {cpu_ratio:.2f} | {rss / 2**20:.0f} | {b / 1e6:.1f} |")
    one = {n: s for n, _, e, s, *_ in rows if e == "one"}
    if len(one) >= 2:
        ns = sorted(one)
        lo, hi = ns[0], ns[-1]
        print(f"\nLinearity (one process): {hi:,} keys took {one[hi] / one[lo]:.2f}x the time of {lo:,} ({hi / lo:.1f}x the keys).")


if __name__ == "__main__":
    main()
