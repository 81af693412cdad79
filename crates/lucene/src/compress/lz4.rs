//! LZ4 block decoding as Lucene uses it.
//!
//! Lucene writes standard LZ4 *block* sequences (no frame, no stored sizes): a token byte
//! whose high nibble is the literal length and low nibble the match length minus 4, both
//! extended by 255-runs; literals; a 2-byte little-endian back-reference distance. The
//! decoder is told how many bytes to produce and stops there (the last sequence holds
//! only literals), so it also reports how much input it consumed — the plain LZ4 mode
//! concatenates independent blocks without lengths.
//!
//! Output goes into a caller-owned buffer. History is either the output produced so far
//! in the same call, a dictionary that directly precedes it in the buffer, or a
//! dictionary somewhere earlier in the same buffer (Lucene's preset-dictionary mode,
//! where every block sees only the dictionary as history).
//!
//! The buffer must extend at least [`SLACK`] bytes past the end of the requested output:
//! the fast paths copy 16 bytes at a time and may scribble into that tail.

use std::ops::Range;

use super::DecompressError;

/// Bytes the output buffer must extend past the requested output range.
pub const SLACK: usize = 32;

const MIN_MATCH: usize = 4;

/// Decodes one LZ4 block from the start of `src` into `out[dst]`.
///
/// `dict` is a range of `out` that precedes `dst` (`dict.end <= dst.start`) and that
/// back-references may reach into, as if it directly preceded the output; pass an empty
/// range for no history. `out.len()` must be at least `dst.end + SLACK`.
///
/// Returns the number of bytes of `src` consumed.
pub fn decompress(
    src: &[u8],
    out: &mut [u8],
    dict: Range<usize>,
    dst: Range<usize>,
) -> Result<usize, DecompressError> {
    if dict.start > dict.end || dict.end > dst.start || dst.start > dst.end {
        return Err(DecompressError::Invalid("bad LZ4 output ranges"));
    }
    if out.len() < dst.end + SLACK {
        return Err(DecompressError::Invalid("LZ4 output buffer lacks slack"));
    }
    let end = dst.end;
    // Where in-buffer history starts: a dictionary directly before the output is part of
    // the same window; one further away is reached through `copy_from_far_dict`.
    let contiguous = dict.end == dst.start;
    let window_start = if contiguous { dict.start } else { dst.start };
    let far_dict_len = if contiguous { 0 } else { dict.end - dict.start };

    let mut ip = 0usize;
    let mut op = dst.start;
    while op < end {
        let token = *src.get(ip).ok_or(DecompressError::Truncated)? as usize;
        ip += 1;

        // Literals.
        let mut lit = token >> 4;
        if lit == 15 {
            lit += read_ext(src, &mut ip)?;
        }
        if lit > end - op {
            return Err(DecompressError::Invalid("LZ4 literals run past the output"));
        }
        if lit <= 16 && src.len() - ip >= 16 {
            // Wild copy: `out` has SLACK bytes after `end`.
            out[op..op + 16].copy_from_slice(&src[ip..ip + 16]);
        } else {
            let lits = src.get(ip..ip + lit).ok_or(DecompressError::Truncated)?;
            out[op..op + lit].copy_from_slice(lits);
        }
        ip += lit;
        op += lit;
        if op >= end {
            break;
        }

        // Match.
        let off_bytes = src.get(ip..ip + 2).ok_or(DecompressError::Truncated)?;
        let offset = u16::from_le_bytes([off_bytes[0], off_bytes[1]]) as usize;
        ip += 2;
        let mut mlen = token & 15;
        if mlen == 15 {
            mlen += read_ext(src, &mut ip)?;
        }
        mlen += MIN_MATCH;
        if mlen > end - op {
            return Err(DecompressError::Invalid("LZ4 match runs past the output"));
        }
        if offset == 0 {
            return Err(DecompressError::Invalid("LZ4 match distance 0"));
        }
        if offset <= op - window_start {
            copy_match(out, op - offset, op, mlen, offset);
        } else {
            let back = offset - (op - window_start);
            if back > far_dict_len {
                return Err(DecompressError::Invalid(
                    "LZ4 match reaches before the window",
                ));
            }
            // Starts in a dictionary that does not directly precede the output.
            let from = dict.end - back;
            let first = back.min(mlen);
            out.copy_within(from..from + first, op);
            if mlen > first {
                // Continues at the start of the output, still `offset` bytes back virtually.
                copy_match(out, dst.start, op + first, mlen - first, offset);
            }
        }
        op += mlen;
    }
    Ok(ip)
}

/// Decodes one complete LZ4 block (`src` is exactly the block, as in Lucene's
/// preset-dictionary mode, which stores compressed lengths) into all of `out`, with
/// `dict` as history. Uses `lz4_flex`'s bounds-checked fast decoder.
pub fn decompress_block(src: &[u8], out: &mut [u8], dict: &[u8]) -> Result<(), DecompressError> {
    let n = lz4_flex::block::decompress_into_with_dict(src, out, dict)
        .map_err(|_| DecompressError::Invalid("LZ4 block does not decode"))?;
    if n != out.len() {
        return Err(DecompressError::Length {
            expected: out.len(),
            actual: n,
        });
    }
    Ok(())
}

/// Reads an LZ4 length extension: bytes added while they are 255, then the last one.
#[inline]
fn read_ext(src: &[u8], ip: &mut usize) -> Result<usize, DecompressError> {
    let mut total = 0usize;
    loop {
        let b = *src.get(*ip).ok_or(DecompressError::Truncated)?;
        *ip += 1;
        total += b as usize;
        if b != 255 {
            return Ok(total);
        }
        // The input bounds the run; this guards 32-bit targets against overflow.
        if total > u32::MAX as usize {
            return Err(DecompressError::Invalid("LZ4 length overflow"));
        }
    }
}

/// Copies `len` bytes from `from` to `to` (`to > from`) with LZ4 semantics: when the
/// ranges overlap, bytes written earlier in the copy are read again (a repeating
/// pattern of period `dist`). The caller checked that `to + len + SLACK <= out.len()`.
#[inline]
fn copy_match(out: &mut [u8], from: usize, to: usize, len: usize, dist: usize) {
    if dist >= 16 {
        // Each 16-byte step reads bytes that are already final.
        let mut i = 0;
        while i < len {
            out.copy_within(from + i..from + i + 16, to + i);
            i += 16;
        }
    } else if dist == 1 {
        let b = out[from];
        out[to..to + len].fill(b);
    } else {
        // Grow the periodic region [from, to + copied) by copying its whole length each
        // step; every copy is non-overlapping and preserves the period.
        let mut copied = 0;
        while copied < len {
            let n = (dist + copied).min(len - copied);
            out.copy_within(from..from + n, to + copied);
            copied += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small LZ4 block encoder (greedy, hash of 4 bytes) used to make test input; it
    /// follows the block-format rules (last 5 bytes literals, last match ends 12 bytes
    /// before the end) and can use a dictionary that precedes the input.
    pub(crate) fn compress(input: &[u8], dict: &[u8]) -> Vec<u8> {
        let mut data = dict.to_vec();
        data.extend_from_slice(input);
        let start = dict.len();
        let n = data.len();
        let mut table = vec![usize::MAX; 1 << 12];
        let hash = |p: usize| {
            let v = u32::from_le_bytes([data[p], data[p + 1], data[p + 2], data[p + 3]]);
            (v.wrapping_mul(2654435761) >> 20) as usize
        };
        for p in 0..start.saturating_sub(3) {
            table[hash(p)] = p;
        }
        let mut out = Vec::new();
        let mut anchor = start;
        let mut p = start;
        let limit = n.saturating_sub(12);
        while p < limit {
            let h = hash(p);
            let cand = table[h];
            table[h] = p;
            if cand != usize::MAX && p - cand <= 65535 && data[cand..cand + 4] == data[p..p + 4] {
                let mut m = 4;
                while p + m < n - 5 && data[cand + m] == data[p + m] {
                    m += 1;
                }
                emit(&mut out, &data[anchor..p], Some((p - cand, m)));
                p += m;
                anchor = p;
            } else {
                p += 1;
            }
        }
        emit(&mut out, &data[anchor..n], None);
        out
    }

    fn emit(out: &mut Vec<u8>, lits: &[u8], m: Option<(usize, usize)>) {
        let l = lits.len();
        let ml = m.map(|(_, len)| len - 4).unwrap_or(0);
        out.push(((l.min(15) << 4) | ml.min(15)) as u8);
        if l >= 15 {
            ext(out, l - 15);
        }
        out.extend_from_slice(lits);
        if let Some((off, _)) = m {
            out.extend_from_slice(&(off as u16).to_le_bytes());
            if ml >= 15 {
                ext(out, ml - 15);
            }
        }
    }

    fn ext(out: &mut Vec<u8>, mut v: usize) {
        while v >= 255 {
            out.push(255);
            v -= 255;
        }
        out.push(v as u8);
    }

    fn sample(n: usize, seed: u64) -> Vec<u8> {
        let words: [&[u8]; 6] = [
            b"alpha ",
            b"beta ",
            b"gamma",
            b"{\"k\":",
            b"x",
            b"0123456789abcdef",
        ];
        let mut s = seed;
        let mut v = Vec::new();
        while v.len() < n {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let w = words[(s >> 33) as usize % words.len()];
            v.extend_from_slice(w);
            if (s >> 20).is_multiple_of(7) {
                v.push((s >> 40) as u8);
            }
        }
        v.truncate(n);
        v
    }

    #[test]
    fn round_trips_plain_blocks() {
        for n in [1usize, 5, 13, 100, 1000, 70_000] {
            let input = sample(n, n as u64);
            let c = compress(&input, &[]);
            let mut out = vec![0u8; n + SLACK];
            let used = decompress(&c, &mut out, 0..0, 0..n).unwrap();
            assert_eq!(used, c.len());
            assert_eq!(&out[..n], &input[..]);
        }
    }

    #[test]
    fn round_trips_with_dictionary_near_and_far() {
        let dict = sample(3000, 7);
        let a = sample(5000, 8);
        let b = sample(4000, 9);
        let ca = compress(&a, &dict);
        let cb = compress(&b, &dict);
        let total = dict.len() + a.len() + b.len();
        let mut out = vec![0u8; total + SLACK];
        out[..dict.len()].copy_from_slice(&dict);
        let d = 0..dict.len();
        let ra = dict.len()..dict.len() + a.len();
        let rb = ra.end..total;
        assert_eq!(
            decompress(&ca, &mut out, d.clone(), ra.clone()).unwrap(),
            ca.len()
        );
        assert_eq!(decompress(&cb, &mut out, d, rb.clone()).unwrap(), cb.len());
        assert_eq!(&out[ra], &a[..]);
        assert_eq!(&out[rb], &b[..]);
    }

    #[test]
    fn overlapping_matches_repeat_patterns() {
        // "ab" then a match of distance 2, length 30; distance 1; distance 5.
        let mut src = vec![0x2F, b'a', b'b', 2, 0, 11];
        src.extend_from_slice(&[0x1F, b'c', 1, 0, 0]); // 'c' then 19 more 'c'
        src.extend_from_slice(&[0x50, b'v', b'w', b'x', b'y', b'z']);
        let expect: Vec<u8> = b"ab"
            .iter()
            .cycle()
            .take(32)
            .copied()
            .chain(std::iter::repeat_n(b'c', 20))
            .chain(b"vwxyz".iter().copied())
            .collect();
        let mut out = vec![0u8; expect.len() + SLACK];
        let n = expect.len();
        decompress(&src, &mut out, 0..0, 0..n).unwrap();
        assert_eq!(&out[..n], &expect[..]);
    }

    #[test]
    fn corrupt_input_is_an_error() {
        let mut out = vec![0u8; 100 + SLACK];
        // Match distance beyond the window.
        assert!(decompress(&[0x10, b'a', 9, 0], &mut out, 0..0, 0..50).is_err());
        // Distance 0.
        assert!(decompress(&[0x10, b'a', 0, 0], &mut out, 0..0, 0..50).is_err());
        // Literals past the output.
        assert!(decompress(&[0xF0, 200], &mut out, 0..0, 0..50).is_err());
        // Truncated.
        assert!(decompress(&[0x50, b'a'], &mut out, 0..0, 0..50).is_err());
        assert!(decompress(&[], &mut out, 0..0, 0..50).is_err());
        // No slack.
        assert!(decompress(&[0x10, b'a'], &mut out, 0..0, 0..100).is_err());
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut s = 1u64;
        let mut out = vec![0u8; 600 + SLACK];
        out[..100].fill(7);
        for _ in 0..20_000 {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
            let len = (s >> 50) as usize % 64;
            let src: Vec<u8> = (0..len)
                .map(|i| (s.rotate_left(i as u32 * 7) >> 13) as u8)
                .collect();
            let _ = decompress(&src, &mut out, 0..100, 100..400);
            let _ = decompress(&src, &mut out, 0..50, 200..500);
        }
    }
}
