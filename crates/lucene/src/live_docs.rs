//! Which documents of a segment are live: the hard-deletes bitset (`.liv`) combined with
//! soft deletes.
//!
//! `.liv` = index header (`Lucene50LiveDocs`, big-endian words, or `Lucene90LiveDocs`,
//! little-endian words; suffix = deletion generation in base 36), `ceil(maxDoc / 64)`
//! 64-bit words where bit `d % 64` of word `d / 64` is set when doc `d` is live, footer.
//!
//! Lucene 4.x keeps them in `<segment>_<gen>.del` as a `BitVector`: a −2 marker, a plain
//! header (`BitVector` v1–2), then either the bits (size, live count, one byte per 8 docs,
//! bit `d % 8` of byte `d / 8`) or, when few are deleted, −1, size, live count and only
//! the bytes that are not 0xFF as (vInt gap from the previous one, byte) pairs; v2 ends
//! with a footer (docs/specs/lucene4.md).

use crate::codec_util::{self, ID_LEN};
use crate::data_input::{DataInput, Endian};
use crate::error::{Error, Result};

/// A bitset over the documents of one segment; a set bit means live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveDocs {
    words: Vec<u64>,
    max_doc: u32,
}

impl LiveDocs {
    /// Every document live.
    pub fn all(max_doc: u32) -> LiveDocs {
        let n = (max_doc as usize).div_ceil(64);
        let mut words = vec![u64::MAX; n];
        if !max_doc.is_multiple_of(64) {
            if let Some(last) = words.last_mut() {
                *last = (1u64 << (max_doc % 64)) - 1;
            }
        }
        LiveDocs { words, max_doc }
    }

    pub fn max_doc(&self) -> u32 {
        self.max_doc
    }

    /// Whether `doc` is live (false beyond max doc).
    #[inline]
    pub fn is_live(&self, doc: u32) -> bool {
        doc < self.max_doc && self.words[(doc >> 6) as usize] & (1u64 << (doc & 63)) != 0
    }

    /// Marks `doc` deleted; returns whether it was live.
    #[inline]
    pub fn delete(&mut self, doc: u32) -> bool {
        if doc >= self.max_doc {
            return false;
        }
        let w = &mut self.words[(doc >> 6) as usize];
        let bit = 1u64 << (doc & 63);
        let was = *w & bit != 0;
        *w &= !bit;
        was
    }

    /// Number of live documents.
    pub fn count(&self) -> u32 {
        self.words.iter().map(|w| w.count_ones()).sum()
    }

    /// The first live doc at or after `from`, if any.
    #[inline]
    pub fn next_live(&self, from: u32) -> Option<u32> {
        if from >= self.max_doc {
            return None;
        }
        let mut i = (from >> 6) as usize;
        let mut w = self.words[i] & (u64::MAX << (from & 63));
        loop {
            if w != 0 {
                let doc = (i as u32) * 64 + w.trailing_zeros();
                return (doc < self.max_doc).then_some(doc);
            }
            i += 1;
            w = *self.words.get(i)?;
        }
    }
}

/// Parses (and fully verifies) a `.liv` file of a segment with `max_doc` documents,
/// checking its deleted count against `del_count` from the commit.
pub fn parse_live_docs(
    display: &str,
    bytes: &[u8],
    segment_id: &[u8; ID_LEN],
    del_gen_suffix: &str,
    max_doc: u32,
    del_count: u32,
) -> Result<LiveDocs> {
    codec_util::verify_checksum_bytes(display, bytes)?;
    let body = &bytes[..bytes.len() - codec_util::FOOTER_LEN];
    let mut input = DataInput::new(display, body);
    let header = codec_util::read_index_header_any(&mut input)?;
    let endian = match header.codec {
        "Lucene50LiveDocs" => Endian::Big,
        "Lucene90LiveDocs" => Endian::Little,
        other => {
            return Err(Error::unsupported(
                display,
                format!("live docs codec {other:?} (version {})", header.version),
            ))
        }
    };
    codec_util::check_name_version(display, header.codec, header.version, header.codec, 0, 0)?;
    codec_util::check_id_suffix(display, &header, segment_id, del_gen_suffix)?;
    let n = (max_doc as usize).div_ceil(64);
    if input.remaining() != n * 8 {
        return Err(input.corrupt(format!(
            "{} bytes of bits for {max_doc} documents, expected {}",
            input.remaining(),
            n * 8
        )));
    }
    let mut words = Vec::with_capacity(n);
    for _ in 0..n {
        words.push(input.read_i64(endian)? as u64);
    }
    if !max_doc.is_multiple_of(64) {
        if let Some(last) = words.last_mut() {
            *last &= (1u64 << (max_doc % 64)) - 1;
        }
    }
    let live = LiveDocs { words, max_doc };
    let deleted = max_doc - live.count();
    if deleted != del_count {
        return Err(Error::corrupt(
            display,
            format!("{deleted} documents are marked deleted, the commit says {del_count}"),
        ));
    }
    Ok(live)
}

/// Parses (and, for v2, fully verifies) a Lucene 4.x `.del` file of a segment with
/// `max_doc` documents, checking its deleted count against `del_count` from the commit.
pub fn parse_bit_vector(
    display: &str,
    bytes: &[u8],
    max_doc: u32,
    del_count: u32,
) -> Result<LiveDocs> {
    let mut probe = DataInput::new(display, bytes);
    let marker = probe.read_i32(Endian::Big)?;
    if marker != -2 {
        return Err(Error::unsupported(
            display,
            format!("deleted-docs bit vector without a header (first int {marker}): written before Lucene 4.0"),
        ));
    }
    let (_, version) = codec_util::read_header(&mut probe)?;
    let body = if version >= 2 {
        codec_util::verify_checksum_bytes(display, bytes)?;
        &bytes[..bytes.len() - codec_util::FOOTER_LEN]
    } else {
        bytes
    };
    let mut input = DataInput::new(display, body);
    input.read_i32(Endian::Big)?;
    codec_util::check_header(&mut input, "BitVector", 1, 2)?;
    let mut size = input.read_i32(Endian::Big)?;
    let dgaps = size == -1;
    if dgaps {
        size = input.read_i32(Endian::Big)?;
    }
    if size != max_doc as i32 {
        return Err(input.corrupt(format!(
            "bit vector of {size} bits for a segment of {max_doc} documents"
        )));
    }
    let count = input.read_i32(Endian::Big)?;
    if count < 0 || count > size {
        return Err(input.corrupt(format!("{count} live documents of {size}")));
    }
    let num_bytes = (max_doc as usize).div_ceil(8);
    let mut bits = if dgaps {
        let mut bits = vec![0xFFu8; num_bytes];
        let mut cleared = i64::from(size - count);
        let mut last = 0usize;
        while cleared > 0 {
            let gap = input.read_vint()?;
            let at = usize::try_from(gap)
                .ok()
                .and_then(|g| last.checked_add(g))
                .filter(|&i| i < num_bytes)
                .ok_or_else(|| {
                    input.corrupt(format!(
                        "d-gap {gap} after byte {last} lies outside {num_bytes} bytes"
                    ))
                })?;
            let b = input.read_u8()?;
            bits[at] = b;
            cleared -= i64::from(8 - b.count_ones());
            last = at;
        }
        bits
    } else {
        input.read_bytes(num_bytes)?.to_vec()
    };
    if input.remaining() != 0 {
        return Err(input.corrupt(format!(
            "{} unexpected bytes after the bits",
            input.remaining()
        )));
    }
    bits.resize(num_bytes.div_ceil(8) * 8, 0);
    let mut words: Vec<u64> = bits
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    if !max_doc.is_multiple_of(64) {
        if let Some(last) = words.last_mut() {
            *last &= (1u64 << (max_doc % 64)) - 1;
        }
    }
    let live = LiveDocs { words, max_doc };
    if live.count() != count as u32 {
        return Err(Error::corrupt(
            display,
            format!(
                "{} documents are marked live, the header says {count}",
                live.count()
            ),
        ));
    }
    let deleted = max_doc - live.count();
    if deleted != del_count {
        return Err(Error::corrupt(
            display,
            format!("{deleted} documents are marked deleted, the commit says {del_count}"),
        ));
    }
    Ok(live)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitset_operations() {
        for max in [0u32, 1, 63, 64, 65, 130] {
            let mut l = LiveDocs::all(max);
            assert_eq!(l.count(), max);
            assert!(!l.is_live(max));
            if max > 0 {
                assert!(l.delete(max - 1));
                assert!(!l.delete(max - 1));
                assert_eq!(l.count(), max - 1);
                assert_eq!(l.next_live(max - 1), None);
            }
        }
        let mut l = LiveDocs::all(200);
        for d in 0..150 {
            l.delete(d);
        }
        assert_eq!(l.next_live(0), Some(150));
        assert_eq!(l.next_live(151), Some(151));
        assert_eq!(l.next_live(200), None);
    }
}
