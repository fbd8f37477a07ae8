#!/usr/bin/env python3
"""RocksDB peer of the durable-map benchmark (crates/stele-bench, `durable_bench`).

Driven by `durable_bench`, one phase per process, inside the same memory cgroup as the
other systems; prints one `RESULT <json>` line with the same fields as the Rust phases.

    rocks_durable.py build <dir> <entries>
    rocks_durable.py read <dir> <entries> <cold gets> <warm gets> <scan cap> <max s>

As in Bifurcan's own benchmark of RocksDB: plain puts in the generated (random) key order
with default options (WAL on), then a flush that waits; compactions run as RocksDB
schedules them. Keys are those of durable_bench (SplitMix64, big-endian); values are the
key followed by 1008 random bytes (os.urandom: generating durable_bench's exact value
words in Python would dominate the run), so gets check the first 8 bytes only, as every
system does.
"""

import json
import os
import struct
import sys
import time

import rocksdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rocks_bench import (  # noqa: E402
    MASK,
    lat_json,
    path_bytes,
    status_bytes,
)

SEED = 0x5EED_D00B_1E00_0001
GAMMA = 0x9E3779B97F4A7C15
VALUE_BYTES = 1016


def mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def key(i):
    return struct.pack(">Q", mix((SEED + (i + 1) * GAMMA) & MASK))


def io(field):
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(field + " not found")


def fsync_all(path):
    for root, _dirs, files in os.walk(path):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def build(path, n):
    os.makedirs(path, exist_ok=True)
    w0, c0, r0 = io("write_bytes"), io("cancelled_write_bytes"), io("read_bytes")
    t0 = time.perf_counter()
    opt = rocksdict.Options(raw_mode=True)
    opt.create_if_missing(True)
    db = rocksdict.Rdict(path, options=opt)
    urandom = os.urandom
    for i in range(n):
        k = key(i)
        db[k] = k + urandom(VALUE_BYTES - 8)
    db.flush(True)
    db.close()
    fsync_all(path)
    build_s = time.perf_counter() - t0
    print(
        "RESULT "
        + json.dumps(
            {
                "build_s": build_s,
                "write_bytes": io("write_bytes") - w0,
                "cancelled_write_bytes": io("cancelled_write_bytes") - c0,
                "read_bytes": io("read_bytes") - r0,
                "file_bytes": path_bytes(path),
                "entries": n,
                "peak_rss_bytes": status_bytes("VmHWM"),
                "note": "rocksdict, default options (raw mode, WAL on), puts in random "
                "order, flush(wait), close, fsync of every file",
            }
        )
    )


def gets(db, n, count, seed, max_s):
    lat = []
    pc = time.perf_counter_ns
    get = db.get
    s = seed
    deadline = pc() + int(max_s * 1e9)
    for _ in range(count):
        if pc() > deadline:
            break
        s = (s + GAMMA) & MASK
        k = key(mix(s) % n)
        t = pc()
        v = get(k)
        d = pc() - t
        if v is None or v[:8] != k:
            raise RuntimeError("wrong value for %r" % k)
        lat.append(d)
    return lat


def read(path, n, cold, warm, scan_cap, max_s):
    r0 = io("read_bytes")
    t = time.perf_counter()
    opt = rocksdict.Options(raw_mode=True)
    db = rocksdict.Rdict(path, options=opt, access_type=rocksdict.AccessType.read_only())
    open_ms = (time.perf_counter() - t) * 1e3
    r1 = io("read_bytes")
    cold_lat = gets(db, n, cold, 3, max_s)
    r2 = io("read_bytes")
    t = time.perf_counter()
    seen = 0
    b = 0
    for k, v in db.items():
        seen += 1
        b += len(k) + len(v)
        if seen >= scan_cap or (seen % 1024 == 0 and time.perf_counter() - t > max_s):
            break
    scan_s = time.perf_counter() - t
    r3 = io("read_bytes")
    gets(db, n, min(warm, 200_000), 1, max_s)
    r4 = io("read_bytes")
    warm_lat = gets(db, n, warm, 2, max_s)
    r5 = io("read_bytes")
    print(
        "RESULT "
        + json.dumps(
            {
                "open_ms": open_ms,
                "open_read_bytes": r1 - r0,
                "cold_gets": len(cold_lat),
                "cold_read_bytes": r2 - r1,
                "cold": lat_json(cold_lat),
                "scan_entries": seen,
                "scan_bytes": b,
                "scan_s": scan_s,
                "scan_read_bytes": r3 - r2,
                "warm_gets": len(warm_lat),
                "warm_read_bytes": r5 - r4,
                "warm": lat_json(warm_lat),
                "peak_rss_bytes": status_bytes("VmHWM"),
            }
        )
    )


def main():
    phase, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if phase == "build":
        build(path, n)
    elif phase == "read":
        read(
            path, n, int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])
        )
    else:
        sys.exit("unknown phase " + phase)


if __name__ == "__main__":
    main()
