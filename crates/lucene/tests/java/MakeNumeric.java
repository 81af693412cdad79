// Writes a one-segment Lucene index whose documents hold only NUMERIC doc values chosen
// to make Lucene use each of its encodings: per-block bit widths ("blocks": values that
// jump every 16384 documents), a table of distinct values ("table"), min + gcd × n
// ("gcd"), a sparse field ("sparse": every third document), one value for all ("same"),
// and wide negative values ("wide"). The values are a formula of the doc id (see below),
// so the Rust test recomputes them; nothing else is dumped. Same source for Lucene 8, 9
// and 10 (scripts/make-delta-data runs it with each).
//
//   java MakeNumeric <outDir> [docs=20000]
import java.nio.file.*;
import org.apache.lucene.document.*;
import org.apache.lucene.index.*;
import org.apache.lucene.store.FSDirectory;

public class MakeNumeric {
  public static void main(String[] a) throws Exception {
    Path out = Paths.get(a[0]);
    int n = a.length > 1 ? Integer.parseInt(a[1]) : 20000;
    IndexWriterConfig cfg = new IndexWriterConfig();
    cfg.setMaxBufferedDocs(n + 1);
    cfg.setRAMBufferSizeMB(256);
    cfg.setUseCompoundFile(false);
    try (FSDirectory dir = FSDirectory.open(out); IndexWriter w = new IndexWriter(dir, cfg)) {
      for (long d = 0; d < n; d++) {
        Document doc = new Document();
        doc.add(new NumericDocValuesField("blocks", (d / 16384) * 1_000_000_000_000L + (d * 7919L) % 1000));
        doc.add(new NumericDocValuesField("table", ((d * 31) % 7) * 1_000_003L - 5));
        doc.add(new NumericDocValuesField("gcd", 1000L * ((d * 13) % 500) + 42));
        if (d % 3 == 0) doc.add(new NumericDocValuesField("sparse", d * 3 - 1000));
        doc.add(new NumericDocValuesField("same", 77));
        doc.add(new NumericDocValuesField("wide", -d * 1_000_000_007L));
        w.addDocument(doc);
      }
      w.forceMerge(1);
      w.commit();
    }
    Files.deleteIfExists(out.resolve("write.lock"));
  }
}
