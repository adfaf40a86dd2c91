package io.perfpost.byteman;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import org.jboss.byteman.rule.Rule;
import org.jboss.byteman.rule.helper.Helper;

/**
 * perfpost's Byteman helper: calls and time of the outermost instrumented call per thread.
 *
 * <p>Rules call enter() where a call starts and exit(op, bytes) where it returns or throws. A
 * call made inside another instrumented call on the same thread (ChecksumFileSystem's inner data
 * and .crc streams, a close that flushes through write) is not counted and does not restart the
 * outer call's clock. Counters are LongAdders, so concurrent threads never lose a count. The
 * totals are written once, as JSON, when the JVM exits: to the file named by the system property
 * perfpost.instrument.out, else to standard error.
 */
public class CallStats extends Helper {
  static final class Op {
    final LongAdder calls = new LongAdder();
    final LongAdder nanos = new LongAdder();
    final LongAdder bytes = new LongAdder();
    final LongAdder threads = new LongAdder();
    final ThreadLocal<boolean[]> seen = ThreadLocal.withInitial(() -> new boolean[1]);
  }

  static final class Depth {
    int depth;
    long start;
  }

  static final ThreadLocal<Depth> DEPTH = ThreadLocal.withInitial(Depth::new);
  static final ConcurrentHashMap<String, Op> OPS = new ConcurrentHashMap<>();
  static final LongAdder STARTED = new LongAdder();
  static final LongAdder ENDED = new LongAdder();

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
    Depth d = DEPTH.get();
    if (d.depth++ == 0) {
      STARTED.increment();
      d.start = System.nanoTime();
    }
  }

  public void exit(String op, long bytes) {
    Depth d = DEPTH.get();
    if (d.depth == 0) {
      return; // an exit whose entry rule was not in force (injected mid-call)
    }
    if (--d.depth != 0) {
      return;
    }
    long t = System.nanoTime() - d.start;
    ENDED.increment();
    Op o = OPS.computeIfAbsent(op, k -> new Op());
    o.calls.increment();
    o.nanos.add(t);
    if (bytes > 0) {
      o.bytes.add(bytes);
    }
    boolean[] s = o.seen.get();
    if (!s[0]) {
      s[0] = true;
      o.threads.increment();
    }
  }

  public void exit(String op) {
    exit(op, 0L);
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
    StringBuilder b = new StringBuilder("{\"schema_version\": 1, \"agent\": \"byteman\", ");
    b.append("\"unfinished\": ").append(STARTED.sum() - ENDED.sum()).append(", \"ops\": {");
    String sep = "";
    for (Map.Entry<String, Op> e : new TreeMap<>(OPS).entrySet()) {
      Op o = e.getValue();
      b.append(sep).append(quote(e.getKey())).append(": {\"calls\": ").append(o.calls.sum());
      b.append(", \"time_ns\": ").append(o.nanos.sum());
      b.append(", \"bytes\": ").append(o.bytes.sum());
      b.append(", \"threads\": ").append(o.threads.sum()).append('}');
      sep = ", ";
    }
    b.append("}}\n");
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
