// Reads the `_source` of every live document of a Lucene 4.10 index with Lucene 4.10 itself and
// prints the same key=value line per pass as the readers of Lucene 8/9/10 that scripts/bench-lucene
// runs (sourceCrcSum, sourceMB/s, docs/s, ...), so its figures stand in the same table.
//
// usage: java ReadIndex4 <indexDir> <softDeletesField|-> [passes=3] [api|seq]
//   api = the public per-document call, AtomicReader.document(doc, visitor);
//   seq = the segment's StoredFieldsReader called directly for each document in order. Lucene 4.10
//         has no merge instance that keeps a decompressed chunk between documents (5.0 added it):
//         both decompress a chunk up to the document for every document, seq only skips a layer.
//   The soft-deletes argument is accepted for the script's sake and must be "-" (Lucene 4 has none).
import java.io.File;
import java.nio.file.*;
import java.util.*;
import java.util.zip.CRC32;
import org.apache.lucene.codecs.StoredFieldsReader;
import org.apache.lucene.index.*;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.Bits;

public class ReadIndex4 {
  static final class Sources extends StoredFieldVisitor {
    long bytes, crcSum, withSource;
    final CRC32 crc = new CRC32();

    @Override public Status needsField(FieldInfo fi) {
      return fi.name.equals("_source") || fi.name.equals("_uid") ? Status.YES : Status.NO;
    }

    @Override public void binaryField(FieldInfo fi, byte[] v) {
      if (!fi.name.equals("_source")) return;
      bytes += v.length;
      crc.reset();
      crc.update(v, 0, v.length);
      crcSum += crc.getValue();
      withSource++;
    }
  }

  public static void main(String[] a) throws Exception {
    File path = new File(a[0]);
    if (a.length > 1 && !a[1].equals("-") && !a[1].equals("__soft_deletes")) {
      throw new IllegalArgumentException("Lucene 4 has no soft deletes: " + a[1]);
    }
    int passes = a.length > 2 ? Integer.parseInt(a[2]) : 3;
    boolean seq = a.length > 3 && a[3].equals("seq");
    long onDisk = 0;
    for (File f : path.listFiles()) onDisk += f.length();
    for (int pass = 1; pass <= passes; pass++) {
      long t0 = System.nanoTime();
      try (FSDirectory dir = FSDirectory.open(path); DirectoryReader r = DirectoryReader.open(dir)) {
        long t1 = System.nanoTime();
        Sources v = new Sources();
        long liveDocs = 0;
        for (AtomicReaderContext ctx : r.leaves()) {
          AtomicReader leaf = ctx.reader();
          Bits live = leaf.getLiveDocs();
          StoredFieldsReader fields = seq ? ((SegmentReader) leaf).getFieldsReader() : null;
          for (int d = 0; d < leaf.maxDoc(); d++) {
            if (live != null && !live.get(d)) continue;
            liveDocs++;
            if (fields != null) fields.visitDocument(d, v);
            else leaf.document(d, v);
          }
        }
        double secs = (System.nanoTime() - t1) / 1e9;
        System.out.printf(Locale.ROOT,
            "pass=%d access=%s lucene=%s segments=%d maxDoc=%d numDocs=%d liveVisited=%d withSource=%d sourceCrcSum=%d sourceMB=%.1f indexMB=%.1f openMs=%.1f readS=%.3f docs/s=%.0f sourceMB/s=%.1f%n",
            pass, seq ? "seq" : "api", org.apache.lucene.util.Version.LATEST, r.leaves().size(), r.maxDoc(),
            r.numDocs(), liveDocs, v.withSource, v.crcSum, v.bytes / 1e6, onDisk / 1e6, (t1 - t0) / 1e6, secs,
            liveDocs / secs, v.bytes / 1e6 / secs);
      }
    }
  }
}
