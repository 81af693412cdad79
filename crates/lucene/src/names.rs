//! Lucene file naming: base-36 generations, per-segment and per-generation file names.

/// `value` in base 36 with lower-case digits, as Lucene renders generations and counters.
pub fn base36(mut value: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if value == 0 {
        return "0".to_string();
    }
    let mut out = Vec::new();
    while value > 0 {
        out.push(DIGITS[(value % 36) as usize]);
        value /= 36;
    }
    out.reverse();
    String::from_utf8(out).expect("base-36 digits are ASCII")
}

/// Parses a non-empty lower-case (or upper-case) base-36 number; `None` on anything else
/// or on overflow.
pub fn parse_base36(s: &str) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for c in s.chars() {
        let d = c.to_digit(36)? as u64;
        v = v.checked_mul(36)?.checked_add(d)?;
    }
    Some(v)
}

/// `<segment>[_<suffix>].<ext>`.
pub fn segment_file_name(segment: &str, suffix: &str, ext: &str) -> String {
    let mut name = String::with_capacity(segment.len() + suffix.len() + ext.len() + 2);
    name.push_str(segment);
    if !suffix.is_empty() {
        name.push('_');
        name.push_str(suffix);
    }
    if !ext.is_empty() {
        name.push('.');
        name.push_str(ext);
    }
    name
}

/// The per-commit file of `segment` for generation `generation`: `_0_2.liv`.
pub fn generation_file_name(segment: &str, generation: u64, ext: &str) -> String {
    segment_file_name(segment, &base36(generation), ext)
}

/// The generation of a `segments_N` file name: `segments` is 0, `segments_<base36>` is N.
/// `None` for other names (including `segments.gen` and `pending_segments_N`).
pub fn segments_generation(file: &str) -> Option<u64> {
    if file == "segments" {
        return Some(0);
    }
    parse_base36(file.strip_prefix("segments_")?)
}

/// The counter of a segment name (`_1k` → 56), used to order segments by generation.
pub fn segment_counter(segment: &str) -> Option<u64> {
    parse_base36(segment.strip_prefix('_')?)
}

/// A file name without its leading segment name, as compound-file entries store it:
/// `_0.fdt` → `.fdt`, `_0_Lucene90_0.dvd` → `_Lucene90_0.dvd`.
pub fn strip_segment_name(file: &str) -> &str {
    let bytes = file.as_bytes();
    let from = bytes
        .iter()
        .skip(1)
        .position(|&b| b == b'_' || b == b'.')
        .map(|p| p + 1);
    match from {
        Some(i) => &file[i..],
        None => file,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base36_roundtrip() {
        for (v, s) in [(0, "0"), (1, "1"), (35, "z"), (36, "10"), (56, "1k")] {
            assert_eq!(base36(v), s);
            assert_eq!(parse_base36(s), Some(v));
        }
        assert_eq!(parse_base36(&base36(u64::MAX)), Some(u64::MAX));
        assert_eq!(parse_base36("zzzzzzzzzzzzzzzzzzzz"), None);
        assert_eq!(parse_base36(""), None);
        assert_eq!(parse_base36("a-b"), None);
    }

    #[test]
    fn file_names() {
        assert_eq!(segment_file_name("_0", "", "si"), "_0.si");
        assert_eq!(
            segment_file_name("_0", "Lucene90_0", "dvm"),
            "_0_Lucene90_0.dvm"
        );
        assert_eq!(generation_file_name("_a", 37, "liv"), "_a_11.liv");
        assert_eq!(segments_generation("segments_a"), Some(10));
        assert_eq!(segments_generation("segments"), Some(0));
        assert_eq!(segments_generation("segments.gen"), None);
        assert_eq!(segments_generation("pending_segments_2"), None);
        assert_eq!(segment_counter("_1k"), Some(56));
        assert_eq!(strip_segment_name("_0.fdt"), ".fdt");
        assert_eq!(strip_segment_name("_0_Lucene90_0.dvd"), "_Lucene90_0.dvd");
        assert_eq!(strip_segment_name("_12.si"), ".si");
        assert_eq!(strip_segment_name("x"), "x");
    }
}
