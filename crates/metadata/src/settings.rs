//! Index and template settings: flattened to dotted `index.*` keys, with the settings a
//! cluster manages itself (uuid, creation date, created version, provided name, resize
//! source, allocation ids, history uuid…) removed, write blocks lifted, and what the
//! target refuses dropped.

use serde_json::{Map, Value};

use super::plan::Notes;
use super::{Distribution, ProductVersion};

/// Settings owned by the source cluster: never copied.
const INTERNAL_EXACT: &[&str] = &[
    "index.uuid",
    "index.creation_date",
    "index.creation_date_string",
    "index.provided_name",
    "index.history.uuid",
    "index.history_uuid",
    "index.verified_before_close",
    "index.frozen",
    "index.search.throttled",
];

/// Prefixes of settings owned by the source cluster.
const INTERNAL_PREFIXES: &[&str] = &[
    "index.version.",
    "index.resize.source.",
    "index.shrink.source.",
    "index.routing.allocation.initial_recovery.",
    "index.store.snapshot.",
    "index.ccr.",
    "archived.",
];

/// Settings that no longer exist on modern targets (ES 6+, ES 7+).
const REMOVED: &[(&str, u32, &str)] = &[
    ("index.mapping.single_type", 6, "removed in Elasticsearch 6"),
    ("index.mapper.dynamic", 7, "removed in Elasticsearch 7"),
];

/// What the caller knows about the settings being transformed.
#[derive(Debug, Clone, Copy)]
pub struct SettingsContext {
    pub target: ProductVersion,
    /// Replace `index.number_of_replicas` (indices only).
    pub replicas: Option<u32>,
    /// The IndexMetadata's top-level `routing_num_shards` (indices only).
    pub routing_num_shards: Option<u64>,
    /// The target is OpenSearch Serverless: the settings it manages are dropped.
    pub serverless: bool,
}

/// Settings of shard layout and placement, which OpenSearch Serverless manages itself:
/// there they have no effect (opensearch-project/opensearch-go#374: "Settings for shards
/// and replicas have no effect in the AWS OpenSearch Serverless"; the index settings AWS
/// lets one set on a Serverless index are k-NN, its `ef_search` and the refresh interval:
/// CloudFormation `AWS::OpenSearchServerless::Index` IndexSettings).
const SERVERLESS_MANAGED: &[&str] = &[
    "index.number_of_shards",
    "index.number_of_replicas",
    "index.auto_expand_replicas",
    "index.number_of_routing_shards",
    "index.routing_partition_size",
];

/// Prefixes of the same.
const SERVERLESS_MANAGED_PREFIXES: &[&str] = &[
    "index.routing.allocation.",
    "index.routing.rebalance.",
    "index.unassigned.",
    "index.shard.",
];

/// Flattens nested settings objects into dotted keys; keys without the `index.` prefix
/// (templates may omit it) get it, as the cluster itself would.
pub fn flatten(settings: &Value) -> Map<String, Value> {
    let flat = snapshot::metadata::flatten_settings(settings);
    flat.into_iter()
        .map(|(k, v)| {
            if k.starts_with("index.") || k.starts_with("archived.") {
                (k, v)
            } else {
                (format!("index.{k}"), v)
            }
        })
        .collect()
}

fn as_u64(v: &Value) -> Option<u64> {
    match v {
        Value::String(s) => s.trim().parse().ok(),
        Value::Number(n) => n.as_u64(),
        _ => None,
    }
}

fn is_false(v: &Value) -> bool {
    matches!(v, Value::Bool(false)) || v.as_str() == Some("false")
}

/// Turns source settings into settings for the target, recording every change in `notes`.
pub fn transform(settings: &Value, ctx: &SettingsContext, notes: &mut Notes) -> Map<String, Value> {
    let flat = flatten(settings);
    let mut out = Map::new();
    let mut internal = Vec::new();
    let mut blocks = Vec::new();
    // A searchable-snapshot (mounted) index is created as an ordinary index holding the
    // documents of the snapshot it was mounted from: the settings of the mount go.
    let mounted = flat.get("index.store.type").and_then(Value::as_str)
        == Some(snapshot::metadata::MOUNTED_STORE_TYPE);
    let mut mount_settings = Vec::new();
    for (key, value) in flat {
        if mounted && snapshot::metadata::MOUNTED_INDEX_SETTINGS.contains(&key.as_str()) {
            mount_settings.push(format!(
                "{key}={}",
                value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_string)
            ));
            continue;
        }
        if INTERNAL_EXACT.contains(&key.as_str())
            || INTERNAL_PREFIXES.iter().any(|p| key.starts_with(p))
        {
            internal.push(key);
            continue;
        }
        if key.starts_with("index.blocks.") {
            blocks.push(key);
            continue;
        }
        if let Some((_, major, why)) = REMOVED.iter().find(|(k, _, _)| *k == key) {
            if ctx.target.distribution == Distribution::OpenSearch || ctx.target.major >= *major {
                notes.change(format!("setting {key} dropped ({why})"));
                continue;
            }
        }
        match ctx.target.distribution {
            Distribution::OpenSearch
                if key.starts_with("index.lifecycle.") || key.starts_with("index.xpack.") =>
            {
                notes.warn(format!(
                    "setting {key} dropped (Elasticsearch X-Pack feature unknown to OpenSearch)"
                ));
                continue;
            }
            Distribution::Elasticsearch
                if key.starts_with("index.plugins.") || key.starts_with("index.opendistro.") =>
            {
                notes.warn(format!(
                    "setting {key} dropped (OpenSearch plugin setting unknown to Elasticsearch)"
                ));
                continue;
            }
            _ => {}
        }
        if ctx.target.rejects_soft_deletes_disabled() {
            if key == "index.soft_deletes.enabled" && is_false(&value) {
                notes.change(format!(
                    "setting {key}=false dropped ({} always uses soft deletes)",
                    ctx.target
                ));
                continue;
            }
            if key.starts_with("index.translog.retention.") {
                notes.change(format!(
                    "setting {key} dropped (translog retention is replaced by soft deletes on {})",
                    ctx.target
                ));
                continue;
            }
        }
        out.insert(key, value);
    }
    if mounted {
        notes.change(format!(
            "searchable-snapshot (mounted) index: created as an ordinary index holding the documents of the snapshot it was mounted from; settings of the mount removed: {}",
            mount_settings.join(", ")
        ));
    }
    if !internal.is_empty() {
        notes.change(format!(
            "internal settings removed: {}",
            internal.join(", ")
        ));
    }
    if !blocks.is_empty() {
        notes.warn(format!(
            "index blocks not copied, so documents can be written: {} (re-apply them after the migration)",
            blocks.join(", ")
        ));
    }
    drop_standard_filter(&mut out, ctx.target, notes);
    if let Some(n) = ctx.replicas {
        let new = Value::String(n.to_string());
        let old = out.insert("index.number_of_replicas".into(), new.clone());
        if old.as_ref() != Some(&new) {
            let was = old
                .map(|o| {
                    o.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| o.to_string())
                })
                .unwrap_or_else(|| "unset".into());
            notes.change(format!("index.number_of_replicas {was} → {n} (override)"));
        }
    }
    if ctx.serverless {
        let managed: Vec<String> = out
            .keys()
            .filter(|k| {
                SERVERLESS_MANAGED.contains(&k.as_str())
                    || SERVERLESS_MANAGED_PREFIXES.iter().any(|p| k.starts_with(p))
            })
            .cloned()
            .collect();
        for k in &managed {
            out.remove(k);
        }
        if !managed.is_empty() {
            notes.change(format!(
                "settings dropped, OpenSearch Serverless manages shards, replicas and their placement itself: {}",
                managed.join(", ")
            ));
        }
        if let Some(rns) = ctx.routing_num_shards {
            notes.warn(format!(
                "routing_num_shards {rns} not copied: OpenSearch Serverless manages shards itself"
            ));
        }
    } else if let Some(rns) = ctx.routing_num_shards {
        routing_shards(&mut out, rns, ctx, notes);
    }
    out
}

/// The `standard` token filter did nothing since ES 5 and is gone from ES 7 and OpenSearch:
/// removed from analyzers' filter lists.
fn drop_standard_filter(out: &mut Map<String, Value>, target: ProductVersion, notes: &mut Notes) {
    if target.distribution == Distribution::Elasticsearch && target.major < 7 {
        return;
    }
    for (key, value) in out.iter_mut() {
        if !(key.starts_with("index.analysis.analyzer.") && key.ends_with(".filter")) {
            continue;
        }
        if let Value::Array(filters) = value {
            let before = filters.len();
            filters.retain(|f| f != "standard");
            if filters.len() != before {
                notes.change(format!(
                    "{key}: token filter standard removed (it no longer exists on {target})"
                ));
            }
        }
    }
}

/// Copies `routing_num_shards` into `index.number_of_routing_shards` so documents with
/// custom routing land in the same shard numbers as in the source, where the target
/// accepts it.
fn routing_shards(
    out: &mut Map<String, Value>,
    rns: u64,
    ctx: &SettingsContext,
    notes: &mut Notes,
) {
    const KEY: &str = "index.number_of_routing_shards";
    if out.contains_key(KEY) {
        return;
    }
    if !ctx.target.supports_routing_shards() {
        notes.warn(format!(
            "routing_num_shards {rns} not copied: {} has no {KEY}",
            ctx.target
        ));
        return;
    }
    let Some(shards) = out.get("index.number_of_shards").and_then(as_u64) else {
        notes.warn(format!(
            "routing_num_shards {rns} not copied: index.number_of_shards is missing"
        ));
        return;
    };
    if shards == 0
        || rns < shards
        || !rns.is_multiple_of(shards)
        || !(rns / shards).is_power_of_two()
    {
        notes.warn(format!(
            "routing_num_shards {rns} not copied: not a power-of-two multiple of {shards} shards"
        ));
        return;
    }
    out.insert(KEY.into(), Value::String(rns.to_string()));
    notes.change(format!("routing_num_shards {rns} → {KEY}"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx(target: ProductVersion) -> SettingsContext {
        SettingsContext {
            target,
            replicas: None,
            routing_num_shards: None,
            serverless: false,
        }
    }

    #[test]
    fn flattens_nested_template_settings() {
        let f = flatten(
            &json!({"index": {"number_of_shards": "1", "analysis": {"analyzer": {"a": {"type": "custom"}}}}, "number_of_replicas": "2"}),
        );
        assert_eq!(f["index.number_of_shards"], "1");
        assert_eq!(f["index.analysis.analyzer.a.type"], "custom");
        assert_eq!(f["index.number_of_replicas"], "2");
        assert_eq!(f.len(), 3);
    }

    #[test]
    fn strips_internal_settings_and_blocks() {
        let src = json!({
            "index.number_of_shards": "1",
            "index.number_of_replicas": "1",
            "index.uuid": "abc",
            "index.creation_date": "1700000000000",
            "index.version.created": "7100299",
            "index.version.upgraded": "7100299",
            "index.provided_name": "posts",
            "index.resize.source.name": "big",
            "index.resize.source.uuid": "u",
            "index.routing.allocation.initial_recovery._id": "n1",
            "index.history.uuid": "h",
            "index.blocks.write": "true",
            "index.refresh_interval": "5s",
            "archived.index.foo": "x"
        });
        let mut notes = Notes::default();
        let out = transform(&src, &ctx(ProductVersion::os(2, 11)), &mut notes);
        assert_eq!(
            Value::Object(out),
            json!({"index.number_of_shards": "1", "index.number_of_replicas": "1", "index.refresh_interval": "5s"})
        );
        assert!(notes
            .transformations
            .iter()
            .any(|t| t.contains("index.uuid")));
        assert!(notes
            .warnings
            .iter()
            .any(|w| w.contains("index.blocks.write")));
    }

    #[test]
    fn soft_deletes_disabled_dropped_only_where_rejected() {
        let src =
            json!({"index.soft_deletes.enabled": "false", "index.translog.retention.size": "1gb"});
        let mut notes = Notes::default();
        assert!(transform(&src, &ctx(ProductVersion::os(2, 0)), &mut notes).is_empty());
        assert_eq!(notes.transformations.len(), 2);
        let mut notes = Notes::default();
        let out = transform(&src, &ctx(ProductVersion::es(7, 10)), &mut notes);
        assert_eq!(out.len(), 2);
        let enabled = json!({"index.soft_deletes.enabled": "true"});
        assert_eq!(
            transform(
                &enabled,
                &ctx(ProductVersion::os(3, 0)),
                &mut Notes::default()
            )
            .len(),
            1
        );
    }

    #[test]
    fn replicas_override_and_routing_shards() {
        let src = json!({"index.number_of_shards": "2", "index.number_of_replicas": "1"});
        let c = SettingsContext {
            target: ProductVersion::os(3, 0),
            replicas: Some(0),
            routing_num_shards: Some(1024),
            serverless: false,
        };
        let mut notes = Notes::default();
        let out = transform(&src, &c, &mut notes);
        assert_eq!(out["index.number_of_replicas"], "0");
        assert_eq!(out["index.number_of_routing_shards"], "1024");
        assert_eq!(notes.transformations.len(), 2);

        let bad = SettingsContext {
            routing_num_shards: Some(12),
            replicas: None,
            ..c
        };
        let mut notes = Notes::default();
        let out = transform(&json!({"index.number_of_shards": "5"}), &bad, &mut notes);
        assert!(!out.contains_key("index.number_of_routing_shards"));
        assert_eq!(notes.warnings.len(), 1);

        let old = SettingsContext {
            target: ProductVersion::es(6, 0),
            ..c
        };
        let out = transform(&src, &old, &mut Notes::default());
        assert!(!out.contains_key("index.number_of_routing_shards"));
    }

    #[test]
    fn serverless_drops_what_it_manages() {
        let src = json!({
            "index.number_of_shards": "5",
            "index.number_of_replicas": "1",
            "index.routing.allocation.include._tier_preference": "data_hot",
            "index.refresh_interval": "5s",
            "index.analysis.analyzer.a.tokenizer": "whitespace"
        });
        let c = SettingsContext {
            serverless: true,
            replicas: Some(2),
            routing_num_shards: Some(640),
            ..ctx(ProductVersion::os(2, 0))
        };
        let mut notes = Notes::default();
        let out = transform(&src, &c, &mut notes);
        let mut kept: Vec<&str> = out.keys().map(String::as_str).collect();
        kept.sort_unstable();
        assert_eq!(
            kept,
            [
                "index.analysis.analyzer.a.tokenizer",
                "index.refresh_interval"
            ]
        );
        assert!(
            notes
                .transformations
                .iter()
                .any(|t| t.contains("OpenSearch Serverless")
                    && t.contains("index.number_of_shards")
                    && t.contains("index.routing.allocation.include._tier_preference")),
            "{:?}",
            notes.transformations
        );
        assert!(notes
            .warnings
            .iter()
            .any(|w| w.contains("routing_num_shards 640")));
    }

    #[test]
    fn standard_token_filter_removed() {
        let src = json!({"index.analysis.analyzer.a.filter": ["standard", "lowercase"], "index.analysis.analyzer.a.tokenizer": "standard"});
        let mut notes = Notes::default();
        let out = transform(&src, &ctx(ProductVersion::os(2, 0)), &mut notes);
        assert_eq!(
            out["index.analysis.analyzer.a.filter"],
            json!(["lowercase"])
        );
        assert_eq!(out["index.analysis.analyzer.a.tokenizer"], "standard");
        assert_eq!(notes.transformations.len(), 1);
        let out = transform(&src, &ctx(ProductVersion::es(6, 8)), &mut Notes::default());
        assert_eq!(
            out["index.analysis.analyzer.a.filter"],
            json!(["standard", "lowercase"])
        );
    }

    #[test]
    fn vendor_settings_dropped_across_distributions() {
        let src = json!({"index.lifecycle.name": "p", "index.mapper.dynamic": "false", "index.mapping.single_type": "true"});
        let mut notes = Notes::default();
        assert!(transform(&src, &ctx(ProductVersion::os(1, 3)), &mut notes).is_empty());
        let es6 = transform(&src, &ctx(ProductVersion::es(6, 8)), &mut Notes::default());
        assert!(es6.contains_key("index.lifecycle.name"));
        assert!(es6.contains_key("index.mapper.dynamic"));
        assert!(!es6.contains_key("index.mapping.single_type"));
    }

    /// The settings Elasticsearch's mount action adds (TransportMountSearchableSnapshotAction
    /// `buildIndexSettings`) are removed with a note: the index is created as an ordinary one.
    #[test]
    fn mounted_index_settings_are_removed_with_a_note() {
        let src = json!({
            "index.number_of_shards": "1",
            "index.refresh_interval": "5s",
            "index.store.type": "snapshot",
            "index.store.snapshot.repository_name": "found-snapshots",
            "index.store.snapshot.repository_uuid": "r-uuid",
            "index.store.snapshot.snapshot_name": "daily-1",
            "index.store.snapshot.snapshot_uuid": "s-uuid",
            "index.store.snapshot.index_name": "logs-1",
            "index.store.snapshot.index_uuid": "i-id",
            "index.store.snapshot.partial": "true",
            "index.recovery.type": "snapshot_prewarm",
            "index.allocation.existing_shards_allocator": "searchable_snapshot_allocator",
            "index.routing.allocation.disk.watermark.ignore": "true",
            "index.shard_limit.group": "frozen",
            "index.routing.allocation.include._tier_preference": "data_frozen",
            "index.blocks.write": "true"
        });
        for target in [ProductVersion::os(2, 19), ProductVersion::es(8, 15)] {
            let mut notes = Notes::default();
            let out = transform(&src, &ctx(target), &mut notes);
            assert_eq!(
                Value::Object(out),
                json!({"index.number_of_shards": "1", "index.refresh_interval": "5s"}),
                "{target}"
            );
            let note = notes
                .transformations
                .iter()
                .find(|t| t.contains("searchable-snapshot (mounted) index"))
                .unwrap_or_else(|| panic!("{target}: {notes:?}"));
            assert!(note.contains("index.store.type=snapshot"), "{note}");
            assert!(note.contains("_tier_preference=data_frozen"), "{note}");
        }
        // An ordinary index keeps its store type.
        let mut notes = Notes::default();
        let out = transform(
            &json!({"index.store.type": "niofs"}),
            &ctx(ProductVersion::os(2, 19)),
            &mut notes,
        );
        assert_eq!(out["index.store.type"], "niofs");
    }
}
