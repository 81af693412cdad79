// Writes a small Elasticsearch-7-like Lucene index with real Lucene (8.x), for the demo
// snapshot repository that `scripts/make-demo-repo` builds and `scripts/demo` migrates.
//
//   java -cp lucene-core.jar:. MakeDemoIndex OUT_DIR SHARD_NAME FIRST_ID COUNT SEED
//
// Every document has `_id` (ES binary form: 0xFF + UTF-8, indexed and stored), `_source`
// (JSON, stored), and `_seq_no` / `_primary_term` / `_version` doc values. Some documents
// are updated (the old version soft-deleted, as Elasticsearch does) and some are deleted
// (hard), so the index holds hard deletes, soft deletes and several segments.

import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.Random;

import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.SoftDeletesRetentionMergePolicy;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.MatchAllDocsQuery;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;

public class MakeDemoIndex {
    static final String SOFT = "__soft_deletes";
    static final String[] WORDS = {"river", "mountain", "library", "winter", "garden", "signal", "harbor",
        "lantern", "orchard", "meadow", "compass", "voyage", "thunder", "silver", "meridian", "archive"};
    static final String[] GENRES = {"fiction", "history", "science", "poetry", "travel", "biography"};

    static BytesRef id(String s) {
        byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
        byte[] b = new byte[utf8.length + 1];
        b[0] = (byte) 0xff;
        System.arraycopy(utf8, 0, b, 1, utf8.length);
        return new BytesRef(b);
    }

    static String words(Random r, int n) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            if (i > 0) sb.append(' ');
            sb.append(WORDS[r.nextInt(WORDS.length)]);
        }
        return sb.toString();
    }

    static String source(Random r, String id, int edition) {
        return "{\"title\":\"" + words(r, 3) + "\",\"author\":\"" + words(r, 2) + "\",\"year\":" + (1900 + r.nextInt(125))
            + ",\"pages\":" + (50 + r.nextInt(900)) + ",\"genre\":\"" + GENRES[r.nextInt(GENRES.length)]
            + "\",\"edition\":" + edition + ",\"price\":" + (r.nextInt(9000) / 100.0)
            + ",\"tags\":[\"" + WORDS[r.nextInt(WORDS.length)] + "\",\"" + WORDS[r.nextInt(WORDS.length)] + "\"]"
            + ",\"summary\":\"" + words(r, 12 + r.nextInt(30)) + "\",\"ref\":\"" + id + "\"}";
    }

    static Document doc(String id, String source, long seqNo) {
        Document d = new Document();
        d.add(new StringField("_id", id(id), Field.Store.YES));
        d.add(new StoredField("_source", new BytesRef(source.getBytes(StandardCharsets.UTF_8))));
        d.add(new NumericDocValuesField("_seq_no", seqNo));
        d.add(new NumericDocValuesField("_primary_term", 1));
        d.add(new NumericDocValuesField("_version", 1));
        return d;
    }

    public static void main(String[] args) throws Exception {
        String out = args[0];
        String prefix = args[1];
        int first = Integer.parseInt(args[2]);
        int count = Integer.parseInt(args[3]);
        Random r = new Random(Long.parseLong(args[4]));
        IndexWriterConfig cfg = new IndexWriterConfig(new StandardAnalyzer());
        cfg.setSoftDeletesField(SOFT);
        cfg.setMergePolicy(new SoftDeletesRetentionMergePolicy(SOFT, MatchAllDocsQuery::new, cfg.getMergePolicy()));
        cfg.setMaxBufferedDocs(Math.max(10, count / 4));
        cfg.setUseCompoundFile(true);
        long seq = 0;
        int updated = 0, deleted = 0;
        try (IndexWriter w = new IndexWriter(FSDirectory.open(Paths.get(out)), cfg)) {
            for (int i = first; i < first + count; i++) {
                String id = prefix + ":" + String.format("%05d", i);
                w.addDocument(doc(id, source(r, id, 1), seq++));
            }
            for (int i = first; i < first + count; i++) {
                String id = prefix + ":" + String.format("%05d", i);
                if (i % 9 == 4) {
                    w.softUpdateDocument(new Term("_id", id(id)), doc(id, source(r, id, 2), seq++),
                        new NumericDocValuesField(SOFT, 1));
                    updated++;
                } else if (i % 17 == 3) {
                    w.deleteDocuments(new Term("_id", id(id)));
                    deleted++;
                }
            }
            w.commit();
        }
        System.out.println(out + ": " + count + " documents, " + updated + " updated (soft), " + deleted
            + " deleted (hard), " + (count - deleted) + " live");
    }
}
