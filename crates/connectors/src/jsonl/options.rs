//! The JSON-lines source's typed options, parsed once from its parameters.

use super::source::JsonlOptions;
use crate::{ConnectError, Context, Params};

/// The parameters a JSON-lines source takes: `item-bytes`, bytes of a file per work item
/// (4096 to 2^40; default 64 MiB), used when the plan is made.
pub(super) const PARAMS: &[&str] = &["item-bytes"];

/// `params` (any other key refused) over the defaults.
pub(super) fn parse(params: &Params, _ctx: &Context) -> Result<JsonlOptions, ConnectError> {
    params.refuse_unknown("jsonl", PARAMS)?;
    let chunk_bytes =
        match params.parsed::<u64>("item-bytes", "a number of bytes from 4096 to 2^40")? {
            Some(n) if !(4096..=1 << 40).contains(&n) => {
                return Err(params.bad(
                    "item-bytes",
                    &n.to_string(),
                    "a number of bytes from 4096 to 2^40",
                ))
            }
            Some(n) => n,
            None => JsonlOptions::default().chunk_bytes,
        };
    Ok(JsonlOptions {
        chunk_bytes,
        ..JsonlOptions::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_bytes_are_checked() {
        let ctx = Context::default();
        assert_eq!(parse(&Params::new(), &ctx).unwrap().chunk_bytes, 64 << 20);
        let p = Params::new().with("item-bytes", "8192");
        assert_eq!(parse(&p, &ctx).unwrap().chunk_bytes, 8192);
        let e = parse(&Params::new().with("item-bytes", "12"), &ctx)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "item-bytes 12: a number of bytes from 4096 to 2^40");
    }
}
