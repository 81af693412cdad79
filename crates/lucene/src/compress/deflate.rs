//! Raw DEFLATE (RFC 1951, no zlib or gzip wrapper), optionally with a preset dictionary,
//! as written by Lucene's `HIGH_COMPRESSION` / `BEST_COMPRESSION` stored-fields modes.
//!
//! Decoded with libdeflate, which inflates a whole stream into a caller's buffer about
//! twice as fast as zlib-rs on Lucene's blocks but takes no preset dictionary. A preset
//! dictionary only primes DEFLATE's 32 KiB history, so the same output comes from the
//! stream placed behind a stored (uncompressed) DEFLATE block holding the dictionary's
//! last 32 KiB: libdeflate then writes those bytes first and the block's own output after
//! them, back-references into the dictionary landing in that copy.

use std::ops::Range;

use super::DecompressError;

/// How far back a DEFLATE back-reference can reach.
const WINDOW: usize = 32 * 1024;

/// A reusable raw-DEFLATE inflater.
pub struct Inflater {
    inner: libdeflater::Decompressor,
    /// The stored block with the dictionary (`prefix` bytes), then the stream.
    scratch: Vec<u8>,
    prefix: usize,
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
            inner: libdeflater::Decompressor::new(),
            scratch: Vec::new(),
            prefix: 0,
        }
    }

    /// Inflates the raw DEFLATE stream `src` (without dictionary) into all of `out`; it
    /// must produce exactly `out.len()` bytes. Bytes after the stream's final block are
    /// not looked at (as Lucene does not).
    pub fn inflate(&mut self, src: &[u8], out: &mut [u8]) -> Result<(), DecompressError> {
        let n = self
            .inner
            .deflate_decompress(src, out)
            .map_err(|e| match e {
                libdeflater::DecompressionError::InsufficientSpace => {
                    DecompressError::Invalid("DEFLATE stream continues past the declared length")
                }
                libdeflater::DecompressionError::BadData => {
                    DecompressError::Invalid("not a valid (or a truncated) DEFLATE stream")
                }
            })?;
        if n != out.len() {
            return Err(DecompressError::Length {
                expected: out.len(),
                actual: n,
            });
        }
        Ok(())
    }

    /// Inflates the zlib stream `src` (RFC 1950: a two-byte header, DEFLATE, the Adler-32
    /// of the output, which is checked) into all of `out`, as Lucene 4.x's
    /// `HIGH_COMPRESSION` wrote it.
    pub fn inflate_zlib(&mut self, src: &[u8], out: &mut [u8]) -> Result<(), DecompressError> {
        let n = self.inner.zlib_decompress(src, out).map_err(|e| match e {
            libdeflater::DecompressionError::InsufficientSpace => {
                DecompressError::Invalid("zlib stream continues past the declared length")
            }
            libdeflater::DecompressionError::BadData => DecompressError::Invalid(
                "not a valid (or a truncated) zlib stream, or its Adler-32 does not match",
            ),
        })?;
        if n != out.len() {
            return Err(DecompressError::Length {
                expected: out.len(),
                actual: n,
            });
        }
        Ok(())
    }

    /// Inflates `src`, a raw DEFLATE stream written with the preset dictionary
    /// `buf[dict]`, into `buf[out]`. The `min(dict.len(), 32 KiB)` bytes just before
    /// `out.start` are overwritten with the dictionary's last bytes on the way (see the
    /// module comment): the caller decodes the blocks that follow one dictionary from the
    /// last to the first, so those bytes belong to a block decoded later, or are the end
    /// of the dictionary itself.
    pub fn inflate_with_dict(
        &mut self,
        src: &[u8],
        buf: &mut [u8],
        dict: Range<usize>,
        out: Range<usize>,
    ) -> Result<(), DecompressError> {
        if dict.end > buf.len() || dict.start > dict.end {
            return Err(DecompressError::Invalid("dictionary outside the buffer"));
        }
        self.set_dictionary(&buf[dict]);
        self.inflate_after_dictionary(src, buf, out)
    }

    /// Keeps `dict` (its last 32 KiB) for [`Inflater::inflate_after_dictionary`].
    pub fn set_dictionary(&mut self, dict: &[u8]) {
        let keep = &dict[dict.len() - dict.len().min(WINDOW)..];
        self.scratch.clear();
        if !keep.is_empty() {
            let n = keep.len() as u16;
            // BFINAL 0, BTYPE 00 (stored), then LEN and its complement, byte-aligned
            self.scratch.push(0);
            self.scratch.extend_from_slice(&n.to_le_bytes());
            self.scratch.extend_from_slice(&(!n).to_le_bytes());
            self.scratch.extend_from_slice(keep);
        }
        self.prefix = self.scratch.len();
    }

    /// As [`Inflater::inflate_with_dict`], with the dictionary given to
    /// [`Inflater::set_dictionary`] (kept for every block that follows it).
    pub fn inflate_after_dictionary(
        &mut self,
        src: &[u8],
        buf: &mut [u8],
        out: Range<usize>,
    ) -> Result<(), DecompressError> {
        let keep = self.prefix.saturating_sub(5);
        if out.start < keep || out.start > out.end || out.end > buf.len() {
            return Err(DecompressError::Invalid("block outside the buffer"));
        }
        self.scratch.truncate(self.prefix);
        self.scratch.extend_from_slice(src);
        let scratch = std::mem::take(&mut self.scratch);
        let r = self.inflate(&scratch, &mut buf[out.start - keep..out.end]);
        self.scratch = scratch;
        r.map_err(|e| match e {
            DecompressError::Length { expected, actual } => DecompressError::Length {
                expected: expected - keep,
                actual: actual.saturating_sub(keep),
            },
            e => e,
        })
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
        // without a dictionary
        let c = deflate_raw(&data, &[]);
        let mut out = vec![0u8; data.len()];
        inf.inflate(&c, &mut out).unwrap();
        assert_eq!(out, data);
        // with one: the dictionary, a gap, then the block (and garbage before it, which
        // the dictionary's copy overwrites)
        let c = deflate_raw(&data, &dict);
        let at = dict.len() + 7000;
        let mut buf = vec![0xAAu8; at + data.len()];
        buf[..dict.len()].copy_from_slice(&dict);
        inf.inflate_with_dict(&c, &mut buf, 0..dict.len(), at..at + data.len())
            .unwrap();
        assert_eq!(&buf[at..], &data[..]);
        assert_eq!(&buf[..dict.len()], &dict[..]);
        // decoding right after the dictionary rewrites it with itself
        let mut buf = vec![0u8; dict.len() + data.len()];
        buf[..dict.len()].copy_from_slice(&dict);
        let end = buf.len();
        inf.inflate_with_dict(&c, &mut buf, 0..dict.len(), dict.len()..end)
            .unwrap();
        assert_eq!(&buf[dict.len()..], &data[..]);
        assert_eq!(&buf[..dict.len()], &dict[..]);
        // too short an output, too long, truncated input and garbage are errors
        for (bad, out_len) in [
            (&c[..], data.len() - 1),
            (&c[..], data.len() + 1),
            (&c[..c.len() / 2], data.len()),
            (&[0xffu8; 20][..], data.len()),
        ] {
            let mut buf = vec![0u8; dict.len() + out_len];
            buf[..dict.len()].copy_from_slice(&dict);
            let end = buf.len();
            assert!(inf
                .inflate_with_dict(bad, &mut buf, 0..dict.len(), dict.len()..end)
                .is_err());
        }
        let mut out = vec![0u8; 10];
        assert!(inf.inflate(&[0xff; 20], &mut out).is_err());
        // a dictionary longer than the window: only its last 32 KiB can be referred to
        let big: Vec<u8> = (0..70_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let tail = &big[big.len() - 1000..];
        let data2: Vec<u8> = tail.iter().chain(tail).copied().collect();
        let c = deflate_raw(&data2, &big);
        let mut buf = big.clone();
        buf.resize(big.len() + data2.len(), 0);
        let end = buf.len();
        inf.inflate_with_dict(&c, &mut buf, 0..big.len(), big.len()..end)
            .unwrap();
        assert_eq!(&buf[big.len()..], &data2[..]);
        // the block may not start inside the dictionary
        let mut buf = vec![0u8; 100];
        assert!(inf.inflate_with_dict(&c, &mut buf, 0..50, 40..100).is_err());
    }
}
