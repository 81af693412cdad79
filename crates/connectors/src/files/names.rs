//! File names made from untrusted names (index names read from a repository anyone with
//! write access to the bucket could have crafted): [`file_name_for`] gives a name that is
//! one plain file inside the output directory on Linux, macOS and Windows.

/// The longest name [`file_name_for`] returns, in bytes: room is left for an extension
/// (`.jsonl`, `.bulk`, …) under the 255-byte limit of common file systems.
pub const MAX_FILE_NAME_BYTES: usize = 200;

/// Separates a changed name from the hash of the original. Never kept in a name as
/// given, so a changed name cannot equal an unchanged one.
const HASH_MARK: char = '~';
/// Hex digits of the hash (48 bits).
const HASH_DIGITS: usize = 12;

/// A file name (without extension) for `untrusted`: the name itself when it is already
/// safe, else a cleaned copy followed by `~` and a stable hash of the original, so two
/// different names never give the same file, whatever the file system's case rules.
///
/// Safe means: no path separator (`/`, `\`) and none of `: * ? " < > | ~`, no whitespace,
/// no control or invisible formatting character, no leading dot and no `..`, no
/// trailing dot, no ASCII upper case (case-insensitive file systems), not a Windows
/// device name (`CON`, `nul.txt`, `COM1`, …), not empty, at most
/// [`MAX_FILE_NAME_BYTES`] bytes (cut on a character boundary).
///
/// ```
/// use connectors::files::file_name_for;
/// assert_eq!(file_name_for("books"), "books");
/// assert!(file_name_for("../bk").starts_with("_._bk~"));
/// assert!(!file_name_for("a/b").contains('/'));
/// ```
pub fn file_name_for(untrusted: &str) -> String {
    let mut out = String::with_capacity(untrusted.len().min(MAX_FILE_NAME_BYTES));
    let mut changed = false;
    for (i, c) in untrusted.chars().enumerate() {
        let keep = !(c.is_control()
            || c.is_whitespace()
            || is_invisible(c)
            || c.is_ascii_uppercase()
            || matches!(
                c,
                '/' | '\\' | ':' | '*' | '?' | '"' | '<' | '>' | '|' | HASH_MARK
            )
            || (i == 0 && c == '.'));
        if keep {
            out.push(c);
        } else {
            out.push(if c.is_ascii_uppercase() {
                c.to_ascii_lowercase()
            } else {
                '_'
            });
            changed = true;
        }
    }
    while out.contains("..") {
        out = out.replace("..", "._");
        changed = true;
    }
    if out.ends_with('.') {
        out.pop();
        out.push('_');
        changed = true;
    }
    if out.is_empty() || is_windows_device(&out) {
        out.insert(0, '_');
        changed = true;
    }
    let suffix_len = HASH_MARK.len_utf8() + HASH_DIGITS;
    if out.len() > MAX_FILE_NAME_BYTES {
        changed = true;
    }
    if !changed {
        return out;
    }
    let mut cut = out.len().min(MAX_FILE_NAME_BYTES - suffix_len);
    while !out.is_char_boundary(cut) {
        cut -= 1;
    }
    out.truncate(cut);
    let hash = fnv1a64(untrusted.as_bytes());
    out.push(HASH_MARK);
    out.push_str(&format!(
        "{:0width$x}",
        hash >> (64 - 4 * HASH_DIGITS),
        width = HASH_DIGITS
    ));
    out
}

/// Zero-width and bidirectional formatting characters: invisible in a listing, able to
/// make one name look like another.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}')
}

/// `CON`, `PRN`, `AUX`, `NUL`, `COM0`–`COM9`, `LPT0`–`LPT9`, alone or before an extension.
fn is_windows_device(name: &str) -> bool {
    let stem = name.split('.').next().unwrap_or(name).to_ascii_lowercase();
    matches!(stem.as_str(), "con" | "prn" | "aux" | "nul")
        || (stem.len() == 4
            && (stem.starts_with("com") || stem.starts_with("lpt"))
            && stem.as_bytes()[3].is_ascii_digit())
}

/// 64-bit FNV-1a: stable across runs, platforms and versions.
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn is_safe(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= MAX_FILE_NAME_BYTES
            && !name.starts_with('.')
            && !name.ends_with('.')
            && !name.contains("..")
            && !name.contains(['/', '\\', '\0'])
            && !name.chars().any(|c| c.is_control())
            && !is_windows_device(name)
    }

    #[test]
    fn safe_names_are_kept() {
        for name in [
            "books",
            "logs-2024.01.01",
            "reviews_v2",
            "índice",
            "日志",
            "a.b",
            "a+b=c@d",
        ] {
            assert_eq!(file_name_for(name), name);
        }
    }

    #[test]
    fn unsafe_names_are_cleaned_and_hashed() {
        for name in [
            "../bk",
            "..",
            ".",
            ".hidden",
            "a/b",
            "a\\b",
            "/etc/passwd",
            "..\\..\\x",
            "a\0b",
            "tab\there",
            "new\nline",
            "",
            "CON",
            "nul.txt",
            "com1",
            "Lpt9.log",
            "Books",
            "trailing.",
            "a..b",
            "C:evil",
            "x~abc",
            "right\u{202E}gnp.exe",
            "zero\u{200B}width",
            "spa ce",
        ] {
            let f = file_name_for(name);
            assert!(is_safe(&f), "{name:?} → {f:?}");
            assert_ne!(f, name, "{name:?} must change");
            assert!(f.contains(HASH_MARK), "{name:?} → {f:?}");
        }
        assert!(file_name_for("../bk").starts_with("_._bk~"));
        assert!(file_name_for(".hidden").starts_with("_hidden~"));
        assert!(file_name_for("a/b").starts_with("a_b~"));
        assert!(file_name_for("CON").starts_with("_con~"));
    }

    #[test]
    fn long_names_are_cut_on_a_character_boundary() {
        for unit in ["a", "é", "日", "🦀"] {
            let name = unit.repeat(400);
            let f = file_name_for(&name);
            assert!(f.len() <= MAX_FILE_NAME_BYTES, "{}", f.len());
            assert!(is_safe(&f));
            assert!(f.starts_with(unit));
        }
        let exact = "a".repeat(MAX_FILE_NAME_BYTES);
        assert_eq!(file_name_for(&exact), exact, "at the limit: kept");
        assert_ne!(file_name_for(&format!("{exact}a")), format!("{exact}a"));
    }

    #[test]
    fn stable_and_collision_free() {
        assert_eq!(file_name_for("../bk"), file_name_for("../bk"));
        // Names that clean to the same text, and names that look alike once cleaned.
        let names = [
            "a/b", "a\\b", "a:b", "a*b", "a?b", "a_b", "A_b", "a_B", "a b", "a\tb", ".a_b", "a|b",
            "a<b", "a>b", "a\"b", "a~b", "../bk", "..\\bk", "._bk", "_._bk", "CON", "con", "_con",
            "Con",
        ];
        let mut seen = BTreeMap::new();
        for n in names {
            let f = file_name_for(n);
            if let Some(other) = seen.insert(f.clone(), n) {
                panic!("{n:?} and {other:?} both give {f:?}");
            }
        }
        // Case-insensitive file systems: no two results differ only by case.
        let lower: std::collections::BTreeSet<_> = seen.keys().map(|k| k.to_lowercase()).collect();
        assert_eq!(lower.len(), seen.len());
        // A long name cut to the limit still differs from its sibling.
        let a = format!("{}x", "a".repeat(300));
        let b = format!("{}y", "a".repeat(300));
        assert_ne!(file_name_for(&a), file_name_for(&b));
    }
}
