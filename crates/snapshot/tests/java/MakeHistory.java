// Writes one Elasticsearch-like Lucene index through three commits — A, B and C — with real
// Lucene (8.x, 9.x or 10.x: the same source compiles against each), copies the files of each
// commit to <out>/A, <out>/B and <out>/C, and dumps what Lucene itself reads back from each
// copy. The Rust delta tests (full A, then delta A→B, then B→C) compare their result with
// these dumps. See scripts/make-delta-data.
//
//   java MakeHistory <out> <docs> <soft:true|false> <merge:none|B|C|BC>
//                    <retain:all|after-A|none> <seq:true|false> <routing:true|false>
//                    <cfs:true|false> [seed=7]
//   JVM options: -Dchange=0.2 (share of documents changed per commit), -Dflush=N (documents
//   per flushed segment, default docs/4), -DsrcBytes=150, -Dgolden=true|false (dumps).
//
// Fields, as Elasticsearch writes them: `_id` (indexed and stored in ES's binary encoding:
// 0xFE + packed digits for numeric ids, 0xFF + UTF-8 otherwise), `_source` (JSON bytes),
// `_routing` (stored string, every 5th document with routing=true), and the numeric doc
// values `_seq_no` (one sequence number per operation, with seq=true), `_primary_term`,
// `_version`. With soft=true, updates soft-delete the previous version through
// `__soft_deletes` and deletes add an Elasticsearch-style tombstone (only `_id` and the
// numbers, itself soft-deleted); retain= says which soft-deleted documents merges keep
// (`after-A`: operations after commit A, as Elasticsearch's retention leases would). With
// soft=false, updates and deletes are hard. merge= force-merges to one segment before the
// named commits. Commit user data carries history_uuid, max_seq_no and local_checkpoint.
//
// Changes per commit after A (chosen by the seed): updates of live documents (a few twice),
// deletes, new documents, a deleted id added again, a document deleted and added back, and
// a new document added then deleted before the commit.
//
// Outputs beside the copies, per commit X: X.live.jsonl — Lucene's live documents sorted by
// id, one {"id","routing","source"} per line (source as the JSON it is); X.seq_no.jsonl —
// every `_seq_no` value Lucene reads, {"seg","doc","value"} (deleted documents included);
// X.summary.txt — counts.
import java.io.*;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;
import org.apache.lucene.document.*;
import org.apache.lucene.index.*;
import org.apache.lucene.search.*;
import org.apache.lucene.store.*;
import org.apache.lucene.util.BytesRef;

public class MakeHistory {
  static final String SOFT = "__soft_deletes";
  static final String[] WORDS = ("amber basalt cedar dune ember fjord glade heath inlet jasper knoll lagoon "
      + "marsh nectar onyx prairie quartz ridge summit tundra umber valley willow xenon yarrow zephyr").split(" ");

  final Path out;
  final int docs;
  final boolean soft, seq, routing;
  final String merge, retain;
  final SplittableRandom rnd;
  final int srcBytes;
  final double change;
  final boolean golden;
  long seqNo = 0;
  static volatile long retainFrom = Long.MAX_VALUE;
  // id number -> version of the live document (absent: not live)
  final HashMap<Integer, Integer> live = new HashMap<>();
  int nextId;
  final Map<String, Integer> counts = new TreeMap<>();

  MakeHistory(String[] a) {
    out = Paths.get(a[0]);
    docs = Integer.parseInt(a[1]);
    soft = Boolean.parseBoolean(a[2]);
    merge = a[3];
    retain = a[4];
    seq = Boolean.parseBoolean(a[5]);
    routing = Boolean.parseBoolean(a[6]);
    rnd = new SplittableRandom(a.length > 8 ? Long.parseLong(a[8]) : 7);
    srcBytes = Integer.getInteger("srcBytes", 150);
    change = Double.parseDouble(System.getProperty("change", "0.2"));
    golden = Boolean.parseBoolean(System.getProperty("golden", "true"));
  }

  /** The id of document number n: every third one numeric, the others text. */
  static String id(int n) {
    return n % 3 == 0 ? Integer.toString(100000 + n) : "u" + n;
  }

  static BytesRef encodeId(String id) {
    boolean numeric = !id.isEmpty() && id.chars().allMatch(c -> c >= '0' && c <= '9');
    if (numeric) {
      byte[] b = new byte[1 + (id.length() + 1) / 2];
      b[0] = (byte) 0xFE;
      for (int i = 0; i < id.length(); i += 2) {
        int hi = id.charAt(i) - '0';
        int lo = i + 1 < id.length() ? id.charAt(i + 1) - '0' : 0x0F;
        b[1 + i / 2] = (byte) ((hi << 4) | lo);
      }
      return new BytesRef(b);
    }
    byte[] utf8 = id.getBytes(StandardCharsets.UTF_8);
    byte[] b = new byte[utf8.length + 1];
    b[0] = (byte) 0xFF;
    System.arraycopy(utf8, 0, b, 1, utf8.length);
    return new BytesRef(b);
  }

  static String decodeId(BytesRef r) {
    byte[] b = Arrays.copyOfRange(r.bytes, r.offset, r.offset + r.length);
    if ((b[0] & 0xFF) == 0xFF) return new String(b, 1, b.length - 1, StandardCharsets.UTF_8);
    if ((b[0] & 0xFF) == 0xFE) {
      StringBuilder s = new StringBuilder();
      for (int i = 1; i < b.length; i++) {
        int hi = (b[i] >> 4) & 0xF, lo = b[i] & 0xF;
        s.append((char) ('0' + hi));
        if (lo == 0xF && i == b.length - 1) break;
        s.append((char) ('0' + lo));
      }
      return s.toString();
    }
    throw new IllegalStateException("unexpected _id encoding");
  }

  String routingOf(int n) {
    return routing && n % 5 == 0 ? "r" + (n % 3) : null;
  }

  String source(int n, int version) {
    StringBuilder sb = new StringBuilder(srcBytes + 64);
    sb.append("{\"n\":").append(n).append(",\"v\":").append(version)
      .append(",\"tag\":\"").append(WORDS[(n * 7 + version) % WORDS.length]).append("\",\"body\":\"");
    SplittableRandom r = new SplittableRandom(n * 1_000_003L + version);
    while (sb.length() < srcBytes - 2) sb.append(WORDS[r.nextInt(WORDS.length)]).append(' ');
    sb.append("\"}");
    return sb.toString();
  }

  Term term(int n) {
    return new Term("_id", encodeId(id(n)));
  }

  void numbers(Document d, long s, int version) {
    if (seq) d.add(new NumericDocValuesField("_seq_no", s));
    d.add(new NumericDocValuesField("_primary_term", 1));
    d.add(new NumericDocValuesField("_version", version));
  }

  Document doc(int n, int version) {
    Document d = new Document();
    d.add(new StringField("_id", encodeId(id(n)), Field.Store.YES));
    d.add(new StoredField("_source", new BytesRef(source(n, version).getBytes(StandardCharsets.UTF_8))));
    String r = routingOf(n);
    if (r != null) d.add(new StringField("_routing", r, Field.Store.YES));
    numbers(d, seqNo++, version);
    return d;
  }

  void count(String what) {
    counts.merge(what, 1, Integer::sum);
  }

  void add(IndexWriter w, int n) throws IOException {
    w.addDocument(doc(n, 1));
    live.put(n, 1);
    count("add");
  }

  void update(IndexWriter w, int n) throws IOException {
    int v = live.get(n) + 1;
    if (soft) {
      w.softUpdateDocument(term(n), doc(n, v), new NumericDocValuesField(SOFT, 1));
    } else {
      w.updateDocument(term(n), doc(n, v));
    }
    live.put(n, v);
    count("update");
  }

  void delete(IndexWriter w, int n) throws IOException {
    if (soft) {
      Document tomb = new Document();
      tomb.add(new StringField("_id", encodeId(id(n)), Field.Store.YES));
      numbers(tomb, seqNo++, live.getOrDefault(n, 0) + 1);
      tomb.add(new NumericDocValuesField(SOFT, 1));
      w.softUpdateDocument(term(n), tomb, new NumericDocValuesField(SOFT, 1));
    } else {
      seqNo++;
      w.deleteDocuments(term(n));
    }
    live.remove(n);
    count("delete");
  }

  void readd(IndexWriter w, int n) throws IOException {
    if (soft) {
      w.softUpdateDocument(term(n), doc(n, 9), new NumericDocValuesField(SOFT, 1));
    } else {
      w.updateDocument(term(n), doc(n, 9));
    }
    live.put(n, 9);
    count("readd");
  }

  int randomLive() {
    while (true) {
      int n = rnd.nextInt(nextId);
      if (live.containsKey(n)) return n;
    }
  }

  void commit(IndexWriter w, String name) throws Exception {
    if (merge.contains(name)) {
      w.forceMerge(1);
      count("forceMerge");
    }
    Map<String, String> data = new HashMap<>();
    data.put("history_uuid", "hist-" + out.getFileName());
    data.put("translog_uuid", "tlog-" + out.getFileName());
    data.put("max_seq_no", Long.toString(seqNo - 1));
    data.put("local_checkpoint", Long.toString(seqNo - 1));
    w.setLiveCommitData(data.entrySet());
    w.commit();
    Path copy = out.resolve(name);
    Files.createDirectories(copy);
    Directory dir = w.getDirectory();
    SegmentInfos infos = SegmentInfos.readLatestCommit(dir);
    for (String f : infos.files(true)) {
      Path from = ((FSDirectory) dir).getDirectory().resolve(f);
      try {
        Files.createLink(copy.resolve(f), from);   // Lucene never rewrites a file: share it
      } catch (IOException | UnsupportedOperationException e) {
        Files.copy(from, copy.resolve(f));
      }
    }
    if (name.equals("A")) retainFrom = seqNo;
    String summary = "commit=" + name + " lucene=" + org.apache.lucene.util.Version.LATEST
        + " segments=" + infos.size() + " live=" + live.size() + " maxSeqNo=" + (seqNo - 1)
        + " ops=" + counts + "\n";
    Files.write(out.resolve(name + ".summary.txt"), summary.getBytes(StandardCharsets.UTF_8));
    System.out.print(summary);
    counts.clear();
    if (golden) dump(copy, name);
  }

  /** Changes between two commits. */
  void changes(IndexWriter w) throws IOException {
    int n = Math.max(4, (int) Math.round(docs * change));
    int updates = n / 2, deletes = n / 4, adds = n - updates - deletes;
    for (int i = 0; i < updates; i++) {
      int id = randomLive();
      update(w, id);
      if (i % 10 == 0) update(w, id);   // updated twice
    }
    List<Integer> deleted = new ArrayList<>();
    for (int i = 0; i < deletes; i++) {
      int id = randomLive();
      delete(w, id);
      deleted.add(id);
    }
    for (int i = 0; i < adds; i++) add(w, nextId++);
    // a document deleted and added back in the same interval
    int back = randomLive();
    delete(w, back);
    readd(w, back);
    // an id deleted in an earlier interval, added again
    for (int old = 0; old < nextId; old++) {
      if (!live.containsKey(old) && !deleted.contains(old)) {
        readd(w, old);
        break;
      }
    }
    // a new document that does not survive the interval
    int ghost = nextId++;
    add(w, ghost);
    delete(w, ghost);
  }

  @SuppressWarnings("unchecked")
  static Document stored(LeafReader r, int doc) throws Exception {
    try {
      Method m = LeafReader.class.getMethod("storedFields");
      Object sf = m.invoke(r);
      Method d = Class.forName("org.apache.lucene.index.StoredFields").getMethod("document", int.class);
      return (Document) d.invoke(sf, doc);
    } catch (NoSuchMethodException e) {
      return r.document(doc);
    }
  }

  static String json(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    return b.append('"').toString();
  }

  void dump(Path dir, String name) throws Exception {
    try (Directory d = FSDirectory.open(dir); DirectoryReader plain = DirectoryReader.open(d)) {
      DirectoryReader reader = soft ? new SoftDeletesDirectoryReaderWrapper(plain, SOFT) : plain;
      TreeMap<String, String> lines = new TreeMap<>();
      for (LeafReaderContext ctx : reader.leaves()) {
        LeafReader leaf = ctx.reader();
        org.apache.lucene.util.Bits liveDocs = leaf.getLiveDocs();
        for (int i = 0; i < leaf.maxDoc(); i++) {
          if (liveDocs != null && !liveDocs.get(i)) continue;
          Document doc = stored(leaf, i);
          String id = decodeId(doc.getBinaryValue("_id"));
          String r = doc.get("_routing");
          BytesRef src = doc.getBinaryValue("_source");
          String line = "{\"id\":" + json(id) + ",\"routing\":" + (r == null ? "null" : json(r))
              + ",\"source\":" + new String(src.bytes, src.offset, src.length, StandardCharsets.UTF_8) + "}";
          if (lines.put(id, line) != null) throw new IllegalStateException("two live documents with id " + id);
        }
      }
      if (lines.size() != live.size()) {
        throw new IllegalStateException(name + ": Lucene reads " + lines.size() + " live documents, the writer expects " + live.size());
      }
      try (Writer wr = Files.newBufferedWriter(out.resolve(name + ".live.jsonl"))) {
        for (String l : lines.values()) wr.write(l + "\n");
      }
      try (Writer wr = Files.newBufferedWriter(out.resolve(name + ".seq_no.jsonl"))) {
        for (LeafReaderContext ctx : plain.leaves()) {
          SegmentReader seg = (SegmentReader) ctx.reader();
          NumericDocValues v = seg.getNumericDocValues("_seq_no");
          if (v == null) continue;
          for (int doc = v.nextDoc(); doc != DocIdSetIterator.NO_MORE_DOCS; doc = v.nextDoc()) {
            wr.write("{\"seg\":\"" + seg.getSegmentName() + "\",\"doc\":" + doc + ",\"value\":" + v.longValue() + "}\n");
          }
        }
      }
    }
  }

  void run(boolean cfs) throws Exception {
    Path work = out.resolve("work");
    IndexWriterConfig cfg = new IndexWriterConfig();
    cfg.setUseCompoundFile(cfs);
    cfg.setMaxBufferedDocs(Integer.getInteger("flush", Math.max(10, docs / 4)));
    cfg.setRAMBufferSizeMB(256);
    LogDocMergePolicy log = new LogDocMergePolicy();
    log.setMergeFactor(1000);          // no merges but the forced ones
    log.setNoCFSRatio(cfs ? 1.0 : 0.0);
    MergePolicy mp = log;
    if (soft) {
      cfg.setSoftDeletesField(SOFT);
      if (retain.equals("all")) {
        mp = new SoftDeletesRetentionMergePolicy(SOFT, MatchAllDocsQuery::new, log);
      } else if (retain.equals("after-A")) {
        mp = new SoftDeletesRetentionMergePolicy(SOFT,
            () -> NumericDocValuesField.newSlowRangeQuery("_seq_no", retainFrom, Long.MAX_VALUE), log);
      }
    }
    cfg.setMergePolicy(mp);
    try (FSDirectory dir = FSDirectory.open(work); IndexWriter w = new IndexWriter(dir, cfg)) {
      // A: the documents, some updated and deleted on the way.
      for (nextId = 0; nextId < docs; nextId++) {
        add(w, nextId);
        int j = nextId - 20;
        if (j >= 0 && j % 17 == 0 && live.containsKey(j)) update(w, j);
        if (j >= 0 && j % 19 == 0 && live.containsKey(j)) delete(w, j);
      }
      commit(w, "A");
      changes(w);
      commit(w, "B");
      changes(w);
      commit(w, "C");
    }
    for (Path p : Files.list(work).toArray(Path[]::new)) Files.delete(p);
    Files.delete(work);
  }

  public static void main(String[] a) throws Exception {
    MakeHistory h = new MakeHistory(a);
    if (Files.exists(h.out)) throw new IllegalStateException(h.out + " exists");
    Files.createDirectories(h.out);
    h.run(Boolean.parseBoolean(a[7]));
  }
}
