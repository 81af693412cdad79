//! Which per-field vector formats keep every document's original vector in the flat files
//! of [`super::flat`] (`.vec` + `.vemf`, header codecs `Lucene99FlatVectorsFormatData` /
//! `Lucene99FlatVectorsFormatMeta`), under the field's own segment suffix.
//!
//! A field's format is the name Lucene records in its field-info attribute
//! `PerFieldKnnVectorsFormat.format` (the outer `KnnVectorsFormat`); its files are named
//! `<segment>_<format>_<PerFieldKnnVectorsFormat.suffix>.<ext>`. The formats below hand that
//! same segment state to a `Lucene99FlatVectorsFormat` (the HNSW graph `.vex`/`.vem`, the
//! quantized copies `.veq`/`.vemq`/`.veb`/`.vemb` sit beside it and are not needed). Where
//! this was read:
//!
//! | format | raw vectors | read in |
//! |---|---|---|
//! | `Lucene99HnswVectorsFormat` (9.9+, default in 9.9–10.x) | `Lucene99FlatVectorsFormat` | apache/lucene `lucene/core/src/java/org/apache/lucene/codecs/lucene99/Lucene99HnswVectorsFormat.java` |
//! | `Lucene99HnswScalarQuantizedVectorsFormat`, `Lucene99ScalarQuantizedVectorsFormat` (9.9+; backward codecs in 10.x) | its `rawVectorFormat`, a `Lucene99FlatVectorsFormat` | apache/lucene `codecs/lucene99/Lucene99ScalarQuantizedVectorsFormat.java` |
//! | `Lucene102BinaryQuantizedVectorsFormat`, `Lucene102HnswBinaryQuantizedVectorsFormat` (10.2–10.3) | `rawVectorFormat` = `Lucene99FlatVectorsFormat` | apache/lucene `codecs/lucene102/Lucene102BinaryQuantizedVectorsFormat.java` |
//! | `Lucene104ScalarQuantizedVectorsFormat`, `Lucene104HnswBinaryQuantizedVectorsFormat`, `Lucene104HnswScalarQuantizedVectorsFormat` (10.4+) | `Lucene99FlatVectorsFormat` | apache/lucene `codecs/lucene104/Lucene104ScalarQuantizedVectorsWriter.java` (raw writer delegate); checked on files written by Lucene 10.5.0 (tests/vectors.rs) |
//! | `HnswBitVectorsFormat` (lucene-codecs, 9.11+) | `Lucene99FlatVectorsFormat` | checked on files written by Lucene 10.5.0 (tests/vectors.rs) |
//! | `ES813FlatVectorFormat`, `ES813Int8FlatVectorFormat` (Elasticsearch 8.13+) | `Lucene99FlatVectorsFormat` (the int8 one through `ES814ScalarQuantizedVectorsFormat`'s `rawVectorFormat`) | elastic/elasticsearch `server/src/main/java/org/elasticsearch/index/codec/vectors/ES813FlatVectorFormat.java`, `ES814ScalarQuantizedVectorsFormat.java` |
//! | `ES814HnswScalarQuantizedVectorsFormat` (8.14+) | `ES814ScalarQuantizedVectorsFormat` → `Lucene99FlatVectorsFormat` | same folder |
//! | `ES815HnswBitVectorsFormat`, `ES815BitFlatVectorFormat` (8.15+, `element_type: bit`) | `Lucene99FlatVectorsFormat` (byte-encoded, dims/8 bytes) | same folder, `ES815BitFlatVectorsFormat.java` |
//! | `ES816BinaryQuantizedVectorsFormat`, `ES816HnswBinaryQuantizedVectorsFormat` (8.16+) | `rawVectorFormat` = `Lucene99FlatVectorsFormat` | same folder, `ES816BinaryQuantizedVectorsFormat.java` |
//! | `ES818BinaryQuantizedVectorsFormat`, `ES818HnswBinaryQuantizedVectorsFormat` (8.18+/9.x `bbq_*`) | `DirectIOLucene99FlatVectorsFormat` (the same files, opened with direct I/O) | elastic/elasticsearch `…/codec/vectors/es818/ES818BinaryQuantizedVectorsFormat.java` |
//! | `NativeEngines990KnnVectorsFormat` (OpenSearch k-NN 2.17+, faiss/nmslib fields) | `Lucene99FlatVectorsFormat` | opensearch-project/k-NN `src/main/java/org/opensearch/knn/index/codec/KNN990Codec/NativeEngines990KnnVectorsFormat.java` |
//!
//! Anything else (Lucene 9.0–9.8's `Lucene9xHnswVectorsFormat`, whose own `.vec` layout this
//! reader does not decode; OpenSearch's half-float format; Elasticsearch's bfloat16 and IVF
//! formats; names not listed) is refused with an error naming the file, field and format
//! rather than guessed at.

/// Whether fields of the per-field format `name` keep their original vectors in
/// Lucene99 flat-vector files under their own suffix.
pub fn keeps_flat_vectors(name: &str) -> bool {
    matches!(
        name,
        "Lucene99HnswVectorsFormat"
            | "Lucene99FlatVectorsFormat"
            | "Lucene99HnswScalarQuantizedVectorsFormat"
            | "Lucene99ScalarQuantizedVectorsFormat"
            | "Lucene102BinaryQuantizedVectorsFormat"
            | "Lucene102HnswBinaryQuantizedVectorsFormat"
            | "Lucene104ScalarQuantizedVectorsFormat"
            | "Lucene104HnswScalarQuantizedVectorsFormat"
            | "Lucene104HnswBinaryQuantizedVectorsFormat"
            | "HnswBitVectorsFormat"
            | "ES813FlatVectorFormat"
            | "ES813Int8FlatVectorFormat"
            | "ES814HnswScalarQuantizedVectorsFormat"
            | "ES815HnswBitVectorsFormat"
            | "ES815BitFlatVectorFormat"
            | "ES816BinaryQuantizedVectorsFormat"
            | "ES816HnswBinaryQuantizedVectorsFormat"
            | "ES818BinaryQuantizedVectorsFormat"
            | "ES818HnswBinaryQuantizedVectorsFormat"
            | "NativeEngines990KnnVectorsFormat"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_and_unknown_names() {
        assert!(keeps_flat_vectors("Lucene99HnswVectorsFormat"));
        assert!(keeps_flat_vectors("NativeEngines990KnnVectorsFormat"));
        assert!(!keeps_flat_vectors("Lucene95HnswVectorsFormat"));
        assert!(!keeps_flat_vectors("RfsOpaqueVectorsFormat"));
        assert!(!keeps_flat_vectors(""));
    }
}
