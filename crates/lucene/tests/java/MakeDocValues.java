// Writes small Lucene indexes with doc values and dumps what Lucene reads back from them: the
// goldens of the doc-values reader (crates/lucene/tests/doc_values.rs) and the Elasticsearch-like
// indexes of the source-rebuild tests (crates/snapshot/tests/rebuild.rs). One source for Lucene
// 8.x, 9.x and 10.x (compiled once against 8, once against 9.9.1; the 9.9.1 classes run on 10.x).
// Regenerate everything with scripts/make-doc-values-fixtures.
//
// usage:
//   java MakeDocValues dv <outDir> <BEST_SPEED|BEST_COMPRESSION> <seed>
//       every doc-values type (NUMERIC, BINARY, SORTED, SORTED_SET, SORTED_NUMERIC), dense and
//       sparse fields, constant / table / GCD / min-max / block-varying numerics, fixed and
//       variable binary, low and high cardinality terms; 3 segments, hard deletes, one
//       doc-values update generation. Writes <outDir>.golden.jsonl.
//   java MakeDocValues es <outDir> <withSource true|false> <seed> [singular|coalesced]
//       the same documents as Elasticsearch would index them for mapping.json (fields of every
//       mapping type, as the Lucene fields Elasticsearch writes for each), with or without a
//       stored _source; writes <outDir>.sources.jsonl (id and original source of every live
//       document). Without _source, every 10th document keeps a _recovery_source, and what
//       Elasticsearch 8.15+ synthetic source keeps beside doc values is written as it writes it:
//       _ignored_source (unmapped fields under dynamic: false, the enabled: false object, the
//       synthetic_source_keep: arrays keyword's arrays, the geo_shape), in the 8.15 layout (one
//       stored value per entry) or the 9.x coalesced one (one stored value per path), and the
//       <field>._original / <field>._ignore_malformed stored fields (docs/specs/ignored-source.md).
//   java MakeDocValues bench <outDir> <BEST_SPEED|BEST_COMPRESSION> <docs> <seed>
//       a large index for scripts/bench-lucene: <docs> documents with every doc-values type,
//       dense (every document) and sparse fields, in 4 segments, 1 % of them hard-deleted.
//
// Golden format (dv): one line per live document, segments in reader order, doc ids ascending:
//   {"seg":"_0","doc":3,"values":{"num":[5],"bin":["<base64>"],"ss":["<base64>",...],"sn":[1,2]}}
// Numbers as JSON numbers (longs), terms and binaries as standard base64; a field without a value
// for the document is absent. Sorted-set terms in ord order, sorted-numeric values in Lucene order.
import java.io.*;
import java.lang.reflect.Method;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.codecs.Codec;
import org.apache.lucene.document.*;
import org.apache.lucene.index.*;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;
import org.apache.lucene.util.NumericUtils;

public class MakeDocValues {
  static Codec codec(String modeName) throws Exception {
    Class<?> codecCls = Codec.getDefault().getClass();
    Class<?> modeCls = Class.forName(codecCls.getName() + "$Mode");
    Object mode = modeCls.getMethod("valueOf", String.class).invoke(null, modeName);
    return (Codec) codecCls.getConstructor(modeCls).newInstance(mode);
  }

  static IndexWriter writer(Path dir, String mode, boolean soft) throws Exception {
    IndexWriterConfig cfg = new IndexWriterConfig(new StandardAnalyzer());
    cfg.setCodec(codec(mode));
    cfg.setUseCompoundFile(false);
    cfg.setMergePolicy(NoMergePolicy.INSTANCE);
    if (soft) cfg.setSoftDeletesField("__soft_deletes");
    return new IndexWriter(FSDirectory.open(dir), cfg);
  }

  public static void main(String[] a) throws Exception {
    Path out = Paths.get(a[1]);
    deleteTree(out);
    Files.createDirectories(out);
    if (a[0].equals("dv")) {
      makeDv(out, a[2], Long.parseLong(a[3]));
      dumpDv(out, Paths.get(a[1] + ".golden.jsonl"));
    } else if (a[0].equals("bench")) {
      makeBench(out, a[2], Integer.parseInt(a[3]), Long.parseLong(a[4]));
    } else {
      makeEs(out, Boolean.parseBoolean(a[2]), Long.parseLong(a[3]), a.length > 4 && a[4].equals("coalesced"));
    }
    Files.deleteIfExists(out.resolve("write.lock"));
  }

  static void deleteTree(Path p) throws IOException {
    if (!Files.exists(p)) return;
    try (var s = Files.walk(p)) {
      s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    }
  }

  // ---------------------------------------------------------------- dv
  static String term(Random r, int cardinality) {
    int k = r.nextInt(cardinality);
    StringBuilder sb = new StringBuilder("term-").append(String.format("%06d", k));
    if (k % 7 == 0) sb.append("-with-a-longer-shared-suffix-").append(k % 5);
    if (k % 11 == 0) sb.append('\u00e9').append("\ud83d\ude00");
    return sb.toString();
  }

  static void makeDv(Path out, String mode, long seed) throws Exception {
    Random r = new Random(seed);
    try (IndexWriter w = writer(out, mode, false)) {
      int id = 0;
      boolean big = mode.equals("BEST_SPEED");
      for (int seg = 0; seg < 3; seg++) {
        int n = seg == 1 && big ? 70000 : 900; // a segment spanning two 65536-doc DISI blocks
        for (int i = 0; i < n; i++, id++) {
          Document d = new Document();
          if (n > 900) {
            // few fields, cheap values: the golden samples this segment
            d.add(new NumericDocValuesField("dense_const", 42));
            // wide values in one 16384-value block, small ones in the others: varying bits per value
            d.add(new NumericDocValuesField("dense_varying", (i / 16384) % 2 == 0 ? i % 4 : (1L << 40) + i));
            if (i % 3 == 0) d.add(new NumericDocValuesField("sparse_num", 3L * i));
            if (i % 97 == 0) d.add(new NumericDocValuesField("rare_num", i));
            if (i % 2 == 0) d.add(new NumericDocValuesField("half_num", i));
            if (i % 5 == 0) d.add(new SortedSetDocValuesField("sset", new BytesRef("t" + (i % 1000))));
            w.addDocument(d);
            continue;
          }
          d.add(new StringField("id", "d" + id, Field.Store.YES));
          d.add(new NumericDocValuesField("dense_minmax", r.nextInt(1000) - 500));
          d.add(new NumericDocValuesField("dense_const", 42));
          d.add(new NumericDocValuesField("dense_gcd", 1_000_000L + 1000L * r.nextInt(50)));
          d.add(new NumericDocValuesField("dense_table", new long[] {-7, 3, 1L << 40}[r.nextInt(3)]));
          d.add(new NumericDocValuesField("dense_varying", r.nextLong()));
          if (i % 3 == 0) d.add(new NumericDocValuesField("sparse_num", r.nextLong() >> r.nextInt(64)));
          if (i % 97 == 0) d.add(new NumericDocValuesField("rare_num", i));
          d.add(new NumericDocValuesField("half_num", i));
          byte[] fixed = new byte[8];
          r.nextBytes(fixed);
          d.add(new BinaryDocValuesField("bin_fixed", new BytesRef(fixed)));
          if (i % 5 != 0) {
            byte[] var = new byte[r.nextInt(i % 50 == 1 ? 600 : 40)];
            r.nextBytes(var);
            d.add(new BinaryDocValuesField("bin_var", new BytesRef(var)));
          }
          d.add(new SortedDocValuesField("sorted_low", new BytesRef(term(r, 5))));
          if (i % 4 != 1) d.add(new SortedDocValuesField("sorted_high", new BytesRef(term(r, 5000))));
          if (i % 2 == 0) {
            int k = r.nextInt(4);
            for (int j = 0; j < k; j++) d.add(new SortedSetDocValuesField("sset", new BytesRef(term(r, 300))));
          }
          d.add(new SortedSetDocValuesField("sset_single", new BytesRef(term(r, 40))));
          int m = r.nextInt(4);
          for (int j = 0; j < m; j++) d.add(new SortedNumericDocValuesField("snum", r.nextInt(200) - 100));
          d.add(new SortedNumericDocValuesField("snum_single", r.nextLong()));
          w.addDocument(d);
        }
        w.commit();
      }
      // hard deletes in the first and last segments
      for (int i = 0; i < id; i += 13) {
        w.deleteDocuments(new Term("id", "d" + i));
      }
      // a doc-values update generation for one field
      for (int i = 5; i < 900; i += 17) {
        w.updateNumericDocValue(new Term("id", "d" + i), "dense_minmax", 1_000_000 + i);
      }
      w.commit();
    }
  }

  static final Base64.Encoder B64 = Base64.getEncoder();

  static void dumpDv(Path dir, Path golden) throws Exception {
    try (Directory d = FSDirectory.open(dir);
        DirectoryReader reader = DirectoryReader.open(d);
        Writer out = Files.newBufferedWriter(golden, StandardCharsets.UTF_8)) {
      for (LeafReaderContext ctx : reader.leaves()) {
        LeafReader leaf = ctx.reader();
        String seg = ((SegmentReader) leaf).getSegmentName();
        List<FieldInfo> fields = new ArrayList<>();
        for (FieldInfo fi : leaf.getFieldInfos()) {
          if (fi.getDocValuesType() != DocValuesType.NONE) fields.add(fi);
        }
        fields.sort(Comparator.comparing(f -> f.name));
        Map<String, Object> iters = new HashMap<>();
        for (FieldInfo fi : fields) {
          switch (fi.getDocValuesType()) {
            case NUMERIC: iters.put(fi.name, leaf.getNumericDocValues(fi.name)); break;
            case BINARY: iters.put(fi.name, leaf.getBinaryDocValues(fi.name)); break;
            case SORTED: iters.put(fi.name, leaf.getSortedDocValues(fi.name)); break;
            case SORTED_SET: iters.put(fi.name, leaf.getSortedSetDocValues(fi.name)); break;
            case SORTED_NUMERIC: iters.put(fi.name, leaf.getSortedNumericDocValues(fi.name)); break;
            default: break;
          }
        }
        var live = leaf.getLiveDocs();
        // one summary line per segment over every live document: per field, the documents with
        // a value, the values, and a wrapping sum of the values (numbers) or of the Java
        // Arrays.hashCode of each value (bytes)
        Map<String, Object> sums = new HashMap<>();
        for (FieldInfo fi : fields) sums.put(fi.name, open(leaf, fi));
        long[][] acc = new long[fields.size()][3];
        for (int doc = 0; doc < leaf.maxDoc(); doc++) {
          if (live != null && !live.get(doc)) continue;
          for (int f = 0; f < fields.size(); f++) summarize(sums.get(fields.get(f).name), doc, acc[f]);
        }
        StringBuilder head = new StringBuilder("{\"seg\":\"" + seg + "\",\"maxDoc\":" + leaf.maxDoc() + ",\"summary\":{");
        for (int f = 0; f < fields.size(); f++) {
          if (f > 0) head.append(',');
          head.append('"').append(fields.get(f).name).append("\":{\"type\":\"").append(fields.get(f).getDocValuesType())
              .append("\",\"docs\":").append(acc[f][0]).append(",\"values\":").append(acc[f][1]).append(",\"sum\":").append(acc[f][2]).append('}');
        }
        out.write(head.append("}}\n").toString());
        boolean sampled = leaf.maxDoc() > 5000;
        for (int doc = 0; doc < leaf.maxDoc(); doc++) {
          if (live != null && !live.get(doc)) continue;
          if (sampled && doc % 61 != 0 && Math.abs(doc - 65536) > 6 && doc < leaf.maxDoc() - 3) continue;
          StringBuilder sb = new StringBuilder();
          sb.append("{\"seg\":\"").append(seg).append("\",\"doc\":").append(doc).append(",\"values\":{");
          boolean first = true;
          for (FieldInfo fi : fields) {
            String v = value(iters.get(fi.name), doc);
            if (v == null) continue;
            if (!first) sb.append(',');
            first = false;
            sb.append('"').append(fi.name).append("\":").append(v);
          }
          sb.append("}}\n");
          out.write(sb.toString());
        }
      }
    }
  }

  static Object open(LeafReader leaf, FieldInfo fi) throws IOException {
    switch (fi.getDocValuesType()) {
      case NUMERIC: return leaf.getNumericDocValues(fi.name);
      case BINARY: return leaf.getBinaryDocValues(fi.name);
      case SORTED: return leaf.getSortedDocValues(fi.name);
      case SORTED_SET: return leaf.getSortedSetDocValues(fi.name);
      case SORTED_NUMERIC: return leaf.getSortedNumericDocValues(fi.name);
      default: return null;
    }
  }

  static int hash(BytesRef b) {
    return Arrays.hashCode(Arrays.copyOfRange(b.bytes, b.offset, b.offset + b.length));
  }

  static void summarize(Object it, int doc, long[] acc) throws Exception {
    if (it instanceof NumericDocValues) {
      NumericDocValues v = (NumericDocValues) it;
      if (v.advanceExact(doc)) { acc[0]++; acc[1]++; acc[2] += v.longValue(); }
    } else if (it instanceof BinaryDocValues) {
      BinaryDocValues v = (BinaryDocValues) it;
      if (v.advanceExact(doc)) { acc[0]++; acc[1]++; acc[2] += hash(v.binaryValue()); }
    } else if (it instanceof SortedDocValues) {
      SortedDocValues v = (SortedDocValues) it;
      if (v.advanceExact(doc)) { acc[0]++; acc[1]++; acc[2] += hash(v.lookupOrd(v.ordValue())); }
    } else if (it instanceof SortedSetDocValues) {
      SortedSetDocValues v = (SortedSetDocValues) it;
      if (!v.advanceExact(doc)) return;
      acc[0]++;
      Method count = docValueCount();
      int n = count == null ? Integer.MAX_VALUE : (Integer) count.invoke(v);
      for (int i = 0; i < n; i++) {
        long ord = v.nextOrd();
        if (ord == -1) break;
        acc[1]++;
        acc[2] += hash(v.lookupOrd(ord));
      }
    } else if (it instanceof SortedNumericDocValues) {
      SortedNumericDocValues v = (SortedNumericDocValues) it;
      if (!v.advanceExact(doc)) return;
      acc[0]++;
      for (int i = 0; i < v.docValueCount(); i++) { acc[1]++; acc[2] += v.nextValue(); }
    }
  }

  static String b64(BytesRef b) {
    return "\"" + B64.encodeToString(Arrays.copyOfRange(b.bytes, b.offset, b.offset + b.length)) + "\"";
  }

  static String value(Object it, int doc) throws Exception {
    if (it instanceof NumericDocValues) {
      NumericDocValues v = (NumericDocValues) it;
      return v.advanceExact(doc) ? "[" + v.longValue() + "]" : null;
    } else if (it instanceof BinaryDocValues) {
      BinaryDocValues v = (BinaryDocValues) it;
      return v.advanceExact(doc) ? "[" + b64(v.binaryValue()) + "]" : null;
    } else if (it instanceof SortedDocValues) {
      SortedDocValues v = (SortedDocValues) it;
      return v.advanceExact(doc) ? "[" + b64(v.lookupOrd(v.ordValue())) + "]" : null;
    } else if (it instanceof SortedSetDocValues) {
      SortedSetDocValues v = (SortedSetDocValues) it;
      if (!v.advanceExact(doc)) return null;
      StringBuilder sb = new StringBuilder("[");
      Method count = docValueCount();
      int n = count == null ? Integer.MAX_VALUE : (Integer) count.invoke(v);
      for (int i = 0; i < n; i++) {
        long ord = v.nextOrd();
        if (ord == -1) break; // NO_MORE_ORDS before Lucene 10
        if (i > 0) sb.append(',');
        sb.append(b64(v.lookupOrd(ord)));
      }
      return sb.append(']').toString();
    } else if (it instanceof SortedNumericDocValues) {
      SortedNumericDocValues v = (SortedNumericDocValues) it;
      if (!v.advanceExact(doc)) return null;
      StringBuilder sb = new StringBuilder("[");
      for (int i = 0; i < v.docValueCount(); i++) {
        if (i > 0) sb.append(',');
        sb.append(v.nextValue());
      }
      return sb.append(']').toString();
    }
    return null;
  }

  static Method docValueCount() {
    try {
      return SortedSetDocValues.class.getMethod("docValueCount");
    } catch (NoSuchMethodException e) {
      return null;
    }
  }

  // ---------------------------------------------------------------- bench
  static void makeBench(Path out, String mode, int docs, long seed) throws Exception {
    Random r = new Random(seed);
    String[] low = new String[1000];
    for (int k = 0; k < low.length; k++) low[k] = String.format("value-%04d", k) + (k % 7 == 0 ? "-with-a-longer-shared-suffix" : "");
    try (IndexWriter w = writer(out, mode, false)) {
      w.getConfig().setRAMBufferSizeMB(512);
      int perSegment = Math.max(1, (docs + 3) / 4);
      for (int i = 0; i < docs; i++) {
        Document d = new Document();
        d.add(new StringField("id", Integer.toString(i), Field.Store.NO));
        // NUMERIC: dense small-range, dense timestamp-like (GCD), sparse wide
        d.add(new NumericDocValuesField("num_dense", r.nextInt(1 << 20)));
        d.add(new NumericDocValuesField("num_time", 1_600_000_000_000L + 1000L * i + 1000L * r.nextInt(60)));
        if (i % 3 == 0) d.add(new NumericDocValuesField("num_sparse", r.nextLong()));
        // BINARY: dense variable length, sparse fixed length
        byte[] var = new byte[8 + r.nextInt(33)];
        r.nextBytes(var);
        d.add(new BinaryDocValuesField("bin_dense", new BytesRef(var)));
        if (i % 7 == 0) {
          byte[] fixed = new byte[16];
          r.nextBytes(fixed);
          d.add(new BinaryDocValuesField("bin_sparse", new BytesRef(fixed)));
        }
        // SORTED: dense low cardinality, sparse high cardinality
        d.add(new SortedDocValuesField("sorted_dense", new BytesRef(low[r.nextInt(20)])));
        if (i % 4 == 0) d.add(new SortedDocValuesField("sorted_sparse", new BytesRef("key-" + r.nextInt(200_000))));
        // SORTED_SET: dense 1-3 terms, sparse single high-cardinality term
        int k = 1 + r.nextInt(3);
        for (int j = 0; j < k; j++) d.add(new SortedSetDocValuesField("sset_dense", new BytesRef(low[r.nextInt(500)])));
        if (i % 5 == 0) d.add(new SortedSetDocValuesField("sset_sparse", new BytesRef("tag-" + r.nextInt(50_000))));
        // SORTED_NUMERIC: dense 1-3 values, sparse single wide value
        int m = 1 + r.nextInt(3);
        for (int j = 0; j < m; j++) d.add(new SortedNumericDocValuesField("snum_dense", r.nextInt(10_000) - 5_000));
        if (i % 6 == 0) d.add(new SortedNumericDocValuesField("snum_sparse", r.nextLong()));
        w.addDocument(d);
        if ((i + 1) % perSegment == 0) w.commit();
      }
      for (int i = 0; i < docs; i += 100) w.deleteDocuments(new Term("id", Integer.toString(i)));
      w.commit();
    }
  }

  // ---------------------------------------------------------------- es
  // Elasticsearch's _id encoding for ids that are neither numeric nor base64: 0xFF + UTF-8.
  static BytesRef esId(String id) {
    byte[] b = id.getBytes(StandardCharsets.UTF_8);
    byte[] out = new byte[b.length + 1];
    out[0] = (byte) 0xFF;
    System.arraycopy(b, 0, out, 1, b.length);
    return new BytesRef(out);
  }

  static String q(String s) {
    StringBuilder sb = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') sb.append('\\').append(c);
      else if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
      else sb.append(c);
    }
    return sb.append('"').toString();
  }

  // The 16-byte form Elasticsearch indexes an ip as (IPv4 mapped into IPv6, ::ffff:a.b.c.d).
  static byte[] ip16(InetAddress a) {
    byte[] b = a.getAddress();
    if (b.length == 16) return b;
    byte[] out = new byte[16];
    out[10] = (byte) 0xff;
    out[11] = (byte) 0xff;
    System.arraycopy(b, 0, out, 12, 4);
    return out;
  }

  // Half-float bits of a float that is exactly representable as a half float.
  static short halfBits(float f) {
    int bits = Float.floatToIntBits(f);
    int sign = (bits >>> 16) & 0x8000;
    if (f == 0f) return (short) sign;
    int exp = ((bits >>> 23) & 0xff) - 127 + 15;
    int mant = (bits >>> 13) & 0x3ff;
    if (exp <= 0 || exp >= 31) throw new IllegalArgumentException("not a normal half float: " + f);
    return (short) (sign | (exp << 10) | mant);
  }

  // ---- what Elasticsearch writes for synthetic source (docs/specs/ignored-source.md) ----
  // A tiny value model for the fixtures: Map (insertion order), List, String, Integer, Long,
  // Double, Boolean, null.
  static Map<String, Object> obj(Object... kv) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
    return m;
  }

  static String json(Object v) {
    if (v == null) return "null";
    if (v instanceof String) return q((String) v);
    if (v instanceof Map) {
      StringBuilder sb = new StringBuilder("{");
      for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
        if (sb.length() > 1) sb.append(',');
        sb.append(q((String) e.getKey())).append(':').append(json(e.getValue()));
      }
      return sb.append('}').toString();
    }
    if (v instanceof List) {
      StringBuilder sb = new StringBuilder("[");
      for (Object o : (List<?>) v) {
        if (sb.length() > 1) sb.append(',');
        sb.append(json(o));
      }
      return sb.append(']').toString();
    }
    return v.toString(); // numbers, booleans
  }

  // CBOR as Jackson writes it: objects and arrays of indefinite length.
  static void cborHead(ByteArrayOutputStream o, int major, long n) {
    if (n < 24) o.write(major << 5 | (int) n);
    else if (n < 256) { o.write(major << 5 | 24); o.write((int) n); }
    else if (n < 65536) { o.write(major << 5 | 25); o.write((int) (n >> 8)); o.write((int) n); }
    else { o.write(major << 5 | 27); for (int s = 56; s >= 0; s -= 8) o.write((int) (n >> s)); }
  }

  static void cbor(ByteArrayOutputStream o, Object v) {
    if (v == null) o.write(0xF6);
    else if (v instanceof Boolean) o.write((Boolean) v ? 0xF5 : 0xF4);
    else if (v instanceof Integer || v instanceof Long) {
      long n = ((Number) v).longValue();
      if (n >= 0) cborHead(o, 0, n); else cborHead(o, 1, -1 - n);
    } else if (v instanceof Double) {
      o.write(0xFB);
      long bits = Double.doubleToLongBits((Double) v);
      for (int s = 56; s >= 0; s -= 8) o.write((int) (bits >> s));
    } else if (v instanceof String) {
      byte[] b = ((String) v).getBytes(StandardCharsets.UTF_8);
      cborHead(o, 3, b.length);
      o.write(b, 0, b.length);
    } else if (v instanceof Map) {
      o.write(0xBF);
      for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) { cbor(o, e.getKey()); cbor(o, e.getValue()); }
      o.write(0xFF);
    } else {
      o.write(0x9F);
      for (Object x : (List<?>) v) cbor(o, x);
      o.write(0xFF);
    }
  }

  // SMILE (header ":)\n", no shared names or values) for the small values the fixtures use:
  // ASCII names and strings of 1-32 bytes, ints in -16..15, booleans, null.
  static void smile(ByteArrayOutputStream o, Object v) {
    if (v == null) o.write(0x21);
    else if (v instanceof Boolean) o.write((Boolean) v ? 0x23 : 0x22);
    else if (v instanceof Integer) {
      int n = (Integer) v;
      if (n < -16 || n > 15) throw new IllegalArgumentException("small SMILE ints only: " + n);
      o.write(0xC0 | ((n << 1) ^ (n >> 31)));
    } else if (v instanceof String) {
      byte[] b = ((String) v).getBytes(StandardCharsets.US_ASCII);
      if (b.length < 1 || b.length > 32) throw new IllegalArgumentException("short SMILE strings only");
      o.write(0x40 + b.length - 1);
      o.write(b, 0, b.length);
    } else if (v instanceof Map) {
      o.write(0xFA);
      for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
        byte[] k = ((String) e.getKey()).getBytes(StandardCharsets.US_ASCII);
        o.write(0x80 + k.length - 1);
        o.write(k, 0, k.length);
        smile(o, e.getValue());
      }
      o.write(0xFB);
    } else if (v instanceof List) {
      o.write(0xF8);
      for (Object x : (List<?>) v) smile(o, x);
      o.write(0xF9);
    } else throw new IllegalArgumentException("not in the SMILE subset: " + v);
  }

  // A value encoded as Elasticsearch's XContentDataHelper encodes one for synthetic source: a
  // type byte, then the value (scalars little-endian; objects and arrays as XContent of the
  // document's content type: 'j' JSON, 'c' CBOR, 's' SMILE).
  static byte[] typed(Object v, char xcontent) {
    ByteArrayOutputStream o = new ByteArrayOutputStream();
    java.nio.ByteBuffer le = java.nio.ByteBuffer.allocate(8).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    if (v == null) o.write('n');
    else if (v instanceof Boolean) o.write((Boolean) v ? 't' : 'f');
    else if (v instanceof String) {
      o.write('S');
      o.writeBytes(((String) v).getBytes(StandardCharsets.UTF_8));
    } else if (v instanceof Integer) {
      o.write('I');
      o.write(le.putInt((Integer) v).array(), 0, 4);
    } else if (v instanceof Long) {
      o.write('L');
      o.write(le.putLong((Long) v).array(), 0, 8);
    } else if (v instanceof Double) {
      o.write('D');
      o.write(le.putDouble((Double) v).array(), 0, 8);
    } else if (xcontent == 'c') {
      o.write('c');
      cbor(o, v);
    } else if (xcontent == 's') {
      o.write('s');
      o.writeBytes(new byte[] {':', ')', '\n', 0});
      smile(o, v);
    } else {
      o.write('j');
      o.writeBytes(json(v).getBytes(StandardCharsets.UTF_8));
    }
    return o.toByteArray();
  }

  // One _ignored_source entry: the full path, the offset (in UTF-16 units) where the name under
  // the parent object starts, the typed value.
  static final class Ignored {
    final String name;
    final int parentOffset;
    final byte[] value;

    Ignored(String name, int parentOffset, byte[] value) {
      this.name = name;
      this.parentOffset = parentOffset;
      this.value = value;
    }
  }

  static void vint(ByteArrayOutputStream o, int v) {
    while ((v & ~0x7F) != 0) {
      o.write((v & 0x7F) | 0x80);
      v >>>= 7;
    }
    o.write(v);
  }

  // StreamOutput.writeString: the UTF-16 length, then each UTF-16 unit in 1-3 bytes.
  static void esString(ByteArrayOutputStream o, String s) {
    vint(o, s.length());
    for (int i = 0; i < s.length(); i++) {
      int c = s.charAt(i);
      if (c <= 0x7F) o.write(c);
      else if (c > 0x7FF) { o.write(0xE0 | c >> 12 & 0x0F); o.write(0x80 | c >> 6 & 0x3F); o.write(0x80 | c & 0x3F); }
      else { o.write(0xC0 | c >> 6 & 0x1F); o.write(0x80 | c & 0x3F); }
    }
  }

  // Adds the entries as stored _ignored_source values, sorted by path: one per entry (8.15
  // layout: little-endian int of name length + 65536 * parent offset, UTF-8 name, value), or one
  // per path (coalesced: vint count, name, then per value vint parent offset, vint length, value).
  static void addIgnoredSource(Document d, List<Ignored> entries, boolean coalesced) {
    entries.sort(Comparator.comparing(e -> e.name));
    if (!coalesced) {
      for (Ignored e : entries) {
        byte[] name = e.name.getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        int header = e.name.length() + 65536 * e.parentOffset;
        o.write(header); o.write(header >> 8); o.write(header >> 16); o.write(header >> 24);
        o.writeBytes(name);
        o.writeBytes(e.value);
        d.add(new StoredField("_ignored_source", new BytesRef(o.toByteArray())));
      }
      return;
    }
    for (int i = 0; i < entries.size(); ) {
      int j = i;
      while (j < entries.size() && entries.get(j).name.equals(entries.get(i).name)) j++;
      ByteArrayOutputStream o = new ByteArrayOutputStream();
      vint(o, j - i);
      esString(o, entries.get(i).name);
      for (int k = i; k < j; k++) {
        vint(o, entries.get(k).parentOffset);
        vint(o, entries.get(k).value.length);
        o.writeBytes(entries.get(k).value);
      }
      d.add(new StoredField("_ignored_source", new BytesRef(o.toByteArray())));
      i = j;
    }
  }

  static void makeEs(Path out, boolean withSource, long seed, boolean coalesced) throws Exception {
    Random r = new Random(seed);
    String[] tags = {"red", "green", "blue", "a\"quote", "\u00fcnicode"};
    float[] halves = {1.5f, -0.25f, 100f, 0.125f, 2048f};
    String[] ips = {"192.168.1.10", "10.0.0.1", "2001:db8::1", "::1", "fe80::1:2:3:4"};
    try (IndexWriter w = writer(out, "BEST_SPEED", true);
        Writer sources = Files.newBufferedWriter(Paths.get(out + ".sources.jsonl"), StandardCharsets.UTF_8)) {
      List<String[]> live = new ArrayList<>();
      for (int i = 0; i < 240; i++) {
        String id = "doc-" + i;
        Document d = new Document();
        StringBuilder src = new StringBuilder("{");
        List<String> parts = new ArrayList<>();
        // keyword (single or array) -> SORTED_SET
        if (i % 5 != 4) {
          if (i % 3 == 0) {
            String x = tags[r.nextInt(tags.length)], y = tags[r.nextInt(tags.length)], z = tags[r.nextInt(tags.length)];
            parts.add("\"tag\":[" + q(x) + "," + q(y) + "," + q(z) + "]");
            for (String t : new String[] {x, y, z}) d.add(new SortedSetDocValuesField("tag", new BytesRef(t)));
          } else {
            String t = tags[r.nextInt(tags.length)];
            parts.add("\"tag\":" + q(t));
            d.add(new SortedSetDocValuesField("tag", new BytesRef(t)));
          }
        }
        // long, integer -> SORTED_NUMERIC
        long count = r.nextLong() >> r.nextInt(60);
        parts.add("\"count\":" + count);
        d.add(new SortedNumericDocValuesField("count", count));
        if (i % 4 == 0) {
          int a = r.nextInt(1000), b = r.nextInt(1000) - 500;
          parts.add("\"small\":[" + a + "," + b + "]");
          d.add(new SortedNumericDocValuesField("small", a));
          d.add(new SortedNumericDocValuesField("small", b));
        }
        // double, float, half_float, scaled_float, unsigned_long
        double price = Math.round(r.nextDouble() * 1e6) / 100.0;
        parts.add("\"price\":" + price);
        d.add(new SortedNumericDocValuesField("price", NumericUtils.doubleToSortableLong(price)));
        float ratio = r.nextInt(1000) / 8f + 0.1f;
        parts.add("\"ratio\":" + ratio);
        d.add(new SortedNumericDocValuesField("ratio", NumericUtils.floatToSortableInt(ratio)));
        float half = halves[i % halves.length];
        parts.add("\"half\":" + half);
        short hb = halfBits(half);
        d.add(new SortedNumericDocValuesField("half", hb ^ ((hb >> 15) & 0x7fff)));
        double scaled = r.nextInt(100000) / 100.0;
        parts.add("\"scaled\":" + scaled);
        d.add(new SortedNumericDocValuesField("scaled", Math.round(scaled * 100)));
        long big = i % 7 == 0 ? -1L : r.nextLong() >>> 1; // -1 = 2^64-1 unsigned
        parts.add("\"big\":" + Long.toUnsignedString(big));
        d.add(new SortedNumericDocValuesField("big", big ^ Long.MIN_VALUE));
        // date (millis), date_nanos
        long millis = 1_600_000_000_000L + r.nextInt(1_000_000_000);
        parts.add("\"when\":" + q(java.time.Instant.ofEpochMilli(millis).toString().replaceFirst("(\\.\\d{3})?Z$", "") + String.format(".%03dZ", millis % 1000)));
        d.add(new SortedNumericDocValuesField("when", millis));
        long nanos = millis * 1_000_000L + r.nextInt(1_000_000);
        java.time.Instant ni = java.time.Instant.ofEpochSecond(nanos / 1_000_000_000L, nanos % 1_000_000_000L);
        parts.add("\"when_nanos\":" + q(ni.toString().replaceFirst("(\\.\\d+)?Z$", "") + String.format(".%09dZ", nanos % 1_000_000_000L)));
        d.add(new SortedNumericDocValuesField("when_nanos", nanos));
        // boolean
        boolean flag = r.nextBoolean();
        parts.add("\"flag\":" + flag);
        d.add(new SortedNumericDocValuesField("flag", flag ? 1 : 0));
        // ip -> SORTED_SET of the 16-byte encoding
        String ip = ips[i % ips.length];
        parts.add("\"addr\":" + q(ip));
        d.add(new SortedSetDocValuesField("addr", new BytesRef(ip16(InetAddress.getByName(ip)))));
        // geo_point -> SORTED_NUMERIC of lat/lon encoded in one long
        double lat = Math.round((r.nextDouble() * 180 - 90) * 1e4) / 1e4, lon = Math.round((r.nextDouble() * 360 - 180) * 1e4) / 1e4;
        parts.add("\"loc\":{\"lat\":" + lat + ",\"lon\":" + lon + "}");
        d.add(new LatLonDocValuesField("loc", lat, lon));
        // text with store: true -> stored string
        String title = "Title number " + i + " \u2014 with \"quotes\"";
        parts.add("\"title\":" + q(title));
        d.add(new TextField("title", title, Field.Store.YES));
        // text with a keyword sub-field -> the sub-field's SORTED_SET
        String body = "body text " + (i % 17);
        parts.add("\"body\":" + q(body));
        d.add(new TextField("body", body, Field.Store.NO));
        d.add(new SortedSetDocValuesField("body.raw", new BytesRef(body)));
        // object with dotted leaves
        String user = "user" + (i % 9);
        int age = 18 + i % 60;
        List<Ignored> ignored = new ArrayList<>();
        if (i % 5 == 3) {
          // an unmapped field under the mapped object (dynamic: false): _ignored_source entry
          // "user.nick" whose name under the parent starts after "user."
          String nick = "nick " + i;
          parts.add("\"user\":{\"name\":" + q(user) + ",\"age\":" + age + ",\"nick\":" + q(nick) + "}");
          ignored.add(new Ignored("user.nick", "user.".length(), typed(nick, 'j')));
        } else {
          parts.add("\"user\":{\"name\":" + q(user) + ",\"age\":" + age + "}");
        }
        d.add(new SortedSetDocValuesField("user.name", new BytesRef(user)));
        d.add(new SortedNumericDocValuesField("user.age", age));
        // text without stored value or doc values: cannot be rebuilt (only in some documents)
        if (i % 6 == 5) {
          parts.add("\"note\":\"lost " + i + "\"");
          d.add(new TextField("note", "lost " + i, Field.Store.NO));
        }
        // ---- fields synthetic source keeps beside doc values (written without _source only)
        List<Object[]> stored = new ArrayList<>(); // {name, value} stored fields
        // keyword with ignore_above: 12 -> doc values for short values, <field>._original for long
        String shortLabel = "lbl-" + (i % 10), longLabel = "label-" + i + "-is-longer-than-twelve";
        if (i % 4 == 0) {
          parts.add("\"label\":" + q(shortLabel));
          d.add(new SortedSetDocValuesField("label", new BytesRef(shortLabel)));
        } else if (i % 4 == 1) {
          parts.add("\"label\":" + q(longLabel));
          stored.add(new Object[] {"label._original", new BytesRef(longLabel)});
        } else if (i % 4 == 2) {
          parts.add("\"label\":[" + q(longLabel) + "," + q(shortLabel) + "," + q(shortLabel) + "]");
          d.add(new SortedSetDocValuesField("label", new BytesRef(shortLabel)));
          stored.add(new Object[] {"label._original", new BytesRef(longLabel)});
        }
        // keyword with synthetic_source_keep: arrays -> doc values, and arrays as sent in
        // _ignored_source
        if (i % 5 == 0) {
          List<Object> codes = List.of(tags[r.nextInt(tags.length)], "zz", tags[r.nextInt(tags.length)], "zz");
          parts.add("\"codes\":" + json(codes));
          for (Object c : codes) d.add(new SortedSetDocValuesField("codes", new BytesRef((String) c)));
          ignored.add(new Ignored("codes", 0, typed(codes, 'j')));
        } else if (i % 5 == 1) {
          parts.add("\"codes\":\"one\"");
          d.add(new SortedSetDocValuesField("codes", new BytesRef("one")));
        }
        // integer with ignore_malformed -> doc values, <field>._ignore_malformed for the rest
        if (i % 8 == 1) {
          parts.add("\"hits\":\"n/a\"");
          stored.add(new Object[] {"hits._ignore_malformed", "n/a"});
        } else if (i % 8 == 5) {
          parts.add("\"hits\":[7,\"bad " + i + "\",2]");
          d.add(new SortedNumericDocValuesField("hits", 7));
          d.add(new SortedNumericDocValuesField("hits", 2));
          stored.add(new Object[] {"hits._ignore_malformed", "bad " + i});
        } else if (i % 2 == 0) {
          parts.add("\"hits\":" + (i % 100));
          d.add(new SortedNumericDocValuesField("hits", i % 100));
        }
        // object with enabled: false -> the whole object in _ignored_source, as JSON, CBOR or
        // SMILE (the content type of the request that indexed it); an array of them, one
        // entry per object
        if (i % 3 == 0) {
          char xc = "jcs".charAt((i / 3) % 3);
          Map<String, Object> meta = obj("k", "v" + (i % 10), "n", i % 16, "deep", obj("list", Arrays.asList(1, true, null, "x")));
          if (xc != 's') meta.put("f", -2.5);
          parts.add("\"meta\":" + json(meta));
          ignored.add(new Ignored("meta", 0, typed(meta, xc)));
        } else if (i % 9 == 8) {
          Map<String, Object> a = obj("k", "a" + i), b = obj("k", "b", "z", Arrays.asList());
          parts.add("\"meta\":[" + json(a) + "," + json(b) + "]");
          ignored.add(new Ignored("meta", 0, typed(a, 'c')));
          ignored.add(new Ignored("meta", 0, typed(b, 'j')));
        }
        // geo_shape: indexed (so the field is in the segment), no doc values synthetic source
        // reads: the value as sent in _ignored_source
        if (i % 6 == 1) {
          double slat = (i % 80) + 0.5, slon = -(i % 170) - 0.25;
          Map<String, Object> shape = obj("type", "point", "coordinates", Arrays.asList(slon, slat));
          parts.add("\"shape\":" + json(shape));
          d.add(new LatLonPoint("shape", slat, slon));
          ignored.add(new Ignored("shape", 0, typed(shape, 'j')));
        }
        // unmapped fields under the root (dynamic: false): each value in _ignored_source
        Object[][] extras = {
          {},
          {"extra_arr", Arrays.asList(3, 1, 2)},
          {"extra", "free text " + i},
          {"gr\u00f6\u00dfe", i},
          {"extra_n", i * 1000, "extra_big", 5_000_000_000L + i},
          {"extra_obj", obj("a", Arrays.asList(1, "x"), "b", obj("c", false))},
          {"extra_f", 0.5 + i, "extra_b", true, "extra_null", null},
        };
        Object[] extra = extras[i % 7];
        for (int k = 0; k < extra.length; k += 2) {
          parts.add(q((String) extra[k]) + ":" + json(extra[k + 1]));
          ignored.add(new Ignored((String) extra[k], 0, typed(extra[k + 1], 'j')));
        }
        if (!withSource) {
          addIgnoredSource(d, ignored, coalesced);
          for (Object[] f : stored) {
            if (f[1] instanceof BytesRef) d.add(new StoredField((String) f[0], (BytesRef) f[1]));
            else d.add(new StoredField((String) f[0], (String) f[1]));
          }
        }
        src.append(String.join(",", parts)).append('}');
        String json = src.toString();
        byte[] jsonBytes = json.getBytes(StandardCharsets.UTF_8);
        d.add(new StoredField("_id", esId(id)));
        d.add(new StringField("_uid_term", id, Field.Store.NO));
        if (withSource) {
          d.add(new StoredField("_source", jsonBytes));
        } else if (i % 10 == 3) {
          d.add(new StoredField("_recovery_source", jsonBytes));
        }
        d.add(new NumericDocValuesField("_seq_no", i));
        d.add(new NumericDocValuesField("_primary_term", 1));
        d.add(new NumericDocValuesField("_version", 1));
        w.addDocument(d);
        live.add(new String[] {id, json});
        if (i == 99 || i == 179) w.commit();
      }
      if (!withSource && coalesced) {
        // one document whose _ignored_source value has a type byte no encoding uses: the
        // reader must report it (naming the file), not guess; not in the originals
        Document bad = new Document();
        bad.add(new StoredField("_id", esId("doc-corrupt")));
        bad.add(new StringField("_uid_term", "doc-corrupt", Field.Store.NO));
        bad.add(new SortedNumericDocValuesField("count", 1));
        List<Ignored> e = new ArrayList<>();
        e.add(new Ignored("extra", 0, new byte[] {'Z', 1, 2}));
        addIgnoredSource(bad, e, true);
        bad.add(new NumericDocValuesField("_seq_no", 999));
        bad.add(new NumericDocValuesField("_primary_term", 1));
        bad.add(new NumericDocValuesField("_version", 1));
        w.addDocument(bad);
      }
      // soft-delete a few documents as Elasticsearch does (a tombstone replaces them)
      Set<String> deleted = new HashSet<>();
      for (int i = 11; i < 240; i += 37) {
        String id = "doc-" + i;
        Document tomb = new Document();
        tomb.add(new StoredField("_id", esId(id)));
        tomb.add(new NumericDocValuesField("_seq_no", 1000 + i));
        tomb.add(new NumericDocValuesField("_tombstone", 1));
        tomb.add(new NumericDocValuesField("__soft_deletes", 1));
        w.softUpdateDocument(new Term("_uid_term", id), tomb, new NumericDocValuesField("__soft_deletes", 1));
        deleted.add(id);
      }
      w.commit();
      for (String[] doc : live) {
        if (deleted.contains(doc[0])) continue;
        sources.write("{\"id\":" + q(doc[0]) + ",\"source\":" + doc[1] + "}\n");
      }
    }
  }
}
