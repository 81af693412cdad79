// Writes a small Elasticsearch-8-like shard with real Lucene 9 (9.9.1): the documents of a
// `dense_vector` mapping, for the modern-layout tests of the snapshot crate and the
// metadata conversion tests of the migrate crate.
//
//   javac -cp lucene-9.9.1.jar -d classes MakeVectorIndex.java
//   java -cp lucene-9.9.1.jar:classes MakeVectorIndex OUT_DIR FIRST COUNT SEED > OUT_DIR.expected.jsonl
//
// Every document has `_id` (the 0xFF + UTF-8 form Elasticsearch uses for ids that are not
// numbers or base 64), `_source` (JSON, stored), `_seq_no` / `_primary_term` / `_version`
// doc values, and its `embedding` indexed as a Lucene float vector (HNSW, cosine), as an
// Elasticsearch 8 `dense_vector` field with `index: true` is. `_source` holds the vector
// as a JSON array, an `@timestamp` (so the documents fit a data stream), a byte vector as a hexadecimal string (the form Elasticsearch 8.14+
// accepts for `element_type: byte`), a `flattened` object, a `match_only_text` field,
// an `unsigned_long` above 2^63 and a `version` string. Every third document is updated
// once (the old version soft-deleted, as Elasticsearch does). Standard output: the live
// documents as JSON lines `{"_id": …, "_source": …}` in id order.

import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.Locale;
import java.util.Random;
import java.util.TreeMap;

import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.KnnFloatVectorField;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.SoftDeletesRetentionMergePolicy;
import org.apache.lucene.index.Term;
import org.apache.lucene.index.VectorSimilarityFunction;
import org.apache.lucene.search.MatchAllDocsQuery;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;

public class MakeVectorIndex {
    static final String SOFT = "__soft_deletes";
    static final String[] WORDS = {"vector", "harbor", "signal", "meadow", "lantern", "orchard", "compass", "archive"};

    static BytesRef id(String s) {
        byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
        byte[] b = new byte[utf8.length + 1];
        b[0] = (byte) 0xff;
        System.arraycopy(utf8, 0, b, 1, utf8.length);
        return new BytesRef(b);
    }

    static float[] vector(Random r) {
        float[] v = new float[4];
        for (int i = 0; i < v.length; i++) {
            v[i] = (r.nextInt(2001) - 1000) / 1000f;
        }
        if (v[0] == 0 && v[1] == 0 && v[2] == 0 && v[3] == 0) {
            v[0] = 0.5f;
        }
        return v;
    }

    static String source(Random r, String id, int edition, float[] v) {
        StringBuilder vec = new StringBuilder();
        for (int i = 0; i < v.length; i++) {
            if (i > 0) vec.append(',');
            vec.append(String.format(Locale.ROOT, "%.3f", v[i]));
        }
        StringBuilder hex = new StringBuilder();
        for (int i = 0; i < 4; i++) {
            hex.append(String.format(Locale.ROOT, "%02x", r.nextInt(256)));
        }
        String w1 = WORDS[r.nextInt(WORDS.length)];
        String w2 = WORDS[r.nextInt(WORDS.length)];
        return "{\"@timestamp\":\"2024-01-01T00:00:" + String.format(Locale.ROOT, "%02d", r.nextInt(60)) + ".000Z\""
            + ",\"title\":\"" + w1 + " " + w2 + "\",\"embedding\":[" + vec + "]"
            + ",\"byte_embedding\":\"" + hex + "\""
            + ",\"labels\":{\"team\":\"" + w2 + "\",\"priority\":\"p" + r.nextInt(4) + "\"}"
            + ",\"body\":\"" + w1 + " " + w2 + " " + w1 + "\""
            + ",\"counter\":" + (Long.toUnsignedString(Long.MIN_VALUE + r.nextInt(1000)))
            + ",\"release\":\"1." + r.nextInt(20) + "." + edition + "\""
            + ",\"edition\":" + edition + ",\"ref\":\"" + id + "\"}";
    }

    static Document doc(String id, String source, float[] v, long seqNo) {
        Document d = new Document();
        d.add(new StringField("_id", id(id), Field.Store.YES));
        d.add(new StoredField("_source", new BytesRef(source.getBytes(StandardCharsets.UTF_8))));
        d.add(new KnnFloatVectorField("embedding", v, VectorSimilarityFunction.COSINE));
        d.add(new NumericDocValuesField("_seq_no", seqNo));
        d.add(new NumericDocValuesField("_primary_term", 1));
        d.add(new NumericDocValuesField("_version", 1));
        return d;
    }

    public static void main(String[] args) throws Exception {
        String out = args[0];
        int first = Integer.parseInt(args[1]);
        int count = Integer.parseInt(args[2]);
        Random r = new Random(Long.parseLong(args[3]));
        IndexWriterConfig cfg = new IndexWriterConfig(new StandardAnalyzer());
        cfg.setSoftDeletesField(SOFT);
        cfg.setMergePolicy(new SoftDeletesRetentionMergePolicy(SOFT, MatchAllDocsQuery::new, cfg.getMergePolicy()));
        cfg.setMaxBufferedDocs(Math.max(4, count / 3));
        cfg.setUseCompoundFile(false);
        TreeMap<String, String> live = new TreeMap<>();
        long seq = 0;
        try (IndexWriter w = new IndexWriter(FSDirectory.open(Paths.get(out)), cfg)) {
            for (int i = first; i < first + count; i++) {
                String id = String.format(Locale.ROOT, "v-%04d", i);
                float[] v = vector(r);
                String src = source(r, id, 1, v);
                w.addDocument(doc(id, src, v, seq++));
                live.put(id, src);
            }
            w.commit();
            for (int i = first; i < first + count; i += 3) {
                String id = String.format(Locale.ROOT, "v-%04d", i);
                float[] v = vector(r);
                String src = source(r, id, 2, v);
                w.softUpdateDocument(new Term("_id", id(id)), doc(id, src, v, seq++),
                    new NumericDocValuesField(SOFT, 1));
                live.put(id, src);
            }
            w.commit();
        }
        for (var e : live.entrySet()) {
            System.out.println("{\"_id\":\"" + e.getKey() + "\",\"_source\":" + e.getValue() + "}");
        }
    }
}
