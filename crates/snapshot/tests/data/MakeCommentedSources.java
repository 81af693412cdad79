// Writes a one-segment Elasticsearch-7-like Lucene index (codec of the Lucene on the class
// path; Debian's liblucene8-java is 8.8.1) whose `_source` values hold comments, as
// Elasticsearch accepts them (its JSON parser allows `/* … */` and `// …`), beside one
// without. Fields as Elasticsearch writes them: `_id` (0xFF + UTF-8, the form for ids that
// are not numbers or base 64), `_source` (the bytes as sent), and the `_seq_no`,
// `_primary_term` and `_version` doc values. Prints each document as a JSON line
// {"_id": …, "_source": "<the stored bytes>"} in the order written.
//
//   java MakeCommentedSources <out-dir>
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.NumericDocValuesField;
import org.apache.lucene.document.StoredField;
import org.apache.lucene.document.StringField;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.BytesRef;

public class MakeCommentedSources {
  static BytesRef id(String s) {
    byte[] u = s.getBytes(StandardCharsets.UTF_8);
    byte[] b = new byte[u.length + 1];
    b[0] = (byte) 0xFF;
    System.arraycopy(u, 0, b, 1, u.length);
    return new BytesRef(b);
  }

  static String quote(String s) {
    StringBuilder q = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') q.append('\\').append(c);
      else if (c == '\n') q.append("\\n");
      else if (c == '\r') q.append("\\r");
      else q.append(c);
    }
    return q.append('"').toString();
  }

  public static void main(String[] a) throws Exception {
    String[][] docs = {
      {"doc.block", "/* exported by app v2 */ {\"title\": /* was: name */ \"Dune\", \"year\": 1965}"},
      {"doc.line", "{ // a note per line\n  \"title\": \"Solaris\", // translated\n  \"tags\": [\"sf\", /* first */ \"novel\"],\n  \"url\": \"http://example.org/a//b/*c*/\"\n}\n// end"},
      {"doc.plain", "{\"title\":\"Ubik\",\"note\":\"// and /* stay in strings */\"}"},
    };
    try (FSDirectory dir = FSDirectory.open(Paths.get(a[0]));
         IndexWriter w = new IndexWriter(dir, new IndexWriterConfig(new StandardAnalyzer()))) {
      long seq = 0;
      for (String[] d : docs) {
        Document doc = new Document();
        doc.add(new StringField("_id", id(d[0]), Field.Store.YES));
        doc.add(new StoredField("_source", new BytesRef(d[1].getBytes(StandardCharsets.UTF_8))));
        doc.add(new NumericDocValuesField("_seq_no", seq++));
        doc.add(new NumericDocValuesField("_primary_term", 1));
        doc.add(new NumericDocValuesField("_version", 1));
        w.addDocument(doc);
        System.out.println("{\"_id\":" + quote(d[0]) + ",\"_source\":" + quote(d[1]) + "}");
      }
      w.commit();
    }
  }
}
