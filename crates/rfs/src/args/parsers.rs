//! Value parsers shared by the flags: ranges checked where the command line is parsed, and
//! how secrets are shown by `Debug`.

/// What `Debug` shows of a secret: whether it is set, never its value.
pub fn masked(secret: &Option<String>) -> Option<&'static str> {
    secret.as_ref().map(|_| redact::MASK)
}

/// `--migration`: 1–100 characters, none of them a control character.
pub fn migration_name(s: &str) -> Result<String, String> {
    let n = s.chars().count();
    if !(1..=100).contains(&n) {
        return Err(format!("{n} characters; expected 1–100"));
    }
    if s.chars().any(char::is_control) {
        return Err("control characters are not allowed".into());
    }
    Ok(s.to_string())
}

/// A float flag's parser: a finite number within `min..=max` (so never NaN, infinite, or
/// 0 where 0 makes no sense); the error names the range.
pub fn float_in(
    min: f64,
    max: f64,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let v: f64 = s
            .trim()
            .parse()
            .map_err(|_| format!("not a number (expected {min}–{max})"))?;
        if v.is_finite() && (min..=max).contains(&v) {
            Ok(v)
        } else {
            Err(format!("{s} is not in {min}–{max}"))
        }
    }
}

/// An integer flag's parser for a `usize` field: within `min..=max`.
pub fn usize_in(min: u64, max: u64) -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::<usize>::new().range(min..=max)
}
