// Writes small Lucene indexes with vector fields and dumps what Lucene itself reads from them:
// the golden output of crates/lucene/tests/vectors.rs. One source for Lucene 9.9.1 and 10.5.0:
// compiled against 9.9.1; vector formats are looked up by name (SPI) and the vector-values
// API that changed in Lucene 10 is reached by reflection in `dump` (never in `bench`, which
// calls the 9.9 API directly and runs on 9.9.1 only).
//
//   MakeVectors make <outDir> <floatFormat> <quantFormat> <byteFormat> [seed]
//   MakeVectors opaque <outDir>            (a field under a format name no reader knows)
//   MakeVectors dump <indexDir> <out.jsonl|->
//   MakeVectors bench <indexDir> <rounds>  (vectors read per CPU-second; Lucene 9.9.1 jar only)
//   MakeVectors bigmake <outDir> <docs> <dim>  (the index of scripts/bench-vectors)
//   MakeVectors es <outDir> <es|os|es-opaque> [docs]  (a shard whose _source lacks its vectors;
//                                     prints the documents as sent, JSON lines, to stdout)
//
// Fields: "emb" float32 dim 8 (sparse: every third top-level doc lacks it; nested children
// carry it), "qemb" float32 dim 16 under the quantizing format (top-level docs only), "bvec"
// byte dim 12 (top-level docs only). Every 7th id is deleted; blocks of 3 children + parent
// (Elasticsearch nested layout) every 10th id after the first segment; the first segment (100
// docs, no blocks) is dense for qemb and bvec. NoMergePolicy keeps the segments as flushed.
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.lucene.codecs.Codec;
import org.apache.lucene.codecs.FilterCodec;
import org.apache.lucene.codecs.KnnVectorsFormat;
import org.apache.lucene.codecs.KnnVectorsReader;
import org.apache.lucene.codecs.KnnVectorsWriter;
import org.apache.lucene.codecs.perfield.PerFieldKnnVectorsFormat;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.KnnByteVectorField;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.NoMergePolicy;
import org.apache.lucene.index.SegmentReadState;
import org.apache.lucene.index.SegmentReader;
import org.apache.lucene.index.SegmentWriteState;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.VectorEncoding;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.DocIdSetIterator;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.Bits;

public class MakeVectors {
  public static void main(String[] a) throws Exception {
    switch (a[0]) {
      case "make" -> make(Paths.get(a[1]), a[2], a[3], a[4], a.length > 5 ? Long.parseLong(a[5]) : 42L, null);
      case "opaque" -> make(Paths.get(a[1]), null, null, null, 7L, new Opaque());
      case "dump" -> dump(Paths.get(a[1]), a[2]);
      case "bench" -> bench(Paths.get(a[1]), Integer.parseInt(a[2]));
      case "bigmake" -> bigmake(Paths.get(a[1]), Integer.parseInt(a[2]), Integer.parseInt(a[3]));
      case "es" -> es(Paths.get(a[1]), a[2], a.length > 3 ? Integer.parseInt(a[3]) : 60);
      default -> throw new IllegalArgumentException(a[0]);
    }
  }

  /** Writes through Lucene99HnswVectorsFormat under a name of its own (not registered). */
  static final class Opaque extends KnnVectorsFormat {
    final KnnVectorsFormat inner = KnnVectorsFormat.forName("Lucene99HnswVectorsFormat");
    Opaque() { super("RfsOpaqueVectorsFormat"); }
    @Override public KnnVectorsWriter fieldsWriter(SegmentWriteState s) throws IOException { return inner.fieldsWriter(s); }
    @Override public KnnVectorsReader fieldsReader(SegmentReadState s) throws IOException { return inner.fieldsReader(s); }
    @Override public int getMaxDimensions(String f) { return 1024; }
  }

  static float[] floats(Random r, int dim, int id) {
    float[] v = new float[dim];
    for (int i = 0; i < dim; i++) v[i] = (float) (r.nextGaussian() * 3);
    // edge values Lucene accepts (finite): -0.0, a subnormal, the largest float
    if (id % 17 == 3) { v[0] = -0.0f; v[1] = Float.MIN_VALUE; v[2] = Float.MAX_VALUE / 4; }
    return v;
  }

  static byte[] bytes(Random r, int dim, int id) {
    byte[] v = new byte[dim];
    r.nextBytes(v);
    if (id % 17 == 3) { v[0] = Byte.MIN_VALUE; v[1] = Byte.MAX_VALUE; v[2] = 0; }
    return v;
  }

  static void make(Path out, String floatFmt, String quantFmt, String byteFmt, long seed, KnnVectorsFormat only) throws Exception {
    Codec base = Codec.getDefault();
    PerFieldKnnVectorsFormat perField = new PerFieldKnnVectorsFormat() {
      @Override public KnnVectorsFormat getKnnVectorsFormatForField(String field) {
        if (only != null) return only;
        return KnnVectorsFormat.forName(switch (field) {
          case "emb" -> floatFmt;
          case "qemb" -> quantFmt;
          default -> byteFmt;
        });
      }
    };
    // Same name as the default codec: the reader loads the default codec, whose per-field
    // format finds each field's format by the name recorded in the field infos.
    Codec codec = new FilterCodec(base.getName(), base) {
      @Override public org.apache.lucene.codecs.KnnVectorsFormat knnVectorsFormat() { return perField; }
    };
    IndexWriterConfig cfg = new IndexWriterConfig()
        .setCodec(codec)
        .setMergePolicy(NoMergePolicy.INSTANCE)
        .setMaxBufferedDocs(1000)
        .setRAMBufferSizeMB(64)
        .setUseCompoundFile(Boolean.parseBoolean(System.getProperty("cfs", "false")));
    Random r = new Random(seed);
    int n = Integer.getInteger("docs", 260);
    try (FSDirectory dir = FSDirectory.open(out); IndexWriter w = new IndexWriter(dir, cfg)) {
      for (int id = 0; id < n; id++) {
        if (id == 100 || id == 200) w.flush();
        String sid = String.format("doc-%05d", id);
        Document d = new Document();
        d.add(new StringField("_id", sid, Field.Store.YES));
        d.add(new StoredField("_source", ("{\"id\":" + id + "}").getBytes(StandardCharsets.UTF_8)));
        if (only != null || id < 100 || id % 3 != 0) {
          d.add(new KnnFloatVectorField("emb", floats(r, 8, id), VectorSimilarityFunction.EUCLIDEAN));
        }
        if (only == null) {
          d.add(new KnnFloatVectorField("qemb", floats(r, 16, id), VectorSimilarityFunction.EUCLIDEAN));
          d.add(new KnnByteVectorField("bvec", bytes(r, 12, id), VectorSimilarityFunction.EUCLIDEAN));
        }
        if (only == null && id >= 100 && id % 10 == 0) {
          List<Document> block = new ArrayList<>();
          for (int c = 0; c < 3; c++) {
            Document child = new Document();
            child.add(new StringField("_nested_path", "parts", Field.Store.NO));
            child.add(new KnnFloatVectorField("emb", floats(r, 8, id * 10 + c), VectorSimilarityFunction.EUCLIDEAN));
            block.add(child);
          }
          block.add(d);
          w.addDocuments(block);
        } else {
          w.addDocument(d);
        }
        if (only == null && id % 7 == 6 && id >= 100) w.deleteDocuments(new Term("_id", String.format("doc-%05d", id - 5)));
      }
      w.commit();
    }
    Files.deleteIfExists(out.resolve("write.lock"));
  }

  static org.apache.lucene.util.BytesRef esId(String s) {
    byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
    byte[] b = new byte[utf8.length + 1];
    b[0] = (byte) 0xff; // Elasticsearch's encoding of ids that are neither numbers nor base 64
    System.arraycopy(utf8, 0, b, 1, utf8.length);
    return new org.apache.lucene.util.BytesRef(b);
  }

  static String json(float[] v) {
    StringBuilder sb = new StringBuilder("[");
    for (int i = 0; i < v.length; i++) sb.append(i > 0 ? "," : "").append(Float.toString(v[i]));
    return sb.append(']').toString();
  }

  static String json(byte[] v) {
    StringBuilder sb = new StringBuilder("[");
    for (int i = 0; i < v.length; i++) sb.append(i > 0 ? "," : "").append(v[i]);
    return sb.append(']').toString();
  }

  /**
   * An Elasticsearch-9.2-like shard (kind "es": dense_vector fields left out of _source;
   * "es-opaque": the same, "emb" under a format no reader knows) or an OpenSearch-3-like one
   * ("os": knn_vector fields replaced by the number 1 in _source). Fields: "emb" float dim 4
   * (Elasticsearch: cosine, stored normalised with the length in the NUMERIC doc value
   * "emb._magnitude" when it is not 1, as DenseVectorFieldMapper does; every 4th doc has
   * none), "obj.bv" byte dim 3 (every doc), "parts.pv" float dim 2 in nested objects (every
   * 5th doc has two; children first, then the parent, as Elasticsearch indexes nested
   * documents), "parts.sub.sv" float dim 3 one level deeper (0-2 per part),
   * "obj.links.lv" float dim 2 in nested objects under a plain object (every 4th doc),
   * "tags.tv" byte dim 3 in a second root nested field (every 6th doc). Doc 7 keeps its "emb" in _source (a different value than the files hold).
   * Ids 11 and 23 are deleted (not in es-opaque). Standard output: {"_id":…,"_source":…} with the vectors as a
   * client sent them (after the cosine round trip Elasticsearch itself gives back).
   */
  static void es(Path out, String kind, int n) throws Exception {
    boolean os = kind.equals("os");
    KnnVectorsFormat hnsw = KnnVectorsFormat.forName("Lucene99HnswVectorsFormat");
    KnnVectorsFormat embFormat = kind.equals("es-opaque") ? new Opaque() : hnsw;
    Codec base = Codec.getDefault();
    PerFieldKnnVectorsFormat perField = new PerFieldKnnVectorsFormat() {
      @Override public KnnVectorsFormat getKnnVectorsFormatForField(String field) {
        return field.equals("emb") ? embFormat : hnsw;
      }
    };
    Codec codec = new FilterCodec(base.getName(), base) {
      @Override public org.apache.lucene.codecs.KnnVectorsFormat knnVectorsFormat() { return perField; }
    };
    IndexWriterConfig cfg = new IndexWriterConfig().setCodec(codec).setMergePolicy(NoMergePolicy.INSTANCE)
        .setMaxBufferedDocs(1000).setRAMBufferSizeMB(64).setUseCompoundFile(false);
    Random r = new Random(99);
    Random deep = new Random(98); // the deeper nested vectors: r's draws stay as they were
    java.util.TreeMap<String, String> sent = new java.util.TreeMap<>();
    VectorSimilarityFunction cos = os ? VectorSimilarityFunction.EUCLIDEAN : VectorSimilarityFunction.COSINE;
    try (FSDirectory dir = FSDirectory.open(out); IndexWriter w = new IndexWriter(dir, cfg)) {
      for (int i = 0; i < n; i++) {
        if (i == n / 2) w.flush();
        String id = String.format("v%03d", i);
        Document d = new Document();
        d.add(new StoredField("_id", esId(id)));
        d.add(new StringField("_idterm", id, Field.Store.NO));
        d.add(new org.apache.lucene.document.NumericDocValuesField("_seq_no", i));
        d.add(new org.apache.lucene.document.NumericDocValuesField("_primary_term", 1));
        d.add(new org.apache.lucene.document.NumericDocValuesField("_version", 1));
        StringBuilder stored = new StringBuilder("{\"title\":\"doc " + i + "\"");
        StringBuilder orig = new StringBuilder(stored);
        if (i % 4 != 1) {
          float[] v = floats(r, 4, -1);
          float[] given = v.clone();
          float[] indexed = v;
          if (!os) {
            double sq = 0;
            for (float x : v) sq += x * x;
            float len = (float) Math.sqrt(sq);
            if (Math.abs(len - 1.0f) > 1e-3f) {
              indexed = new float[v.length];
              for (int k = 0; k < v.length; k++) indexed[k] = v[k] / len;
              d.add(new org.apache.lucene.document.NumericDocValuesField("emb._magnitude", Float.floatToRawIntBits(len)));
              for (int k = 0; k < v.length; k++) given[k] = indexed[k] * len; // what Elasticsearch gives back
            }
          }
          d.add(new KnnFloatVectorField("emb", indexed, cos));
          if (i == 7) {
            stored.append(",\"emb\":[9.0,9.0,9.0,9.0]");
            orig.append(",\"emb\":[9.0,9.0,9.0,9.0]");
          } else {
            if (os) stored.append(",\"emb\":1");
            orig.append(",\"emb\":").append(json(given));
          }
        }
        byte[] bv = bytes(r, 3, i);
        d.add(new KnnByteVectorField("obj.bv", bv, VectorSimilarityFunction.EUCLIDEAN));
        List<Document> block = new ArrayList<>();
        // nested below a plain object: obj.links (every 4th doc, one or two)
        StringBuilder sl = new StringBuilder(), ol = new StringBuilder();
        if (i % 4 == 0) {
          sl.append(",\"links\":[");
          ol.append(",\"links\":[");
          for (int j = 0; j < 1 + (i / 4) % 2; j++) {
            float[] lv = floats(deep, 2, -1);
            block.add(child("obj.links", "obj.links.lv", lv));
            sl.append(j > 0 ? "," : "").append("{\"j\":" + j + (os ? ",\"lv\":1" : "") + "}");
            ol.append(j > 0 ? "," : "").append("{\"j\":" + j + ",\"lv\":" + json(lv) + "}");
          }
          sl.append(']');
          ol.append(']');
        }
        stored.append(",\"obj\":{\"k\":" + i + (os ? ",\"bv\":1" : "") + sl + "}");
        orig.append(",\"obj\":{\"k\":" + i + ",\"bv\":" + json(bv) + ol + "}");
        if (i % 5 == 0) {
          StringBuilder sp = new StringBuilder(",\"parts\":[");
          StringBuilder op = new StringBuilder(",\"parts\":[");
          for (int c = 0; c < 2; c++) {
            float[] pv = floats(r, 2, -1);
            // two levels: parts.sub inside each part (0, 1 or 2), its documents before the part's
            StringBuilder ss = new StringBuilder(), os_ = new StringBuilder();
            int subs = (i / 5 + c) % 3;
            if (subs > 0) {
              ss.append(",\"sub\":[");
              os_.append(",\"sub\":[");
              for (int j = 0; j < subs; j++) {
                float[] sv = floats(deep, 3, -1);
                block.add(child("parts.sub", "parts.sub.sv", sv));
                ss.append(j > 0 ? "," : "").append("{\"m\":" + j + (os ? ",\"sv\":1" : "") + "}");
                os_.append(j > 0 ? "," : "").append("{\"m\":" + j + ",\"sv\":" + json(sv) + "}");
              }
              ss.append(']');
              os_.append(']');
            }
            block.add(child("parts", "parts.pv", pv));
            sp.append(c > 0 ? "," : "").append("{\"n\":" + c + (os ? ",\"pv\":1" : "") + ss + "}");
            op.append(c > 0 ? "," : "").append("{\"n\":" + c + ",\"pv\":" + json(pv) + os_ + "}");
          }
          stored.append(sp).append(']');
          orig.append(op).append(']');
        }
        // a second nested field after parts: tags (every 6th doc, two byte vectors)
        if (i % 6 == 0) {
          StringBuilder st = new StringBuilder(",\"tags\":["), ot = new StringBuilder(",\"tags\":[");
          for (int j = 0; j < 2; j++) {
            byte[] tv = bytes(deep, 3, -1);
            Document child = new Document();
            child.add(new StringField("_nested_path", "tags", Field.Store.NO));
            child.add(new KnnByteVectorField("tags.tv", tv, VectorSimilarityFunction.EUCLIDEAN));
            block.add(child);
            st.append(j > 0 ? "," : "").append("{\"t\":" + j + (os ? ",\"tv\":1" : "") + "}");
            ot.append(j > 0 ? "," : "").append("{\"t\":" + j + ",\"tv\":" + json(tv) + "}");
          }
          stored.append(st).append(']');
          orig.append(ot).append(']');
        }
        stored.append('}');
        orig.append('}');
        d.add(new StoredField("_source", stored.toString().getBytes(StandardCharsets.UTF_8)));
        block.add(d);
        w.addDocuments(block);
        sent.put(id, orig.toString());
      }
      // (an index under the opaque format cannot apply deletes: Lucene would open it)
      for (String gone : kind.equals("es-opaque") ? new String[0] : new String[] {"v011", "v023"}) {
        w.deleteDocuments(new Term("_idterm", gone));
        sent.remove(gone);
      }
      w.commit();
    }
    Files.deleteIfExists(out.resolve("write.lock"));
    for (var e : sent.entrySet()) {
      System.out.println("{\"_id\":\"" + e.getKey() + "\",\"_source\":" + e.getValue() + "}");
    }
  }

  /** A nested child document of `path` with one float vector. */
  static Document child(String path, String field, float[] v) {
    Document child = new Document();
    child.add(new StringField("_nested_path", path, Field.Store.NO));
    child.add(new KnnFloatVectorField(field, v, VectorSimilarityFunction.EUCLIDEAN));
    return child;
  }

  static final char[] HEX = "0123456789abcdef".toCharArray();

  static void hex(StringBuilder sb, byte b) { sb.append(HEX[(b >> 4) & 15]).append(HEX[b & 15]); }

  /** One line per live document and vector field: the raw little-endian bytes of its vector. */
  static void dump(Path index, String outName) throws Exception {
    Method iterator = null, index_ = null, fvAt = null, bvAt = null, fvCur = null, bvCur = null;
    Class<?> fvv = Class.forName("org.apache.lucene.index.FloatVectorValues");
    Class<?> bvv = Class.forName("org.apache.lucene.index.ByteVectorValues");
    boolean lucene10;
    try {
      iterator = Class.forName("org.apache.lucene.index.KnnVectorValues").getMethod("iterator");
      index_ = Class.forName("org.apache.lucene.index.KnnVectorValues$DocIndexIterator").getMethod("index");
      fvAt = fvv.getMethod("vectorValue", int.class);
      bvAt = bvv.getMethod("vectorValue", int.class);
      lucene10 = true;
    } catch (ClassNotFoundException e) {
      fvCur = fvv.getMethod("vectorValue");
      bvCur = bvv.getMethod("vectorValue");
      lucene10 = false;
    }
    OutputStream os = outName.equals("-") ? System.out : new FileOutputStream(outName);
    try (PrintStream out = new PrintStream(os, false, "US-ASCII");
        FSDirectory dir = FSDirectory.open(index);
        DirectoryReader reader = DirectoryReader.open(dir)) {
      out.println("{\"lucene\":\"" + org.apache.lucene.util.Version.LATEST + "\",\"maxDoc\":" + reader.maxDoc()
          + ",\"numDocs\":" + reader.numDocs() + "}");
      for (LeafReaderContext ctx : reader.leaves()) {
        LeafReader leaf = ctx.reader();
        String seg = ((SegmentReader) leaf).getSegmentName();
        Bits live = leaf.getLiveDocs();
        List<FieldInfo> fields = new ArrayList<>();
        for (FieldInfo fi : leaf.getFieldInfos()) if (fi.getVectorDimension() > 0) fields.add(fi);
        fields.sort((x, y) -> x.name.compareTo(y.name));
        for (FieldInfo fi : fields) {
          boolean isFloat = fi.getVectorEncoding() == VectorEncoding.FLOAT32;
          Object values = isFloat ? leaf.getFloatVectorValues(fi.name) : leaf.getByteVectorValues(fi.name);
          if (values == null) continue;
          DocIdSetIterator it = lucene10 ? (DocIdSetIterator) iterator.invoke(values) : (DocIdSetIterator) values;
          for (int doc = it.nextDoc(); doc != DocIdSetIterator.NO_MORE_DOCS; doc = it.nextDoc()) {
            if (live != null && !live.get(doc)) continue;
            Object v = lucene10
                ? (isFloat ? fvAt : bvAt).invoke(values, (Integer) index_.invoke(it))
                : (isFloat ? fvCur : bvCur).invoke(values);
            StringBuilder sb = new StringBuilder();
            sb.append("{\"seg\":\"").append(seg).append("\",\"doc\":").append(doc)
                .append(",\"field\":\"").append(fi.name).append("\",\"format\":\"")
                .append(fi.getAttribute("PerFieldKnnVectorsFormat.format")).append("\",\"encoding\":\"")
                .append(fi.getVectorEncoding()).append("\",\"dim\":").append(fi.getVectorDimension())
                .append(",\"hex\":\"");
            if (isFloat) {
              for (float f : (float[]) v) {
                int bits = Float.floatToRawIntBits(f);
                for (int k = 0; k < 4; k++) hex(sb, (byte) (bits >>> (8 * k)));
              }
            } else {
              for (byte b : (byte[]) v) hex(sb, b);
            }
            sb.append("\"}");
            out.println(sb);
          }
        }
      }
    }
  }

  /**
   * Reads every live vector of every field `rounds` times with Lucene 9.9's own
   * FloatVectorValues / ByteVectorValues (direct calls: run with the 9.9.1 jar); prints
   * vectors per CPU-second of this thread and a checksum (the first element of each vector:
   * float bits or signed byte) that the Rust side (examples/vectors_bench.rs) prints alike.
   */
  static void bench(Path index, int rounds) throws Exception {
    var bean = ManagementFactory.getThreadMXBean();
    long vectors = 0, sum = 0;
    long t0 = bean.getCurrentThreadCpuTime();
    try (FSDirectory dir = FSDirectory.open(index); DirectoryReader reader = DirectoryReader.open(dir)) {
      for (int round = 0; round < rounds; round++) {
        for (LeafReaderContext ctx : reader.leaves()) {
          LeafReader leaf = ctx.reader();
          Bits live = leaf.getLiveDocs();
          for (FieldInfo fi : leaf.getFieldInfos()) {
            if (fi.getVectorDimension() == 0) continue;
            if (fi.getVectorEncoding() == VectorEncoding.FLOAT32) {
              org.apache.lucene.index.FloatVectorValues values = leaf.getFloatVectorValues(fi.name);
              for (int doc = values.nextDoc(); doc != DocIdSetIterator.NO_MORE_DOCS; doc = values.nextDoc()) {
                if (live != null && !live.get(doc)) continue;
                sum += Float.floatToRawIntBits(values.vectorValue()[0]);
                vectors++;
              }
            } else {
              org.apache.lucene.index.ByteVectorValues values = leaf.getByteVectorValues(fi.name);
              for (int doc = values.nextDoc(); doc != DocIdSetIterator.NO_MORE_DOCS; doc = values.nextDoc()) {
                if (live != null && !live.get(doc)) continue;
                sum += values.vectorValue()[0];
                vectors++;
              }
            }
          }
        }
      }
    }
    double cpu = (bean.getCurrentThreadCpuTime() - t0) / 1e9;
    System.out.printf("java lucene %s: %d vectors in %.3f CPU-s = %.0f vectors/CPU-s (checksum %d)%n",
        org.apache.lucene.util.Version.LATEST, vectors, cpu, vectors / cpu, sum);
  }

  /**
   * A bench index: `docs` documents with a float vector "emb" and a byte vector "bvec" of
   * `dim` dimensions (Lucene99HnswVectorsFormat), a segment every 50,000 documents, every
   * 100th document deleted.
   */
  static void bigmake(Path out, int docs, int dim) throws Exception {
    IndexWriterConfig cfg = new IndexWriterConfig().setMergePolicy(NoMergePolicy.INSTANCE)
        .setMaxBufferedDocs(50_000).setRAMBufferSizeMB(1024).setUseCompoundFile(false);
    Random r = new Random(5);
    try (FSDirectory dir = FSDirectory.open(out); IndexWriter w = new IndexWriter(dir, cfg)) {
      for (int id = 0; id < docs; id++) {
        Document d = new Document();
        d.add(new StringField("_id", Integer.toString(id), Field.Store.YES));
        d.add(new KnnFloatVectorField("emb", floats(r, dim, id), VectorSimilarityFunction.EUCLIDEAN));
        d.add(new KnnByteVectorField("bvec", bytes(r, dim, id), VectorSimilarityFunction.EUCLIDEAN));
        w.addDocument(d);
        if (id % 100 == 99) w.deleteDocuments(new Term("_id", Integer.toString(id - 50)));
      }
      w.commit();
    }
    Files.deleteIfExists(out.resolve("write.lock"));
  }
}
