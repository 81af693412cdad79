//! Where a JSON value ends, in text already known to be valid JSON (checked by the
//! reader or by [`snapshot::json::check_value`]): only its extent is found, nothing is
//! checked or decoded.

/// The first byte from `i` on that is not JSON whitespace.
pub(crate) fn skip_ws(src: &[u8], mut i: usize) -> usize {
    while matches!(src.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// Just past the closing quote of the string opening at `i`.
fn string_end(src: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        j += memchr::memchr2(b'"', b'\\', src.get(j..)?)?;
        if src[j] == b'"' {
            return Some(j + 1);
        }
        j += 2;
    }
}

/// Bytes that open or close a string, an object or an array.
const STRUCTURE: [bool; 256] = {
    let mut t = [false; 256];
    t[b'"' as usize] = true;
    t[b'{' as usize] = true;
    t[b'}' as usize] = true;
    t[b'[' as usize] = true;
    t[b']' as usize] = true;
    t
};

/// Just past the value starting at `i` (valid JSON, so only its extent is found).
pub(crate) fn value_end(src: &[u8], i: usize) -> Option<usize> {
    match src.get(i)? {
        b'"' => string_end(src, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                j += src
                    .get(j..)?
                    .iter()
                    .position(|&c| STRUCTURE[usize::from(c)])?;
                match src[j] {
                    b'"' => {
                        j = string_end(src, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    _ => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while let Some(c) = src.get(j) {
                if matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                    break;
                }
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}
