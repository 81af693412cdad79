//! The live-cluster source's typed options, parsed once from its parameters.

use super::source::ClusterSourceOptions;
use crate::{ConnectError, Context, Params};

/// The parameters a live-cluster source takes: `slices`, work items per index (1–1024).
pub(super) const PARAMS: &[&str] = &["slices"];

/// `params` (any other key refused) over the defaults.
pub(super) fn parse(params: &Params, _ctx: &Context) -> Result<ClusterSourceOptions, ConnectError> {
    params.refuse_unknown("cluster", PARAMS)?;
    let mut o = ClusterSourceOptions::default();
    if let Some(n) = params.parsed::<u32>("slices", "a number from 1 to 1024")? {
        if !(1..=1024).contains(&n) {
            return Err(params.bad("slices", &n.to_string(), "a number from 1 to 1024"));
        }
        o.slices = n;
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_are_checked() {
        let ctx = Context::default();
        assert_eq!(parse(&Params::new(), &ctx).unwrap().slices, 4);
        assert_eq!(
            parse(&Params::new().with("slices", "1"), &ctx)
                .unwrap()
                .slices,
            1
        );
        let e = parse(&Params::new().with("slices", "0"), &ctx)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "slices 0: a number from 1 to 1024");
    }
}
