// Writes small Lucene 4.10 indexes (the Lucene of Elasticsearch 1.x) and dumps what Lucene 4.10
// reads back from them: the fixtures of crates/lucene/tests/lucene4.rs. Compile and run against
// Debian's liblucene4.10-java jars (unpacked, not installed: see scripts/make-lucene4-fixtures).
//
// usage: java MakeLucene4 <outDir> <cfs|nocfs|nosource|dvtypes> <seed> [Lucene42|HighCompression|Dummy]
//
// With nosource, one segment of 40 documents (3 deleted, no compound file) as Elasticsearch 1.x
// stores them with `_source: {enabled: false}`: a stored `_uid` ("doc#doc-N") and `_timestamp`, no
// `_source`, and doc values of two types: `n` (NUMERIC, some documents none) and `tag`
// (SORTED_SET, one or two values, some documents none). Whether Elasticsearch 1.x wrote its numeric
// `doc_values: true` fields as NUMERIC (rather than in an encoding of its own) is not established here. Besides the golden, it writes
// <outDir>.docvalues.jsonl: per live document, the values Lucene 4.10 reads back
// ({"seg":"_0","doc":3,"id":"doc-3","n":-41,"tag":["b","c"]}; "n" null when the document has none).
//
// With dvtypes, one segment of 300 documents (11 deleted) with a doc-values field of every type and
// encoding Lucene 4.10 writes: NUMERIC `gcd` (GCD compressed) and `table` (table compressed), both
// with missing values; BINARY `bin` (variable length, some missing) and `binfix` (fixed length);
// SORTED `sorted` (some missing); SORTED_NUMERIC `snum` (0–3 values) and `snum1` (one each);
// SORTED_SET `ss1` (at most one value: single-valued encoding); and SORTED `big` with 1 500 terms
// of different lengths (a prefix-compressed terms dictionary). It writes <outDir>.docvalues.jsonl:
// per live document what Lucene 4.10 reads back of every field but `big` (binary as base64).
//
// With Lucene42, two smaller segments (150 documents, 12 deleted; 60) are written under the codec name "Lucene42" with that codec's segment
// info (Lucene40SegmentInfo, no footer) and field infos (Lucene42FieldInfos, no footer) formats,
// through the writers of Lucene 4.10's test framework, as Lucene 4.2–4.5 wrote them (postings,
// stored fields and doc values stay 4.10's, which Lucene42Codec reads by their per-field names);
// Lucene 4.10 then reads the index back with its own Lucene42 codec for the golden.
//
// With HighCompression, two small segments (131 documents, 9 deleted; 40 with one big document)
// are written by the test framework's HighCompressionCompressingCodec: Lucene 4.10's codec with
// CompressingStoredFieldsFormat in HIGH_COMPRESSION mode (DEFLATE chunks, format name
// "HighCompressionCompressingStoredFields", here with 1 KiB chunks so big documents are sliced).
// Elasticsearch 1.x never wrote this mode; only Lucene's test codecs do. Lucene reads the index
// back through the codec's SPI name for the golden.
//
// With Dummy, one segment of 12 documents by the test framework's DummyCompressingCodec (stored
// fields "compressed" by a test-only no-op mode, format name "DummyCompressingStoredFields"):
// a stored-fields format the crate does not read, for the tests of what an unsupported format
// does to a migration.
//
// The index has three segments (one commit each, no merges): 520 documents with one deleted
// (Lucene writes the .del as d-gaps), 200 with 40 deleted (written as plain bits), and 120 with
// none, the last holding documents larger than two stored-fields chunks (which Lucene 4.x
// compresses in slices). Documents carry what Elasticsearch 1.x stores: _uid ("type#id", string),
// _source (binary), and _timestamp / _ttl / an int / a float / a double stored value; every 25th
// document stores nothing. Like Elasticsearch 1.x with `_source: {compress: true}`, every third
// document's _source is LZF-compressed by the compress-lzf library Elasticsearch 1.x used; documents
// with a _parent ("type#id") also store the _routing Elasticsearch 1.x derived from it. Every other document has a NUMERIC doc-values field (which the crate does
// not decode for Lucene 4.x: it must say so).
//
// Writes <outDir>.sources.jsonl: per live document with a _source, in segment order, its type, id,
// routing and _source as JSON text (decompressed by compress-lzf where compressed):
// {"type":"tweet","id":"doc-3","routing":null,"source":"{...}"}.
//
// Writes <outDir>.golden.jsonl: a header line (segments file, counts, per-segment codec, version,
// compound flag, delete counts), then one line per live document in segment order, as the other
// goldens of the crate: {"seg":"_0","doc":3,"fields":[{"name":..,"type":..,"value"|"bits":..}]}.
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.lucene.analysis.core.KeywordAnalyzer;
import org.apache.lucene.codecs.*;
import org.apache.lucene.codecs.compressing.HighCompressionCompressingCodec;
import org.apache.lucene.codecs.compressing.dummy.DummyCompressingCodec;
import org.apache.lucene.codecs.lucene40.Lucene40SegmentInfoFormat;
import org.apache.lucene.codecs.lucene40.Lucene40SegmentInfoWriter;
import org.apache.lucene.codecs.lucene410.Lucene410Codec;
import org.apache.lucene.codecs.lucene42.Lucene42FieldInfosFormat;
import org.apache.lucene.codecs.lucene42.Lucene42FieldInfosWriter;
import org.apache.lucene.document.*;
import org.apache.lucene.index.*;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;
import org.apache.lucene.util.Version;

public class MakeLucene4 {
  static final String[] WORDS = {
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "índigo", "juliett",
    "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "ünïcode", "日本"
  };

  public static void main(String[] args) throws Exception {
    File out = new File(args[0]);
    boolean cfs = args[1].equals("cfs");
    long seed = Long.parseLong(args[2]);
    Random rnd = new Random(seed);
    if (args[1].equals("dvtypes")) {
      dvtypes(out, rnd);
      dumpDocValueTypes(out, new File(args[0] + ".docvalues.jsonl"));
      return;
    }
    if (args[1].equals("nosource")) {
      sourceless(out, rnd);
      dump(out, new File(args[0] + ".golden.jsonl"));
      dumpDocValues(out, new File(args[0] + ".docvalues.jsonl"));
      new File(args[0] + ".sources.jsonl").delete();
      return;
    }
    Directory dir = FSDirectory.open(out);
    int next = 0;
    boolean l42 = args.length > 3 && args[3].equals("Lucene42");
    boolean high = args.length > 3 && args[3].equals("HighCompression");
    boolean dummy = args.length > 3 && args[3].equals("Dummy");
    int[][] plan = l42 ? new int[][] {{150, 12, 0}, {60, 0, 1}} // docs, deletes, big docs
        : high ? new int[][] {{131, 9, 0}, {40, 0, 1}}
        : dummy ? new int[][] {{12, 0, 0}}
        : new int[][] {{520, 1, 0}, {200, 40, 0}, {120, 0, 1}};
    for (int[] p : plan) {
      IndexWriterConfig cfg = new IndexWriterConfig(Version.LUCENE_4_10_4, new KeywordAnalyzer());
      cfg.setUseCompoundFile(cfs);
      cfg.setMergePolicy(NoMergePolicy.INSTANCE);
      cfg.setRAMBufferSizeMB(64);
      if (l42) cfg.setCodec(lucene42());
      if (high) cfg.setCodec(new HighCompressionCompressingCodec(1024, false));
      if (dummy) cfg.setCodec(new DummyCompressingCodec(1024, false));
      IndexWriter w = new IndexWriter(dir, cfg);
      int first = next;
      for (int i = 0; i < p[0]; i++) {
        w.addDocument(doc(rnd, next++, p[2] == 1 && i == 7));
      }
      w.commit();
      Set<Integer> deleted = new TreeSet<>();
      while (deleted.size() < p[1]) deleted.add(first + rnd.nextInt(p[0]));
      for (int d : deleted) w.deleteDocuments(new Term("_uid", uid(d)));
      w.close();
    }
    dir.close();
    dump(out, new File(args[0] + ".golden.jsonl"));
  }

  static void sourceless(File out, Random rnd) throws Exception {
    IndexWriterConfig cfg = new IndexWriterConfig(Version.LUCENE_4_10_4, new KeywordAnalyzer());
    cfg.setUseCompoundFile(false);
    cfg.setMergePolicy(NoMergePolicy.INSTANCE);
    String[] tags = {"alpha", "bravo", "charlie", "délta", "日本"};
    try (Directory dir = FSDirectory.open(out); IndexWriter w = new IndexWriter(dir, cfg)) {
      for (int n = 0; n < 40; n++) {
        Document d = new Document();
        d.add(new StringField("_uid", "doc#doc-" + n, Field.Store.YES));
        d.add(new StoredField("_timestamp", 1400000000000L + n * 1000L));
        if (n % 9 != 4) d.add(new NumericDocValuesField("n", (n - 20) * 1000003L + rnd.nextInt(7)));
        int k = n % 6 == 5 ? 0 : 1 + rnd.nextInt(2);
        for (int i = 0; i < k; i++) {
          d.add(new SortedSetDocValuesField("tag", new org.apache.lucene.util.BytesRef(tags[rnd.nextInt(tags.length)])));
        }
        w.addDocument(d);
      }
      w.commit();
      for (int n : new int[] {3, 17, 31}) w.deleteDocuments(new Term("_uid", "doc#doc-" + n));
    }
  }

  static void dvtypes(File out, Random rnd) throws Exception {
    IndexWriterConfig cfg = new IndexWriterConfig(Version.LUCENE_4_10_4, new KeywordAnalyzer());
    cfg.setUseCompoundFile(false);
    cfg.setMergePolicy(NoMergePolicy.INSTANCE);
    cfg.setRAMBufferSizeMB(64);
    long[] table = {-5, 7, 1L << 40};
    try (Directory dir = FSDirectory.open(out); IndexWriter w = new IndexWriter(dir, cfg)) {
      for (int n = 0; n < 300; n++) {
        Document d = new Document();
        d.add(new StringField("_uid", "doc#doc-" + n, Field.Store.YES));
        if (n % 7 != 3) d.add(new NumericDocValuesField("gcd", 1000 + 250L * rnd.nextInt(100000) - 250L * 50000));
        if (n % 5 != 1) d.add(new NumericDocValuesField("table", table[rnd.nextInt(3)]));
        if (n % 6 != 2) {
          byte[] b = new byte[rnd.nextInt(40)];
          rnd.nextBytes(b);
          d.add(new BinaryDocValuesField("bin", new BytesRef(b)));
        }
        byte[] f = new byte[4];
        rnd.nextBytes(f);
        d.add(new BinaryDocValuesField("binfix", new BytesRef(f)));
        if (n % 4 != 0) d.add(new SortedDocValuesField("sorted", new BytesRef(WORDS[rnd.nextInt(WORDS.length)])));
        int k = rnd.nextInt(4);
        for (int i = 0; i < k; i++) d.add(new SortedNumericDocValuesField("snum", rnd.nextLong() >> rnd.nextInt(60)));
        d.add(new SortedNumericDocValuesField("snum1", rnd.nextInt(1000) - 500));
        if (n % 3 != 1) d.add(new SortedSetDocValuesField("ss1", new BytesRef(WORDS[rnd.nextInt(WORDS.length)])));
        StringBuilder t = new StringBuilder("term-").append(rnd.nextInt(1500));
        for (int i = rnd.nextInt(5); i > 0; i--) t.append('x');
        d.add(new SortedDocValuesField("big", new BytesRef(t.toString())));
        w.addDocument(d);
      }
      for (int n = 0; n < 1500; n++) {
        // enough distinct terms for a prefix-compressed dictionary, in documents deleted below
        if (n < 300) continue;
        Document d = new Document();
        d.add(new StringField("_uid", "pad#pad-" + n, Field.Store.NO));
        d.add(new SortedDocValuesField("big", new BytesRef("term-" + n + "y")));
        d.add(new BinaryDocValuesField("binfix", new BytesRef(new byte[4])));
        d.add(new SortedNumericDocValuesField("snum1", 0));
        w.addDocument(d);
      }
      w.commit();
      for (int n = 300; n < 1500; n++) w.deleteDocuments(new Term("_uid", "pad#pad-" + n));
      for (int n : new int[] {5, 50, 51, 99, 120, 150, 200, 201, 250, 298, 299}) {
        w.deleteDocuments(new Term("_uid", "doc#doc-" + n));
      }
    }
  }

  static void dumpDocValueTypes(File index, File out) throws Exception {
    try (Directory dir = FSDirectory.open(index); DirectoryReader reader = DirectoryReader.open(dir);
         Writer w = new OutputStreamWriter(new FileOutputStream(out), StandardCharsets.UTF_8)) {
      for (AtomicReaderContext ctx : reader.leaves()) {
        AtomicReader seg = ctx.reader();
        String name = ((SegmentReader) seg).getSegmentInfo().info.name;
        org.apache.lucene.util.Bits live = seg.getLiveDocs();
        NumericDocValues gcd = seg.getNumericDocValues("gcd"), table = seg.getNumericDocValues("table");
        org.apache.lucene.util.Bits hasGcd = seg.getDocsWithField("gcd"), hasTable = seg.getDocsWithField("table");
        BinaryDocValues bin = seg.getBinaryDocValues("bin"), binfix = seg.getBinaryDocValues("binfix");
        org.apache.lucene.util.Bits hasBin = seg.getDocsWithField("bin");
        SortedDocValues sorted = seg.getSortedDocValues("sorted");
        SortedNumericDocValues snum = seg.getSortedNumericDocValues("snum"), snum1 = seg.getSortedNumericDocValues("snum1");
        SortedSetDocValues ss1 = seg.getSortedSetDocValues("ss1");
        Base64.Encoder b64 = Base64.getEncoder();
        for (int doc = 0; doc < seg.maxDoc(); doc++) {
          if (live != null && !live.get(doc)) continue;
          StringBuilder b = new StringBuilder("{\"seg\":").append(esc(name)).append(",\"doc\":").append(doc)
              .append(",\"gcd\":").append(hasGcd.get(doc) ? Long.toString(gcd.get(doc)) : "null")
              .append(",\"table\":").append(hasTable.get(doc) ? Long.toString(table.get(doc)) : "null")
              .append(",\"bin\":").append(hasBin.get(doc) ? esc(b64.encodeToString(BytesRef.deepCopyOf(bin.get(doc)).bytes)) : "null")
              .append(",\"binfix\":").append(esc(b64.encodeToString(BytesRef.deepCopyOf(binfix.get(doc)).bytes)));
          int ord = sorted.getOrd(doc);
          b.append(",\"sorted\":").append(ord < 0 ? "null" : esc(sorted.lookupOrd(ord).utf8ToString()));
          for (Object[] sn : new Object[][] {{"snum", snum}, {"snum1", snum1}}) {
            SortedNumericDocValues v = (SortedNumericDocValues) sn[1];
            v.setDocument(doc);
            b.append(",\"").append(sn[0]).append("\":[");
            for (int i = 0; i < v.count(); i++) b.append(i > 0 ? "," : "").append(v.valueAt(i));
            b.append(']');
          }
          b.append(",\"ss1\":[");
          ss1.setDocument(doc);
          boolean first = true;
          for (long o = ss1.nextOrd(); o != SortedSetDocValues.NO_MORE_ORDS; o = ss1.nextOrd()) {
            b.append(first ? "" : ",").append(esc(ss1.lookupOrd(o).utf8ToString()));
            first = false;
          }
          w.write(b.append("]}\n").toString());
        }
      }
    }
  }

  static void dumpDocValues(File index, File out) throws Exception {
    try (Directory dir = FSDirectory.open(index); DirectoryReader reader = DirectoryReader.open(dir);
         Writer w = new OutputStreamWriter(new FileOutputStream(out), StandardCharsets.UTF_8)) {
      for (AtomicReaderContext ctx : reader.leaves()) {
        AtomicReader seg = ctx.reader();
        String name = ((SegmentReader) seg).getSegmentInfo().info.name;
        org.apache.lucene.util.Bits live = seg.getLiveDocs();
        NumericDocValues n = seg.getNumericDocValues("n");
        org.apache.lucene.util.Bits hasN = seg.getDocsWithField("n");
        SortedSetDocValues tag = seg.getSortedSetDocValues("tag");
        for (int doc = 0; doc < seg.maxDoc(); doc++) {
          if (live != null && !live.get(doc)) continue;
          String id = seg.document(doc).get("_uid").split("#", 2)[1];
          StringBuilder b = new StringBuilder("{\"seg\":").append(esc(name)).append(",\"doc\":").append(doc)
              .append(",\"id\":").append(esc(id)).append(",\"n\":")
              .append(hasN.get(doc) ? Long.toString(n.get(doc)) : "null").append(",\"tag\":[");
          tag.setDocument(doc);
          boolean first = true;
          for (long ord = tag.nextOrd(); ord != SortedSetDocValues.NO_MORE_ORDS; ord = tag.nextOrd()) {
            if (!first) b.append(',');
            first = false;
            b.append(esc(tag.lookupOrd(ord).utf8ToString()));
          }
          w.write(b.append("]}\n").toString());
        }
      }
    }
  }

  static Codec lucene42() {
    final FieldInfosFormat fis = new Lucene42FieldInfosFormat() {
      @Override public FieldInfosWriter getFieldInfosWriter() { return new Lucene42FieldInfosWriter(); }
    };
    final SegmentInfoFormat sis = new Lucene40SegmentInfoFormat() {
      @Override public SegmentInfoWriter getSegmentInfoWriter() { return new Lucene40SegmentInfoWriter(); }
    };
    return new FilterCodec("Lucene42", new Lucene410Codec()) {
      @Override public FieldInfosFormat fieldInfosFormat() { return fis; }
      @Override public SegmentInfoFormat segmentInfoFormat() { return sis; }
    };
  }

  static String uid(int n) {
    return (n % 3 == 0 ? "tweet" : "user") + "#doc-" + n;
  }

  static Document doc(Random rnd, int n, boolean big) {
    Document d = new Document();
    if (n % 25 == 24) {
      d.add(new StringField("_uid", uid(n), Field.Store.NO));
      return d;
    }
    d.add(new StringField("_uid", uid(n), Field.Store.YES));
    StringBuilder src = new StringBuilder("{\"n\":" + n + ",\"text\":\"");
    int words = big ? 5200 : 2 + rnd.nextInt(6);
    for (int i = 0; i < words; i++) src.append(WORDS[rnd.nextInt(WORDS.length)]).append(' ');
    src.append("\",\"price\":").append(rnd.nextInt(100000) / 100.0).append('}');
    byte[] json = src.toString().getBytes(StandardCharsets.UTF_8);
    d.add(new StoredField("_source", n % 3 == 2 ? com.ning.compress.lzf.LZFEncoder.encode(json) : json));
    d.add(new StoredField("_timestamp", 1400000000000L + rnd.nextInt(1 << 30)));
    if (n % 4 == 0) d.add(new StoredField("_ttl", rnd.nextLong()));
    if (n % 3 == 1) d.add(new StoredField("count", rnd.nextInt() >> rnd.nextInt(31)));
    if (n % 5 == 2) d.add(new StoredField("ratio", rnd.nextFloat() * (rnd.nextBoolean() ? -1e6f : 1e-3f)));
    if (n % 7 == 3) d.add(new StoredField("score", rnd.nextGaussian() * 1e12));
    if (n % 11 == 5) {
      d.add(new StoredField("_parent", "user#doc-" + (n / 2)));
      d.add(new StoredField("_routing", "doc-" + (n / 2)));
    }
    if (n % 2 == 0) d.add(new NumericDocValuesField("price_dv", n * 7L));
    return d;
  }

  static String esc(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    return b.append('"').toString();
  }

  static void dump(File index, File golden) throws Exception {
    Directory dir = FSDirectory.open(index);
    SegmentInfos sis = new SegmentInfos();
    sis.read(dir);
    DirectoryReader reader = DirectoryReader.open(dir);
    String sourcesPath = golden.getPath().replace(".golden.jsonl", ".sources.jsonl");
    try (Writer out = new OutputStreamWriter(new FileOutputStream(golden), StandardCharsets.UTF_8);
         Writer sources = new OutputStreamWriter(new FileOutputStream(sourcesPath), StandardCharsets.UTF_8)) {
      StringBuilder h = new StringBuilder();
      h.append("{\"lucene\":\"").append(Version.LATEST).append("\",\"segmentsFile\":")
          .append(esc(sis.getSegmentsFileName())).append(",\"generation\":").append(sis.getGeneration())
          .append(",\"maxDoc\":").append(reader.maxDoc()).append(",\"numDocs\":").append(reader.numDocs())
          .append(",\"segments\":[");
      for (int i = 0; i < sis.size(); i++) {
        SegmentCommitInfo s = sis.info(i);
        if (i > 0) h.append(',');
        h.append("{\"name\":").append(esc(s.info.name))
            .append(",\"maxDoc\":").append(s.info.getDocCount())
            .append(",\"numDocs\":").append(s.info.getDocCount() - s.getDelCount())
            .append(",\"codec\":").append(esc(s.info.getCodec().getName()))
            .append(",\"attributes\":{}")
            .append(",\"version\":").append(esc(s.info.getVersion().toString()))
            .append(",\"useCompoundFile\":").append(s.info.getUseCompoundFile())
            .append(",\"delCount\":").append(s.getDelCount())
            .append(",\"softDelCount\":0")
            .append(",\"delGen\":").append(s.getDelGen())
            .append(",\"fieldInfosGen\":").append(s.getFieldInfosGen())
            .append(",\"docValuesGen\":").append(s.getDocValuesGen())
            .append('}');
      }
      out.write(h.append("]}\n").toString());
      for (AtomicReaderContext ctx : reader.leaves()) {
        SegmentReader seg = (SegmentReader) ctx.reader();
        String name = seg.getSegmentInfo().info.name;
        org.apache.lucene.util.Bits live = seg.getLiveDocs();
        for (int doc = 0; doc < seg.maxDoc(); doc++) {
          if (live != null && !live.get(doc)) continue;
          final StringBuilder f = new StringBuilder();
          final Map<String, String> es = new HashMap<>();
          seg.document(doc, new StoredFieldVisitor() {
            void add(FieldInfo fi, String type, String kv) {
              if (f.length() > 0) f.append(',');
              f.append("{\"name\":").append(esc(fi.name)).append(",\"type\":\"").append(type).append("\",").append(kv).append('}');
            }
            @Override public Status needsField(FieldInfo fi) { return Status.YES; }
            @Override public void binaryField(FieldInfo fi, byte[] v) throws IOException {
              add(fi, "binary", "\"value\":\"" + Base64.getEncoder().encodeToString(v) + "\"");
              if (fi.name.equals("_source")) {
                byte[] plain = v.length > 2 && v[0] == 'Z' && v[1] == 'V' ? com.ning.compress.lzf.LZFDecoder.decode(v) : v;
                es.put("_source", new String(plain, StandardCharsets.UTF_8));
              }
            }
            @Override public void stringField(FieldInfo fi, String v) {
              add(fi, "string", "\"value\":" + esc(v));
              es.put(fi.name, v);
            }
            @Override public void intField(FieldInfo fi, int v) { add(fi, "int", "\"value\":" + v); }
            @Override public void longField(FieldInfo fi, long v) { add(fi, "long", "\"value\":" + v); }
            @Override public void floatField(FieldInfo fi, float v) {
              add(fi, "float", "\"bits\":\"" + Integer.toHexString(Float.floatToRawIntBits(v)) + "\"");
            }
            @Override public void doubleField(FieldInfo fi, double v) {
              add(fi, "double", "\"bits\":\"" + Long.toHexString(Double.doubleToRawLongBits(v)) + "\"");
            }
          });
          out.write("{\"seg\":" + esc(name) + ",\"doc\":" + doc + ",\"fields\":[" + f + "]}\n");
          if (es.containsKey("_source")) {
            String[] uid = es.get("_uid").split("#", 2);
            String routing = es.containsKey("_routing") ? esc(es.get("_routing")) : "null";
            sources.write("{\"type\":" + esc(uid[0]) + ",\"id\":" + esc(uid[1]) + ",\"routing\":" + routing
                + ",\"source\":" + esc(es.get("_source")) + "}\n");
          }
        }
      }
    }
    reader.close();
    dir.close();
  }
}
