#!/usr/bin/env python3
"""RocksDB peer of the sorted-table benchmark (crates/stele-bench, `table_bench`).

Driven by `table_bench`, one phase per process, with the same arguments as its `run-one`
command; prints one `RESULT <json>` line with the same fields. RocksDB comes from the
prebuilt `rocksdict` wheel (see setup-peers.sh); build = SstFileWriter over the sorted
pairs, then ingest_external_file into a new database.

Python's own cost is in every figure: one interpreter call per put and per get. The build
result carries `python_loop_s`, the time of the same input loop without the writer calls,
and the read result the cost of a timed call to a no-op, so readers can see that share.
"""

import argparse
import importlib.metadata
import json
import os
import resource
import statistics
import struct
import sys
import threading
import time

import rocksdict

MASK = (1 << 64) - 1


class SplitMix64:
    """The generator of table_bench's data.rs, so both sides draw the same lookups."""

    def __init__(self, seed):
        self.s = seed & MASK

    def next_u64(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & MASK
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(self, n):
        return (self.next_u64() * n) >> 64


def lookups(entries, count, seed):
    r = SplitMix64(seed)
    return [r.below(entries) for _ in range(count)]


def status_bytes(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(field + " not found")


def storage_read_bytes():
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    raise RuntimeError("read_bytes not found")


def files_under(path):
    out = []
    for root, _dirs, files in os.walk(path):
        out.extend(os.path.join(root, f) for f in files)
    return sorted(out)


def path_bytes(path):
    return sum(os.path.getsize(f) for f in files_under(path))


def evict(path):
    total = 0
    for f in files_under(path):
        fd = os.open(f, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            total += os.fstat(fd).st_size
        finally:
            os.close(fd)
    return total


def read_keys(set_dir):
    with open(os.path.join(set_dir, "keys.txt"), "rb") as f:
        return f.read().split(b"\n")[:-1]


def sorted_pairs(set_dir):
    pack = struct.Struct("<Q").pack
    with open(os.path.join(set_dir, "sorted.tsv"), "rb", buffering=1 << 20) as f:
        for line in f:
            k, _, row = line[:-1].rpartition(b"\t")
            yield k, pack(int(row))


def options():
    opt = rocksdict.Options(raw_mode=True)
    return opt


def build(args):
    with open(os.path.join(args.set_dir, "sorted.tsv"), "rb") as f:
        while f.read(1 << 20):
            pass
    rss_before = status_bytes("VmRSS")
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    os.makedirs(args.path, exist_ok=True)
    sst = os.path.join(args.path, "bulk.sst")
    w = rocksdict.SstFileWriter(options=options())
    w.open(sst)
    n = 0
    for k, v in sorted_pairs(args.set_dir):
        w[k] = v
        n += 1
    w.finish()
    db_path = os.path.join(args.path, "db")
    opt = options()
    opt.create_if_missing(True)
    db = rocksdict.Rdict(db_path, options=opt)
    ingest = rocksdict.IngestExternalFileOptions()
    ingest.set_move_files(True)
    db.ingest_external_file([sst], ingest)
    db.flush_wal(True)
    db.close()
    build_s = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    peak = status_bytes("VmHWM")
    t1 = time.perf_counter()
    m = 0
    for k, v in sorted_pairs(args.set_dir):
        m += 1
    loop_s = time.perf_counter() - t1
    print(
        "RESULT "
        + json.dumps(
            {
                "build_s": build_s,
                "cpu_s": cpu_s,
                "peak_rss_bytes": peak,
                "rss_before_bytes": rss_before,
                "file_bytes": path_bytes(db_path),
                "entries": n,
                "path": db_path,
                "python_loop_s": loop_s,
                "note": "rocksdict %s: SstFileWriter (default options, raw mode) + "
                "ingest_external_file (move), fsync of the WAL; the Python loop that reads "
                "and packs the pairs takes %.2f s alone (timed apart, without the writer)"
                % (importlib.metadata.version("rocksdict"), loop_s),
            }
        )
    )


# Readers get a 1 GiB block cache, like redb's default and the fjall runs, so that a warm
# get finds its block in the store's cache (RocksDB's default is 8 MiB).
READ_CACHE_BYTES = 1 << 30


def open_db(path):
    opt = options()
    bbo = rocksdict.BlockBasedOptions()
    bbo.set_block_cache(rocksdict.Cache(READ_CACHE_BYTES))
    opt.set_block_based_table_factory(bbo)
    return rocksdict.Rdict(path, options=opt, access_type=rocksdict.AccessType.read_only())


def timed_gets(db, keys, rows):
    lat = []
    pc = time.perf_counter_ns
    get = db.get
    unpack = struct.Struct("<Q").unpack
    for r in rows:
        k = keys[r]
        t = pc()
        v = get(k)
        d = pc() - t
        if v is None or unpack(v)[0] != r:
            raise RuntimeError("wrong value for %r: %r" % (k, v))
        lat.append(d)
    return lat


def untimed_gets(db, keys, rows):
    get = db.get
    unpack = struct.Struct("<Q").unpack
    t = time.perf_counter()
    bad = 0
    for r in rows:
        v = get(keys[r])
        if v is None or unpack(v)[0] != r:
            bad += 1
    s = time.perf_counter() - t
    if bad:
        raise RuntimeError("%d wrong values" % bad)
    return s


def lat_json(lat):
    lat = sorted(lat)
    n = len(lat)

    def pct(p):
        return lat[min(n - 1, round((n - 1) * p))] if n else 0

    return {"median_ns": pct(0.5), "p99_ns": pct(0.99), "mean_ns": statistics.fmean(lat)}


def scan(db):
    n = 0
    b = 0
    for k, v in db.items():
        n += 1
        b += len(k) + len(v)
    return n, b


def read(args):
    keys = read_keys(args.set_dir)
    entries = len(keys)
    rows = [lookups(entries, args.lookups, 1), lookups(entries, args.lookups, 2)]
    t = time.perf_counter()
    db = open_db(args.path)
    open_ms = (time.perf_counter() - t) * 1e3
    n0, _ = scan(db)
    t = time.perf_counter()
    n, b = scan(db)
    scan_s = time.perf_counter() - t
    if n != entries or n0 != n:
        raise RuntimeError("scan saw %d entries, expected %d" % (n, entries))
    untimed_gets(db, keys, rows[0][:200000])
    u1 = untimed_gets(db, keys, rows[0])
    lat1 = timed_gets(db, keys, rows[0])
    # Two threads: rocksdict may or may not release the GIL around get; the figure is what
    # a Python program with two threads gets.
    res = [None, None]

    def worker(i, timed):
        res[i] = timed_gets(db, keys, rows[i]) if timed else untimed_gets(db, keys, rows[i])

    t = time.perf_counter()
    th = [threading.Thread(target=worker, args=(i, False)) for i in range(2)]
    for x in th:
        x.start()
    for x in th:
        x.join()
    wall2 = time.perf_counter() - t
    th = [threading.Thread(target=worker, args=(i, True)) for i in range(2)]
    for x in th:
        x.start()
    for x in th:
        x.join()
    lat2 = res[0] + res[1]
    # Cost of a timed call to a no-op, the floor of the timed figures here.
    pc = time.perf_counter_ns
    noop = lambda k: None  # noqa: E731
    o = []
    for _ in range(100000):
        t0 = pc()
        noop(b"x")
        o.append(pc() - t0)
    o.sort()
    print(
        "RESULT "
        + json.dumps(
            {
                "scan_s": scan_s,
                "scan_entries": n,
                "scan_bytes": b,
                "gets": len(rows[0]),
                "get1": lat_json(lat1),
                "get1_untimed_mean_ns": u1 * 1e9 / len(rows[0]),
                "get2": lat_json(lat2),
                "get2_ops_per_s": (len(rows[0]) + len(rows[1])) / wall2,
                "timer_overhead_ns": o[len(o) // 2],
                "open_ms": open_ms,
            }
        )
    )


def cold(args):
    keys = read_keys(args.set_dir)
    rows = lookups(len(keys), args.cold, 3)
    evicted = evict(args.path)
    io0 = storage_read_bytes()
    t = time.perf_counter()
    db = open_db(args.path)
    open_ms = (time.perf_counter() - t) * 1e3
    io1 = storage_read_bytes()
    half = len(rows) // 2
    lat = timed_gets(db, keys, rows[:half])
    ioh = storage_read_bytes()
    lat += timed_gets(db, keys, rows[half:])
    io2 = storage_read_bytes()
    print(
        "RESULT "
        + json.dumps(
            {
                "evicted_bytes": evicted,
                "open_ms": open_ms,
                "open_read_bytes": io1 - io0,
                "gets": len(rows),
                "read_bytes": io2 - io1,
                "read_bytes_second_half": io2 - ioh,
                "gets_second_half": len(rows) - half,
                "latency": lat_json(lat),
            }
        )
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--store", default="rocksdb")
    p.add_argument("--phase", required=True, choices=["build", "read", "cold"])
    p.add_argument("--input", default="sorted")
    p.add_argument("--set-dir", required=True)
    p.add_argument("--path", required=True)
    p.add_argument("--lookups", type=int, default=0)
    p.add_argument("--cold", type=int, default=0)
    args = p.parse_args()
    if args.input != "sorted":
        sys.exit("the RocksDB run reads sorted input only")
    {"build": build, "read": read, "cold": cold}[args.phase](args)


if __name__ == "__main__":
    main()
