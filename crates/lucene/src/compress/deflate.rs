//! Raw DEFLATE (RFC 1951, no zlib or gzip wrapper), optionally with a preset dictionary,
//! as written by Lucene's `HIGH_COMPRESSION` / `BEST_COMPRESSION` stored-fields modes.

use flate2::{Decompress, FlushDecompress, Status};

use super::DecompressError;

/// A reusable raw-DEFLATE inflater.
pub struct Inflater {
    inner: Decompress,
}

impl Default for Inflater {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Inflater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Inflater")
    }
}

impl Inflater {
    pub fn new() -> Self {
        Inflater {
            inner: Decompress::new(false),
        }
    }

    /// Inflates the raw DEFLATE stream in `src` into all of `out`, with `dict` (possibly
    /// empty) preloaded as history. The stream must produce exactly `out.len()` bytes.
    /// Returns the number of bytes of `src` consumed.
    pub fn inflate(
        &mut self,
        src: &[u8],
        dict: &[u8],
        out: &mut [u8],
    ) -> Result<usize, DecompressError> {
        self.inner.reset(false);
        if !dict.is_empty() {
            self.inner
                .set_dictionary(dict)
                .map_err(|e| DecompressError::Library(format!("inflate dictionary: {e}")))?;
        }
        let status = self
            .inner
            .decompress(src, out, FlushDecompress::Finish)
            .map_err(|e| DecompressError::Library(format!("inflate: {e}")))?;
        let produced = self.inner.total_out() as usize;
        let consumed = self.inner.total_in() as usize;
        if produced == out.len() && status != Status::StreamEnd {
            return Err(DecompressError::Invalid(
                "DEFLATE stream continues past the declared length",
            ));
        }
        if produced != out.len() {
            return Err(match status {
                Status::StreamEnd => DecompressError::Length {
                    expected: out.len(),
                    actual: produced,
                },
                _ if consumed >= src.len() => DecompressError::Truncated,
                _ => DecompressError::Invalid("inflate stopped early"),
            });
        }
        Ok(consumed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::{Compress, Compression, FlushCompress};

    pub(crate) fn deflate_raw(input: &[u8], dict: &[u8]) -> Vec<u8> {
        let mut c = Compress::new(Compression::new(6), false);
        if !dict.is_empty() {
            c.set_dictionary(dict).unwrap();
        }
        let mut out = Vec::with_capacity(input.len() + 64);
        c.compress_vec(input, &mut out, FlushCompress::Finish)
            .unwrap();
        out
    }

    #[test]
    fn inflates_with_and_without_dictionary() {
        let dict: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        let data: Vec<u8> = (0..20000u32).map(|i| ((i * 7) % 251) as u8).collect();
        let mut inf = Inflater::new();
        for d in [&[][..], &dict[..]] {
            let c = deflate_raw(&data, d);
            let mut out = vec![0u8; data.len()];
            let used = inf.inflate(&c, d, &mut out).unwrap();
            assert_eq!(used, c.len());
            assert_eq!(out, data);
            // Too short an output, truncated input and garbage are errors.
            let mut short = vec![0u8; data.len() - 1];
            assert!(inf.inflate(&c, d, &mut short).is_err());
            let mut long = vec![0u8; data.len() + 1];
            assert!(inf.inflate(&c, d, &mut long).is_err());
            assert!(inf.inflate(&c[..c.len() / 2], d, &mut out).is_err());
        }
        let mut out = vec![0u8; 10];
        assert!(inf.inflate(&[0xff; 20], &[], &mut out).is_err());
    }
}
