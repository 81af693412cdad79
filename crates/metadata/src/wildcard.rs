//! Wildcard patterns for index and template names: `*` matches any run of characters
//! (none included), `?` exactly one; everything else matches itself. Index names cannot
//! hold `*` or `?`, so a pattern never needs to match them literally.
//!
//! ```
//! assert!(metadata::wildcard::matches("logs-*", "logs-2024.01"));
//! assert!(metadata::wildcard::matches("p?sts", "posts"));
//! assert!(!metadata::wildcard::matches("logs-*", "metrics"));
//! ```

/// Whether `name` matches `pattern` as a whole. Linear in practice: on a mismatch after a
/// `*`, the star takes one more character and matching resumes there (no recursion).
pub fn matches(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0, 0);
    // The last `*` seen and the name position its run ends at so far.
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(&c) if c == '?' || c == n[ni] => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                Some((s, end)) => {
                    pi = s + 1;
                    ni = end + 1;
                    star = Some((s, end + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn stars_and_question_marks() {
        assert!(matches("*", "abc"));
        assert!(matches("*", ""));
        assert!(matches("posts_*", "posts_2024_01_01"));
        assert!(matches("p?sts*", "posts"));
        assert!(!matches("posts_*", "bwc_index_1"));
        assert!(matches("*_1", "bwc_index_1"));
        assert!(!matches("a", "ab"));
        assert!(!matches("ab", "a"));
        assert!(matches("exact", "exact"));
        assert!(matches("a*b*c", "aXXbYYc"));
        assert!(!matches("a*b*c", "aXXbYY"));
        assert!(matches("logs-*-*", "logs-app-default"));
        assert!(!matches("logs-*-*", "logs-app"));
        assert!(matches("a*a", "aa"));
        assert!(!matches("aa*aa", "aaa"));
        assert!(matches("*é?", "xéy"));
        assert!(!matches("?", ""));
    }
}
