// Bifurcan peer of `durable_bench` (crates/stele-bench/src/bin/durable_bench).
//
// Driven by durable_bench, one phase per JVM, inside the same memory cgroup as the other
// systems; prints one `RESULT <json>` line with the same fields as the Rust phases.
//
//   java -cp bifurcan-0.2.0-alpha7.jar:<classes> DurableBench build <dir> <entries>
//   java -cp ... DurableBench read <dir> <entries> <cold gets> <warm gets> <scan cap> <max s>
//
// Each read part (cold gets, scan, warm-up, warm gets) stops early after <max s> seconds.
//
// The map is built as Bifurcan's own benchmark builds it (test/bifurcan/
// durable_benchmark_test.clj): DurableMap.from(iterator, DurableEncodings.map(k, v), dir,
// 100_000 realized entries), with 8-byte keys and 1016-byte values (1 KiB per entry). Keys
// and values are the ones the Rust side generates (SplitMix64, see data.rs there).

import io.lacuna.bifurcan.DurableEncodings;
import io.lacuna.bifurcan.DurableInput;
import io.lacuna.bifurcan.DurableMap;
import io.lacuna.bifurcan.IDurableEncoding;
import io.lacuna.bifurcan.IEntry;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.stream.Stream;

public final class DurableBench {
  static final long SEED = 0x5EED_D00B_1E00_0001L;
  static final long GAMMA = 0x9E3779B97F4A7C15L;
  static final int VALUE_BYTES = 1016;
  static final int ENTRY_BYTES = 8 + VALUE_BYTES;

  static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /** Key number i: the (i+1)-th output of SplitMix64(SEED), used big-endian. */
  static long key(long i) {
    return mix(SEED + (i + 1) * GAMMA);
  }

  /** The value of a key: the key (big-endian), then 126 words of SplitMix64(key). */
  static byte[] value(long key) {
    ByteBuffer b = ByteBuffer.allocate(VALUE_BYTES);
    b.putLong(key);
    b.order(ByteOrder.LITTLE_ENDIAN);
    for (long j = 1; b.remaining() >= 8; j++) {
      b.putLong(mix(key + j * GAMMA));
    }
    return b.array();
  }

  static final IDurableEncoding.Primitive KEYS =
      DurableEncodings.primitive(
          "u64-be",
          2,
          o -> Long.hashCode((Long) o),
          (a, b) -> a.equals(b),
          (a, b) -> Long.compare((Long) a, (Long) b),
          o -> false,
          DurableEncodings.Codec.undelimited(
              (o, out) -> out.writeLong((Long) o), (in, root) -> in.readLong()));

  // Values decode to the input slice itself, as in Bifurcan's benchmark (no copy). Beyond
  // 100,000 entries Bifurcan spills to a temp file and encodes the values it reads back,
  // which are then such slices.
  static final IDurableEncoding.Primitive VALUES =
      DurableEncodings.primitive(
          "bytes",
          2,
          o -> 0L,
          (a, b) -> false,
          (a, b) -> 0,
          o -> false,
          DurableEncodings.Codec.undelimited(
              (o, out) -> {
                if (o instanceof DurableInput in) {
                  out.transferFrom(in.duplicate().seek(0));
                } else {
                  out.write((byte[]) o);
                }
              },
              (in, root) -> in));

  static final IDurableEncoding.Map ENCODING = DurableEncodings.map(KEYS, VALUES);

  static long io(String field) throws IOException {
    for (String line : Files.readAllLines(Paths.get("/proc/self/io"))) {
      if (line.startsWith(field + ":")) {
        return Long.parseLong(line.substring(field.length() + 1).trim());
      }
    }
    throw new IOException(field + " not in /proc/self/io");
  }

  static long statusBytes(String field) throws IOException {
    for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
      if (line.startsWith(field + ":")) {
        return 1024 * Long.parseLong(line.substring(field.length() + 1).replace("kB", "").trim());
      }
    }
    throw new IOException(field + " not in /proc/self/status");
  }

  static List<Path> files(Path dir) throws IOException {
    try (Stream<Path> s = Files.walk(dir)) {
      List<Path> out = new ArrayList<>();
      s.filter(Files::isRegularFile).forEach(out::add);
      return out;
    }
  }

  static long fileBytes(Path dir) throws IOException {
    long total = 0;
    for (Path p : files(dir)) {
      total += Files.size(p);
    }
    return total;
  }

  static void fsyncAll(Path dir) throws IOException {
    for (Path p : files(dir)) {
      try (FileChannel c = FileChannel.open(p, StandardOpenOption.READ)) {
        c.force(true);
      }
    }
  }

  static String lat(long[] ns) {
    long[] s = ns.clone();
    Arrays.sort(s);
    double mean = 0;
    for (long x : s) {
      mean += x;
    }
    mean /= Math.max(1, s.length);
    return String.format(
        "{\"median_ns\":%d,\"p99_ns\":%d,\"mean_ns\":%.1f}",
        pct(s, 0.5), pct(s, 0.99), mean);
  }

  static long pct(long[] sorted, double p) {
    if (sorted.length == 0) {
      return 0;
    }
    int i = (int) Math.round((sorted.length - 1) * p);
    return sorted[Math.min(i, sorted.length - 1)];
  }

  static void build(Path dir, long n) throws IOException {
    Files.createDirectories(dir);
    long w0 = io("write_bytes"), c0 = io("cancelled_write_bytes"), r0 = io("read_bytes");
    long t0 = System.nanoTime();
    Iterator<IEntry<Object, Object>> it =
        new Iterator<>() {
          long i = 0;

          public boolean hasNext() {
            return i < n;
          }

          public IEntry<Object, Object> next() {
            long k = key(i++);
            return IEntry.of(k, value(k));
          }
        };
    DurableMap<Object, Object> m = DurableMap.from(it, ENCODING, dir, 100_000);
    fsyncAll(dir);
    double buildS = (System.nanoTime() - t0) / 1e9;
    if (m.size() != n) {
      throw new IllegalStateException("built " + m.size() + " entries, expected " + n);
    }
    System.out.printf(
        "RESULT {\"build_s\":%.3f,\"write_bytes\":%d,\"cancelled_write_bytes\":%d,"
            + "\"read_bytes\":%d,\"file_bytes\":%d,\"entries\":%d,\"peak_rss_bytes\":%d,"
            + "\"note\":\"DurableMap.from(iterator, map(u64, bytes), dir, 100000), -Xmx%dm, then fsync of every file\"}%n",
        buildS,
        io("write_bytes") - w0,
        io("cancelled_write_bytes") - c0,
        io("read_bytes") - r0,
        fileBytes(dir),
        m.size(),
        statusBytes("VmHWM"),
        Runtime.getRuntime().maxMemory() >> 20);
  }

  static DurableMap<Object, Object> open(Path dir) throws IOException {
    for (Path p : files(dir)) {
      if (p.toString().endsWith(".bfn")) {
        return DurableMap.open(p, ENCODING);
      }
    }
    throw new IOException("no .bfn file in " + dir);
  }

  /** Timed gets of random key numbers drawn by SplitMix64(seed); checks each value. */
  static long[] gets(DurableMap<Object, Object> m, long n, int count, long seed, double maxS) {
    long[] lat = new long[count];
    long s = seed;
    long deadline = System.nanoTime() + (long) (maxS * 1e9);
    for (int j = 0; j < count; j++) {
      if (System.nanoTime() > deadline) {
        return Arrays.copyOf(lat, j);
      }
      s += GAMMA;
      long i = Long.remainderUnsigned(mix(s), n);
      long k = key(i);
      long t = System.nanoTime();
      Object v = m.get(k, null);
      long first = v == null ? 0 : ((DurableInput) v).duplicate().seek(0).readLong();
      lat[j] = System.nanoTime() - t;
      if (v == null || first != k) {
        throw new IllegalStateException(
            "wrong value for key number " + i + ": " + (v == null ? "missing" : Long.toHexString(first) + " vs " + Long.toHexString(k)));
      }
    }
    return lat;
  }

  // The driver evicts the files from the page cache before starting this phase (Java has
  // no posix_fadvise), so the first gets are cold.
  static void read(Path dir, long n, int cold, int warm, long scanCap, double maxS)
      throws Exception {
    long r0 = io("read_bytes");
    long t0 = System.nanoTime();
    DurableMap<Object, Object> m = open(dir);
    double openMs = (System.nanoTime() - t0) / 1e6;
    long r1 = io("read_bytes");
    long[] coldLat = gets(m, n, cold, 3, maxS);
    long r2 = io("read_bytes");
    // Sequential: iterate (hash order, the file's order) over the first scanCap entries.
    long t1 = System.nanoTime();
    long seen = 0, bytes = 0;
    long scanDeadline = t1 + (long) (maxS * 1e9);
    for (IEntry<Object, Object> e : m) {
      bytes += 8 + ((DurableInput) e.value()).size();
      if (++seen >= scanCap || ((seen & 1023) == 0 && System.nanoTime() > scanDeadline)) {
        break;
      }
    }
    double scanS = (System.nanoTime() - t1) / 1e9;
    long r3 = io("read_bytes");
    gets(m, n, Math.min(warm, 200_000), 1, maxS); // warm-up
    long r4 = io("read_bytes");
    long[] warmLat = gets(m, n, warm, 2, maxS);
    long r5 = io("read_bytes");
    System.out.printf(
        "RESULT {\"open_ms\":%.3f,\"open_read_bytes\":%d,\"cold_gets\":%d,\"cold_read_bytes\":%d,"
            + "\"cold\":%s,\"scan_entries\":%d,\"scan_bytes\":%d,\"scan_s\":%.3f,"
            + "\"scan_read_bytes\":%d,\"warm_gets\":%d,\"warm_read_bytes\":%d,\"warm\":%s,"
            + "\"peak_rss_bytes\":%d}%n",
        openMs, r1 - r0, coldLat.length, r2 - r1, lat(coldLat), seen, bytes, scanS, r3 - r2,
        warmLat.length,
        r5 - r4, lat(warmLat), statusBytes("VmHWM"));
  }

  public static void main(String[] args) throws Exception {
    Path dir = Paths.get(args[1]);
    long n = Long.parseLong(args[2]);
    switch (args[0]) {
      case "build" -> build(dir, n);
      case "read" ->
          read(
              dir,
              n,
              Integer.parseInt(args[3]),
              Integer.parseInt(args[4]),
              Long.parseLong(args[5]),
              Double.parseDouble(args[6]));
      default -> throw new IllegalArgumentException("unknown phase " + args[0]);
    }
  }
}
