// Writes a Lucene 4.10 index shaped like an Elasticsearch 1.x shard, for scripts/bench-lucene:
// every document stores `_uid` ("doc#<id>", a string, also indexed) and `_source` (JSON bytes), and
// has a NUMERIC doc-values `_version`; every 13th document is deleted again (hard deletes, the only
// kind Lucene 4 has) a hundred documents after it was added; a commit every 250,000 documents.
// Lucene 4.10's standard codec has one stored-fields mode (LZ4, fast), compound files are off.
// Compile and run against Debian's liblucene4.10-java jars, unpacked (scripts/bench-lucene does it).
//
// usage: java MakeIndex4 <outDir> <numDocs> [sourceBytes=500] [seed=42]
// Writes <outDir>.expected.txt: expectedLive=<live documents> expectedSourceCrcSum=<sum of the
// CRC-32 of every live _source>, the two figures bench-lucene checks every reader against.
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;
import java.util.zip.CRC32;
import org.apache.lucene.analysis.core.KeywordAnalyzer;
import org.apache.lucene.codecs.Codec;
import org.apache.lucene.document.*;
import org.apache.lucene.index.*;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.Version;

public class MakeIndex4 {
  static final String[] TERMS = ("shard replica mapping analyzer tokenizer keyword nested parent child "
      + "routing alias template snapshot restore gateway discovery zen master data client river plugin "
      + "facet percolator warmer scroll scan bulk refresh flush optimize merge segment translog store "
      + "order invoice customer product basket payment shipping street city country phone email status").split(" ");

  static String id(int i) { return String.format(Locale.ROOT, "doc-%08d", i); }

  /** A JSON document of about {@code target} bytes, the same for the same (i, seed). */
  static byte[] source(int i, int target, long seed) {
    Random r = new Random(seed * 7_919L + i);
    StringBuilder b = new StringBuilder(target + 64);
    b.append("{\"user\":\"").append(TERMS[r.nextInt(TERMS.length)]).append(r.nextInt(1000))
        .append("\",\"postDate\":\"2014-").append(String.format(Locale.ROOT, "%02d-%02d", 1 + r.nextInt(12), 1 + r.nextInt(28)))
        .append("\",\"count\":").append(r.nextInt(100_000))
        .append(",\"amount\":").append(r.nextInt(1_000_000) / 100.0)
        .append(",\"labels\":[\"").append(TERMS[r.nextInt(TERMS.length)]).append("\",\"")
        .append(TERMS[r.nextInt(TERMS.length)]).append("\"],\"message\":\"");
    while (b.length() < target - 2) b.append(TERMS[r.nextInt(TERMS.length)]).append(' ');
    return b.append("\"}").toString().getBytes(StandardCharsets.UTF_8);
  }

  public static void main(String[] a) throws Exception {
    File out = new File(a[0]);
    int n = Integer.parseInt(a[1]);
    int srcBytes = a.length > 2 ? Integer.parseInt(a[2]) : 500;
    long seed = a.length > 3 ? Long.parseLong(a[3]) : 42;
    IndexWriterConfig cfg = new IndexWriterConfig(Version.LUCENE_4_10_4, new KeywordAnalyzer());
    cfg.setUseCompoundFile(false);
    cfg.setRAMBufferSizeMB(64);
    TieredMergePolicy mp = new TieredMergePolicy();
    mp.setNoCFSRatio(0.0);
    cfg.setMergePolicy(mp);
    long[] crc = new long[n];
    boolean[] live = new boolean[n];
    long total = 0;
    int deletes = 0;
    long t0 = System.nanoTime();
    try (FSDirectory dir = FSDirectory.open(out); IndexWriter w = new IndexWriter(dir, cfg)) {
      final int lag = 100;
      for (int i = 0; i < n + lag; i++) {
        if (i < n) {
          byte[] s = source(i, srcBytes, seed);
          Document d = new Document();
          d.add(new StringField("_uid", "doc#" + id(i), Field.Store.YES));
          d.add(new StoredField("_source", s));
          d.add(new NumericDocValuesField("_version", 1));
          w.addDocument(d);
          CRC32 c = new CRC32();
          c.update(s);
          crc[i] = c.getValue();
          live[i] = true;
          total += s.length;
        }
        int j = i - lag;
        if (j >= 0 && j % 13 == 0) {
          w.deleteDocuments(new Term("_uid", "doc#" + id(j)));
          live[j] = false;
          deletes++;
        }
        if (i > 0 && i % 250_000 == 0) w.commit();
      }
      w.commit();
    }
    long liveCount = 0, sum = 0;
    for (int i = 0; i < n; i++) if (live[i]) { liveCount++; sum += crc[i]; }
    String summary = String.format(Locale.ROOT,
        "lucene=%s codec=%s mode=BEST_SPEED cfs=false soft=false docs=%d hardDeletes=%d%n"
            + "expectedLive=%d expectedSourceCrcSum=%d avgSourceBytes=%.1f writeSeconds=%.2f%n",
        Version.LATEST, Codec.getDefault().getName(), n, deletes, liveCount, sum, total / (double) n,
        (System.nanoTime() - t0) / 1e9);
    System.out.print(summary);
    Files.write(Paths.get(a[0] + ".expected.txt"), summary.getBytes(StandardCharsets.UTF_8));
  }
}
