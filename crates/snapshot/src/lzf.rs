//! LZF chunks (`ZV\0` stored, `ZV\1` compressed), as Elasticsearch 1.x wrote compressed
//! metadata and `_source`. Decoding only.

use crate::error::{Error, Result};

/// Output larger than this is refused.
const MAX_OUTPUT: usize = 1 << 30;

/// Whether `data` starts with an LZF chunk header.
pub fn is_lzf(data: &[u8]) -> bool {
    data.len() >= 3 && data[0] == b'Z' && data[1] == b'V' && data[2] <= 1
}

/// Decompresses `data` if it is LZF, else returns it unchanged.
pub fn maybe_decompress(blob: &str, data: &[u8]) -> Result<Vec<u8>> {
    if is_lzf(data) {
        decompress(blob, data)
    } else {
        Ok(data.to_vec())
    }
}

/// Decodes a sequence of LZF chunks.
pub fn decompress(blob: &str, data: &[u8]) -> Result<Vec<u8>> {
    let bad = |r: &str| Error::corrupt(blob, format!("LZF: {r}"));
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        if data.len() - pos < 5 || data[pos] != b'Z' || data[pos + 1] != b'V' {
            return Err(bad("bad chunk header"));
        }
        let kind = data[pos + 2];
        let len = u16::from_be_bytes([data[pos + 3], data[pos + 4]]) as usize;
        match kind {
            0 => {
                let start = pos + 5;
                let chunk = data
                    .get(start..start + len)
                    .ok_or_else(|| bad("truncated"))?;
                out.extend_from_slice(chunk);
                pos = start + len;
            }
            1 => {
                if data.len() - pos < 7 {
                    return Err(bad("truncated header"));
                }
                let raw_len = u16::from_be_bytes([data[pos + 5], data[pos + 6]]) as usize;
                let start = pos + 7;
                let chunk = data
                    .get(start..start + len)
                    .ok_or_else(|| bad("truncated"))?;
                let before = out.len();
                decode_block(chunk, &mut out).map_err(bad)?;
                if out.len() - before != raw_len {
                    return Err(bad("chunk length mismatch"));
                }
                pos = start + len;
            }
            _ => return Err(bad("unknown chunk type")),
        }
        if out.len() > MAX_OUTPUT {
            return Err(bad("output too large"));
        }
    }
    Ok(out)
}

fn decode_block(input: &[u8], out: &mut Vec<u8>) -> std::result::Result<(), &'static str> {
    let base = out.len();
    let mut i = 0;
    while i < input.len() {
        let ctrl = input[i] as usize;
        i += 1;
        if ctrl < 32 {
            let n = ctrl + 1;
            let lit = input.get(i..i + n).ok_or("literal past end")?;
            out.extend_from_slice(lit);
            i += n;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += *input.get(i).ok_or("length past end")? as usize;
                i += 1;
            }
            let low = *input.get(i).ok_or("offset past end")? as usize;
            i += 1;
            let back = ((ctrl & 0x1F) << 8) + low + 1;
            if back > out.len() - base {
                return Err("back reference before start");
            }
            let from = out.len() - back;
            for k in 0..len + 2 {
                let b = out[from + k];
                out.push(b);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_literals_and_back_references() {
        // "abcabcabcX": literal "abc", back ref len 6 offset 3, literal "X".
        let block = [2, b'a', b'b', b'c', (4 << 5), 2, 0, b'X'];
        let mut data = vec![b'Z', b'V', 1, 0, block.len() as u8, 0, 10];
        data.extend_from_slice(&block);
        data.extend_from_slice(&[b'Z', b'V', 0, 0, 2, b'!', b'!']);
        assert_eq!(decompress("x", &data).unwrap(), b"abcabcabcX!!");
        assert!(decompress("x", &data[..9]).is_err());
        assert_eq!(maybe_decompress("x", b"{}").unwrap(), b"{}");
    }
}
