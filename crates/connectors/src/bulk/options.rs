//! The `_bulk` sink's typed options, parsed once from its parameters.

use crate::{ConnectError, Context, Params};

/// The parameters a `_bulk` sink takes: `path`, what the URL's path is — by default the
/// last segment names the index every document goes into, when there is one; `base`: the
/// whole path is the cluster's base path (a proxy prefix) and every document keeps its
/// index (`--target` of run, documents, redrive); `index`: the path must end with that
/// index, and the migration identity names the sink `BASE/INDEX` with the index decoded
/// (`table run`, as its stores recorded it).
pub(super) const PARAMS: &[&str] = &["path"];

/// What the URL's path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum PathIs {
    /// An index at its end, when there is one.
    #[default]
    MaybeIndex,
    /// A base path: no index.
    Base,
    /// An index at its end, required; the identity `BASE/INDEX`.
    Index,
}

/// `params` (any other key refused).
pub(super) fn parse(params: &Params, _ctx: &Context) -> Result<PathIs, ConnectError> {
    params.refuse_unknown("bulk", PARAMS)?;
    match params.get("path") {
        None => Ok(PathIs::MaybeIndex),
        Some("base") => Ok(PathIs::Base),
        Some("index") => Ok(PathIs::Index),
        Some(v) => Err(params.bad("path", v, "base or index")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_is_an_index_or_a_base() {
        let ctx = Context::default();
        assert_eq!(parse(&Params::new(), &ctx).unwrap(), PathIs::MaybeIndex);
        assert_eq!(
            parse(&Params::new().with("path", "base"), &ctx).unwrap(),
            PathIs::Base
        );
        let e = parse(&Params::new().with("path", "x"), &ctx)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "path x: base or index");
    }
}
