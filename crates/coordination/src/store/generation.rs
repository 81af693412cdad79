//! The store of a numbered generation beside a base store (`rfs run --follow`: each delta
//! is a migration of its own, with its own records): the same backend and place, another
//! namespace — the SQLite file `NAME.follow-TAG.EXT`, the PostgreSQL table or Redis prefix
//! `NAME_follow_TAG`, the cluster index `NAME_follow_TAG`; `memory://` stays as it is
//! (each opening is a new store of this process). The tag (letters, digits, `_`) names
//! the generation.

use super::{redact, take_query_param};
use crate::Error;

/// The URL of the store of generation `tag` beside the store `url` names.
pub fn generation_url(url: &str, tag: &str) -> Result<String, Error> {
    let bad = |reason: &str| Error::BadUrl {
        url: redact(url),
        reason: reason.to_string(),
    };
    if tag.is_empty() || !tag.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(bad("a generation tag is letters, digits and '_'"));
    }
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| bad("expected SCHEME://…"))?;
    let suffixed = |name: &str| format!("{name}_follow_{tag}");
    let with_param = |param: &str, default: &str| -> Result<String, Error> {
        let (rest, value) = take_query_param(url, param)?;
        let name = suffixed(value.as_deref().unwrap_or(default));
        super::check_name(url, &name)?;
        let sep = if rest.contains('?') { '&' } else { '?' };
        Ok(format!("{rest}{sep}{param}={name}"))
    };
    match scheme.to_ascii_lowercase().as_str() {
        "sqlite" => {
            let path = std::path::Path::new(rest);
            let name = path
                .file_name()
                .ok_or_else(|| bad("missing file name"))?
                .to_string_lossy();
            let file = match name.rsplit_once('.') {
                Some((stem, ext)) if !stem.is_empty() => format!("{stem}.follow-{tag}.{ext}"),
                _ => format!("{name}.follow-{tag}"),
            };
            Ok(format!(
                "{scheme}://{}",
                path.with_file_name(file).display()
            ))
        }
        "memory" => Ok(url.to_string()),
        "postgres" | "postgresql" => with_param("table", "rfs_coordination"),
        "redis" | "rediss" => with_param("prefix", "rfs"),
        "http" | "https" | "opensearch" => {
            let mut u = url::Url::parse(url).map_err(|e| bad(&e.to_string()))?;
            let mut segments: Vec<String> = u
                .path_segments()
                .map(|s| s.filter(|x| !x.is_empty()).map(str::to_string).collect())
                .unwrap_or_default();
            let index = suffixed(&segments.pop().unwrap_or_else(|| "rfs_coordination".into()))
                .to_ascii_lowercase();
            segments.push(index);
            u.set_path(&segments.join("/"));
            Ok(u.to_string())
        }
        _ => Err(bad(
            "unknown scheme; use sqlite://, postgres://, redis://, http:// or https://",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::generation_url;

    #[test]
    fn each_backend_gets_its_own_namespace() {
        let g = |u: &str| generation_url(u, "3").unwrap();
        assert_eq!(
            g("sqlite://./rfs-state.db"),
            "sqlite://./rfs-state.follow-3.db"
        );
        assert_eq!(g("sqlite:///abs/dir/st"), "sqlite:///abs/dir/st.follow-3");
        assert_eq!(
            g("postgres://u:pw@h:5432/db?sslmode=disable"),
            "postgres://u:pw@h:5432/db?sslmode=disable&table=rfs_coordination_follow_3"
        );
        assert_eq!(
            g("postgres://h/db?table=mig&pool=4"),
            "postgres://h/db?pool=4&table=mig_follow_3"
        );
        assert_eq!(
            g("redis://h:6379/0"),
            "redis://h:6379/0?prefix=rfs_follow_3"
        );
        assert_eq!(
            g("https://u:pw@h:9200/"),
            "https://u:pw@h:9200/rfs_coordination_follow_3"
        );
        assert_eq!(g("http://h:9200/base/st"), "http://h:9200/base/st_follow_3");
        assert_eq!(g("memory://"), "memory://");
        assert!(generation_url("ftp://x", "1").is_err());
        assert!(generation_url("sqlite://x.db", "1/..").is_err());
        assert_eq!(
            generation_url("https://h/Mig", "2_Ab").unwrap(),
            "https://h/mig_follow_2_ab",
            "index names are lower case"
        );
    }
}
