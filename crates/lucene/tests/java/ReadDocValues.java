// Reads every doc value of a Lucene index with Lucene's own doc-values iterators and prints
// throughput in the form of crates/lucene/examples/doc_values_bench.rs, the Rust reader it is
// compared with by scripts/bench-lucene. One source for Lucene 8.x, 9.x and 10.x (compiled once
// against 8, once against 9.9.1; the 9.9.1 classes run on 10.x).
//
// usage: java ReadDocValues <indexDir> <passes>
//
// Per segment, per field with doc values (by name), the field's iterator is walked with
// nextDoc() over every document with a value (iterators ignore deletes, as the Rust side reads
// every doc id). Counts: docs (documents with a value, summed over fields), values, bytes (8 per
// number, the length of every binary or term) and checksum (wrapping sum of every number and of
// the Java Arrays.hashCode of every binary or term, computed in place). The index is opened
// before the clock starts; getting the iterators is timed. cpuMB/s uses the CPU time of the
// whole JVM (all threads, JIT and GC included) over the read.
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.management.ManagementFactory;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import org.apache.lucene.index.*;
import org.apache.lucene.search.DocIdSetIterator;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;

public class ReadDocValues {
  static final int END = DocIdSetIterator.NO_MORE_DOCS;
  // SortedSetDocValues.docValueCount() exists from Lucene 9.2 (and nextOrd() past the last ord
  // is undefined from 10); before it, nextOrd() returns -1 after the last ord.
  static final MethodHandle ORD_COUNT = ordCount();

  static MethodHandle ordCount() {
    try {
      return MethodHandles.publicLookup()
          .findVirtual(SortedSetDocValues.class, "docValueCount", MethodType.methodType(int.class));
    } catch (ReflectiveOperationException e) {
      return null;
    }
  }

  long docs, values, bytes, checksum;

  static int hash(BytesRef b) {
    int h = 1;
    byte[] a = b.bytes;
    for (int i = b.offset, end = b.offset + b.length; i < end; i++) h = 31 * h + a[i];
    return h;
  }

  void term(BytesRef b) {
    values++;
    bytes += b.length;
    checksum += hash(b);
  }

  void number(long v) {
    values++;
    bytes += 8;
    checksum += v;
  }

  void field(LeafReader leaf, FieldInfo fi) throws Throwable {
    String name = fi.name;
    switch (fi.getDocValuesType()) {
      case NUMERIC: {
        NumericDocValues v = leaf.getNumericDocValues(name);
        for (int d = v.nextDoc(); d != END; d = v.nextDoc()) {
          docs++;
          number(v.longValue());
        }
        break;
      }
      case BINARY: {
        BinaryDocValues v = leaf.getBinaryDocValues(name);
        for (int d = v.nextDoc(); d != END; d = v.nextDoc()) {
          docs++;
          term(v.binaryValue());
        }
        break;
      }
      case SORTED: {
        SortedDocValues v = leaf.getSortedDocValues(name);
        for (int d = v.nextDoc(); d != END; d = v.nextDoc()) {
          docs++;
          term(v.lookupOrd(v.ordValue()));
        }
        break;
      }
      case SORTED_SET: {
        SortedSetDocValues v = leaf.getSortedSetDocValues(name);
        for (int d = v.nextDoc(); d != END; d = v.nextDoc()) {
          docs++;
          if (ORD_COUNT != null) {
            int n = (int) ORD_COUNT.invokeExact(v);
            for (int i = 0; i < n; i++) term(v.lookupOrd(v.nextOrd()));
          } else {
            for (long o = v.nextOrd(); o != -1; o = v.nextOrd()) term(v.lookupOrd(o));
          }
        }
        break;
      }
      case SORTED_NUMERIC: {
        SortedNumericDocValues v = leaf.getSortedNumericDocValues(name);
        for (int d = v.nextDoc(); d != END; d = v.nextDoc()) {
          docs++;
          for (int i = 0, n = v.docValueCount(); i < n; i++) number(v.nextValue());
        }
        break;
      }
      default:
        break;
    }
  }

  static long cpuNanos() {
    java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
    if (os instanceof com.sun.management.OperatingSystemMXBean) {
      return ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime();
    }
    return -1;
  }

  public static void main(String[] a) throws Throwable {
    if (a.length != 2) {
      System.err.println("usage: java ReadDocValues <indexDir> <passes>");
      System.exit(2);
    }
    int passes = Integer.parseInt(a[1]);
    for (int pass = 1; pass <= passes; pass++) {
      long t0 = System.nanoTime();
      try (Directory dir = FSDirectory.open(Paths.get(a[0]));
          DirectoryReader reader = DirectoryReader.open(dir)) {
        long t1 = System.nanoTime();
        long cpu0 = cpuNanos();
        ReadDocValues r = new ReadDocValues();
        for (LeafReaderContext ctx : reader.leaves()) {
          LeafReader leaf = ctx.reader();
          List<FieldInfo> fields = new ArrayList<>();
          for (FieldInfo fi : leaf.getFieldInfos()) {
            if (fi.getDocValuesType() != DocValuesType.NONE) fields.add(fi);
          }
          fields.sort((x, y) -> x.name.compareTo(y.name));
          for (FieldInfo fi : fields) r.field(leaf, fi);
        }
        double secs = (System.nanoTime() - t1) / 1e9;
        long cpu1 = cpuNanos();
        double cpu = cpu0 < 0 || cpu1 < 0 ? Double.NaN : (cpu1 - cpu0) / 1e9;
        String cpuMbs = cpu > 0 ? String.format(java.util.Locale.ROOT, "%.1f", r.bytes / 1e6 / cpu) : "-";
        System.out.println(String.format(java.util.Locale.ROOT,
            "pass=%d access=java segments=%d maxDoc=%d values=%d docs=%d bytes=%d checksum=%d openMs=%.1f readS=%.3f"
                + " values/s=%.0f MB/s=%.1f cpuS=%.2f cpuMB/s=%s",
            pass, reader.leaves().size(), reader.maxDoc(), r.values, r.docs, r.bytes, r.checksum,
            (t1 - t0) / 1e6, secs, r.values / secs, r.bytes / 1e6 / secs, cpu, cpuMbs));
      }
    }
  }
}
