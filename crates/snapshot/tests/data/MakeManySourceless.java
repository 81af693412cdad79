// One Elasticsearch-7-like segment (Lucene 8) of N documents without _source, as an index
// with `_source: {"enabled": false}` holds them: a stored binary _id (0xFF + UTF-8, the
// way Elasticsearch encodes a non-numeric id), _seq_no/_primary_term/_version doc values,
// and a long field `n` with sorted-numeric doc values (what a rebuild reads).
//
// usage: java MakeManySourceless <outDir> <numDocs>

import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;

import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.LongPoint;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.document.SortedNumericDocValuesField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;

public class MakeManySourceless {
  public static void main(String[] args) throws Exception {
    String out = args[0];
    int n = Integer.parseInt(args[1]);
    IndexWriterConfig cfg = new IndexWriterConfig(new StandardAnalyzer());
    cfg.setUseCompoundFile(false);
    cfg.setRAMBufferSizeMB(256);
    try (IndexWriter w = new IndexWriter(FSDirectory.open(Paths.get(out)), cfg)) {
      for (int i = 0; i < n; i++) {
        byte[] utf8 = String.format("m-%05d", i).getBytes(StandardCharsets.UTF_8);
        byte[] id = new byte[utf8.length + 1];
        id[0] = (byte) 0xFF;
        System.arraycopy(utf8, 0, id, 1, utf8.length);
        Document d = new Document();
        d.add(new StringField("_id", new BytesRef(id), Field.Store.YES));
        d.add(new NumericDocValuesField("_seq_no", i));
        d.add(new NumericDocValuesField("_primary_term", 1));
        d.add(new NumericDocValuesField("_version", 1));
        d.add(new LongPoint("n", i));
        d.add(new SortedNumericDocValuesField("n", i));
        w.addDocument(d);
      }
      w.forceMerge(1);
      w.commit();
    }
  }
}
