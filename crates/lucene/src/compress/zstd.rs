//! zstd frames as written by Elasticsearch's `ZstdStoredFields814` (no dictionary) and
//! OpenSearch's `CustomStoredFieldsZstd` (a raw-content dictionary per chunk) and
//! `CustomStoredFieldsZstdNoDict`.

use super::DecompressError;

/// A reusable zstd decompression context.
pub struct ZstdDecoder {
    plain: zstd::bulk::Decompressor<'static>,
    with_dict: Option<zstd::bulk::Decompressor<'static>>,
}

impl std::fmt::Debug for ZstdDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ZstdDecoder")
    }
}

fn lib_err(e: std::io::Error) -> DecompressError {
    DecompressError::Library(format!("zstd: {e}"))
}

impl ZstdDecoder {
    pub fn new() -> Result<Self, DecompressError> {
        Ok(ZstdDecoder {
            plain: zstd::bulk::Decompressor::new().map_err(lib_err)?,
            with_dict: None,
        })
    }

    /// Decompresses the single zstd frame `src` into all of `out`; `dict` (possibly empty)
    /// is loaded as a raw-content dictionary. The frame must produce exactly `out.len()`
    /// bytes.
    pub fn decompress(
        &mut self,
        src: &[u8],
        dict: &[u8],
        out: &mut [u8],
    ) -> Result<(), DecompressError> {
        let dctx = if dict.is_empty() {
            &mut self.plain
        } else {
            let d = match &mut self.with_dict {
                Some(d) => d,
                none => none.insert(zstd::bulk::Decompressor::new().map_err(lib_err)?),
            };
            d.set_dictionary(dict).map_err(lib_err)?;
            d
        };
        let n = dctx.decompress_to_buffer(src, out).map_err(lib_err)?;
        if n != out.len() {
            return Err(DecompressError::Length {
                expected: out.len(),
                actual: n,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decompresses_with_and_without_raw_dictionary() {
        let dict: Vec<u8> = b"the quick brown fox jumps over the lazy dog ".repeat(50);
        let data: Vec<u8> = b"the lazy dog sleeps; the quick fox runs ".repeat(300);
        let mut dec = ZstdDecoder::new().unwrap();

        let plain = zstd::bulk::compress(&data, 3).unwrap();
        let mut out = vec![0u8; data.len()];
        dec.decompress(&plain, &[], &mut out).unwrap();
        assert_eq!(out, data);

        let mut c = zstd::bulk::Compressor::with_dictionary(3, &dict).unwrap();
        let framed = c.compress(&data).unwrap();
        dec.decompress(&framed, &dict, &mut out).unwrap();
        assert_eq!(out, data);
        // Again without the dictionary is an error, as is a short output or garbage.
        assert!(dec.decompress(&framed, &[], &mut out).is_err());
        let mut short = vec![0u8; data.len() - 1];
        assert!(dec.decompress(&plain, &[], &mut short).is_err());
        let mut long = vec![0u8; data.len() + 1];
        assert!(dec.decompress(&plain, &[], &mut long).is_err());
        assert!(dec.decompress(&[1, 2, 3, 4, 5], &[], &mut out).is_err());
    }
}
