package io.perfpost.byteman;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.jboss.byteman.rule.Rule;
import org.jboss.byteman.rule.helper.Helper;

/**
 * perfpost's Byteman helper: calls and time of the outermost instrumented call per thread.
 *
 * <p>Rules call enter() where a call starts and exit(op, bytes) where it returns or throws. A
 * call made inside another instrumented call on the same thread (ChecksumFileSystem's inner data
 * and .crc streams, a close that flushes through write) is not counted and does not restart the
 * outer call's clock. Each thread counts in its own fields (Byteman's shared maps lost counts
 * under concurrency; these need no lock at all), and the totals, with every thread's own, are
 * written once, as JSON, when the JVM exits: to the file named by the system property
 * perfpost.instrument.out, else to standard error.
 */
public class CallStats extends Helper {
  /** One thread's counts: written by that thread alone, so no call waits for another. */
  static final class PerThread {
    final String name;
    final Map<String, long[]> ops = new HashMap<>(); // op -> {calls, nanos, bytes}
    int depth;
    long start;
    long started;
    long ended;

    PerThread(String name) {
      this.name = name;
    }
  }

  static final ConcurrentLinkedQueue<PerThread> ALL = new ConcurrentLinkedQueue<>();
  static final ThreadLocal<PerThread> MINE =
      ThreadLocal.withInitial(
          () -> {
            PerThread t = new PerThread(Thread.currentThread().getName());
            ALL.add(t);
            return t;
          });

  static final ClassValue<Boolean> FS_INPUT =
      new ClassValue<Boolean>() {
        @Override
        protected Boolean computeValue(Class<?> c) {
          for (Class<?> k = c; k != null; k = k.getSuperclass()) {
            if (k.getName().equals("org.apache.hadoop.fs.FSDataInputStream")) {
              return Boolean.TRUE;
            }
          }
          return Boolean.FALSE;
        }
      };

  static {
    Runtime.getRuntime().addShutdownHook(new Thread(CallStats::dump, "perfpost-callstats"));
  }

  protected CallStats(Rule rule) {
    super(rule);
  }

  /** Whether a stream is a Hadoop FSDataInputStream (rules on java.io classes ask). */
  public boolean fsInput(Object stream) {
    return stream != null && FS_INPUT.get(stream.getClass());
  }

  public void enter() {
    PerThread t = MINE.get();
    if (t.depth++ == 0) {
      t.started++;
      t.start = System.nanoTime();
    }
  }

  public void exit(String op, long bytes) {
    PerThread t = MINE.get();
    if (t.depth == 0) {
      return; // an exit whose entry rule was not in force (injected mid-call)
    }
    if (--t.depth != 0) {
      return;
    }
    long ns = System.nanoTime() - t.start;
    t.ended++;
    long[] c = t.ops.get(op);
    if (c == null) {
      c = new long[3];
      t.ops.put(op, c);
    }
    c[0]++;
    c[1] += ns;
    if (bytes > 0) {
      c[2] += bytes;
    }
  }

  public void exit(String op) {
    exit(op, 0L);
  }

  static String fields(long calls, long nanos, long bytes) {
    return "{\"calls\": " + calls + ", \"time_ns\": " + nanos + ", \"bytes\": " + bytes + "}";
  }

  static String quote(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') {
        b.append('\\').append(c);
      } else if (c < 0x20) {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.append('"').toString();
  }

  static void dump() {
    // op -> {calls, nanos, bytes, threads}, and every thread's own counts
    Map<String, long[]> total = new TreeMap<>();
    StringBuilder threads = new StringBuilder();
    long unfinished = 0;
    String sep = "";
    for (PerThread t : ALL) {
      unfinished += t.started - t.ended;
      if (t.ops.isEmpty()) {
        continue;
      }
      threads.append(sep).append("{\"name\": ").append(quote(t.name)).append(", \"ops\": {");
      String s2 = "";
      for (Map.Entry<String, long[]> e : new TreeMap<>(t.ops).entrySet()) {
        long[] c = e.getValue();
        long[] sum = total.computeIfAbsent(e.getKey(), k -> new long[4]);
        sum[0] += c[0];
        sum[1] += c[1];
        sum[2] += c[2];
        sum[3]++;
        threads.append(s2).append(quote(e.getKey())).append(": ").append(fields(c[0], c[1], c[2]));
        s2 = ", ";
      }
      threads.append("}}");
      sep = ", ";
    }
    StringBuilder b = new StringBuilder("{\"schema_version\": 1, \"agent\": \"byteman\", ");
    b.append("\"unfinished\": ").append(unfinished).append(", \"ops\": {");
    sep = "";
    for (Map.Entry<String, long[]> e : total.entrySet()) {
      long[] c = e.getValue();
      String f = fields(c[0], c[1], c[2]);
      b.append(sep).append(quote(e.getKey())).append(": ").append(f, 0, f.length() - 1);
      b.append(", \"threads\": ").append(c[3]).append('}');
      sep = ", ";
    }
    b.append("}, \"threads\": [").append(threads).append("]}\n");
    String out = System.getProperty("perfpost.instrument.out");
    if (out == null) {
      System.err.print(b);
      return;
    }
    try {
      Path p = Paths.get(out);
      Path tmp = p.resolveSibling(p.getFileName() + ".tmp");
      Files.write(tmp, b.toString().getBytes(StandardCharsets.UTF_8));
      Files.move(tmp, p, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      System.err.println("perfpost CallStats: cannot write " + out + ": " + e);
    }
  }
}
