//! `rfs inspect`: what a snapshot repository holds — snapshots, indices, shards, document
//! counts, Lucene versions and stored-fields codecs, templates by kind; for each snapshot
//! the layout family (Elasticsearch 1.x, 2.x, 5+), for each index what of it is not
//! supported (doc values in formats the reader lacks, legacy mapping fields the targets do
//! not have). What cannot be read or migrated is an ERROR line (and exit code 1 at the
//! end, after the whole report); oddities that do not stop reading (a broken
//! `index.latest`) are WARNING lines.

use std::collections::BTreeSet;

use anyhow::Context;
use serde_json::{json, Value};
use snapshot::{Repository, ShardReader, TemplateKind};

use crate::args::RepositoryArgs;
use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub repo: RepositoryArgs,
    /// Only this snapshot (default: every snapshot in the repository).
    #[arg(long, env = "RFS_SNAPSHOT")]
    pub snapshot: Option<String>,
    /// One JSON document on stdout instead of text.
    #[arg(long, env = "RFS_JSON")]
    pub json: bool,
    #[command(flatten)]
    pub rebuild: crate::args::RebuildArgs,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let repo = args.repo.open()?;
    let mut report = inspect(&repo, args.snapshot.as_deref())?;
    let mode = match args.rebuild.rebuild_source {
        crate::args::RebuildSource::Auto => "auto",
        crate::args::RebuildSource::Off => "off",
    };
    if let Some(snaps) = report["snapshots"].as_array_mut() {
        for s in snaps {
            if let Some(indices) = s["indices"].as_array_mut() {
                for i in indices {
                    if let Some(r) = i.get_mut("source_rebuild").and_then(Value::as_object_mut) {
                        r.insert("mode".into(), json!(mode));
                    }
                }
            }
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_text(&report);
    }
    let errors = report["errors"].as_u64().unwrap_or(0);
    if errors > 0 {
        crate::say!(
            "inspect: {errors} part(s) of the repository could not be read (see the ERROR lines)"
        );
        return Ok(exit::FATAL);
    }
    Ok(exit::OK)
}

/// Parts that could not be read: templates, indices and shards with an `error`, and
/// unsupported parts that keep documents from being migrated.
fn count_errors(snapshots: &[Value]) -> u64 {
    let mut n = 0;
    for s in snapshots {
        n += u64::from(s["templates"].get("error").is_some());
        for i in s["indices"].as_array().into_iter().flatten() {
            n += u64::from(i.get("error").is_some());
            for u in i["unsupported"].as_array().into_iter().flatten() {
                n += u64::from(u["blocks"] == true);
            }
            for v in i["vector_fields"].as_array().into_iter().flatten() {
                n += u64::from(v["read_from"] == "unreadable");
            }
            for sh in i["shards"].as_array().into_iter().flatten() {
                n += u64::from(sh.get("error").is_some());
            }
        }
    }
    n
}

fn names(map: &std::collections::BTreeMap<String, Value>) -> Vec<String> {
    map.keys().cloned().collect()
}

/// The whole report as JSON (the `--json` output).
pub fn inspect(repo: &Repository, only: Option<&str>) -> anyhow::Result<Value> {
    let data = repo.data();
    let mut snapshots = Vec::new();
    let entries: Vec<_> = match only {
        Some(name) => vec![data
            .snapshot(name)
            .ok_or_else(|| snapshot::Error::NoSuchSnapshot(name.to_string()))?
            .clone()],
        None => data.snapshots.clone(),
    };
    for entry in entries {
        let snap = repo
            .snapshot(&entry.name)
            .with_context(|| format!("snapshot {}", entry.name))?;
        let info = snap.info();
        let global = snap.global_metadata();
        let templates = match &global {
            Ok(g) => json!({
                "legacy": names(g.templates(TemplateKind::Legacy)),
                "component": names(g.templates(TemplateKind::Component)),
                "index": names(g.templates(TemplateKind::Index)),
            }),
            Err(e) => json!({"error": redact::chain(e)}),
        };
        let mut indices = Vec::new();
        for name in snap.index_names() {
            let mut i = inspect_index(&snap, &name);
            // Failure-store indices (Elasticsearch 8.15+ `.fs-…`) are listed with the data
            // stream whose failed documents they hold.
            if let Some(ds) = global.as_ref().ok().and_then(|g| g.failure_store_of(&name)) {
                i["failure_store_of"] = json!(ds.name);
            }
            indices.push(i);
        }
        snapshots.push(json!({
            "name": snap.name(),
            "uuid": snap.uuid(),
            "state": snap.state().map(|s| s.as_str()),
            "version": snap.index_version().map(version_text)
                .or_else(|| snap.version().map(|v| v.number())),
            "index_version": snap.index_version().map(|v| v.id()),
            "distribution": snap.version().map(|v| v.distribution),
            "layout": snap.layout().family(),
            "start_time": info.start_time,
            "end_time": info.end_time,
            "include_global_state": info.include_global_state,
            "total_shards": info.total_shards,
            "successful_shards": info.successful_shards,
            "failures": info.failures,
            "templates": templates,
            "indices": indices,
        }));
    }
    Ok(json!({
        "repository": redact::url(&repo.location()),
        "generation": data.generation,
        "min_version": data.min_version,
        "warnings": repo.warnings(),
        "errors": count_errors(&snapshots),
        "snapshots": snapshots,
    }))
}

/// A version id as a release number (`7.10.2`) where it encodes one; an Elasticsearch
/// 8.11+ index version as its release line and id (`8.15 (index version 8512000)`).
fn version_text(v: snapshot::IndexVersion) -> String {
    match v.release() {
        Some(r) => r.number(),
        None => v.to_string(),
    }
}

fn inspect_index(snap: &snapshot::Snapshot, name: &str) -> Value {
    let index = match snap.index(name) {
        Ok(i) => i,
        Err(e) => return json!({"name": name, "error": redact::chain(&e)}),
    };
    let md = index.metadata();
    let mut aliases: Vec<&String> = md.aliases.keys().collect();
    aliases.sort();
    let mut mapping_types: Vec<&str> = md.mapping_types();
    mapping_types.sort();
    let (mut live, mut deleted, mut bytes) = (0u64, 0u64, 0u64);
    let mut versions = BTreeSet::new();
    let mut stored = BTreeSet::new();
    let mut source_present = true;
    // Doc values the reader cannot decode: the first message (it names the file and
    // format), the segments and the fields concerned.
    let mut dv_unsupported: Option<String> = None;
    let mut dv_segments = 0u64;
    let mut dv_fields = BTreeSet::new();
    let mut shards = Vec::new();
    let mut vector_segments: Vec<snapshot::vectors::VectorFieldSummary> = Vec::new();
    for s in 0..index.number_of_shards() {
        if let Some(reason) = index.shard_failure(s) {
            shards.push(json!({"shard": s, "failed": reason}));
            continue;
        }
        let shard = match index.open_shard(s) {
            Ok(sh) => sh,
            Err(e) => {
                shards.push(json!({"shard": s, "error": redact::chain(&e)}));
                continue;
            }
        };
        let size = shard.files().size_in_bytes();
        bytes += size;
        match ShardReader::open(&shard) {
            Ok(r) => {
                let segs = r.segments();
                live += r.live_docs();
                deleted += r.max_doc() - r.live_docs();
                for seg in &segs {
                    versions.insert(seg.lucene_version.clone());
                    stored.insert(format!(
                        "{} {}",
                        seg.stored_fields_format, seg.stored_fields_mode
                    ));
                    if seg.max_doc > 0 && !seg.has_source_field {
                        source_present = false;
                    }
                    if let Some(why) = &seg.doc_values_unsupported {
                        dv_unsupported.get_or_insert_with(|| why.clone());
                        dv_segments += 1;
                        dv_fields.extend(seg.doc_values_fields.iter().cloned());
                    }
                    vector_segments.extend(seg.vector_fields.iter().cloned());
                }
                shards.push(json!({
                    "shard": s,
                    "max_doc": r.max_doc(),
                    "live_docs": r.live_docs(),
                    "deleted_docs": r.max_doc() - r.live_docs(),
                    "size_in_bytes": size,
                    "files": shard.files().files.len(),
                    "segments": segs,
                }));
            }
            Err(e) => {
                shards.push(json!({"shard": s, "size_in_bytes": size, "error": redact::chain(&e)}))
            }
        }
    }
    if md.source_not_stored() {
        source_present = false;
    }
    let mut unsupported = Vec::new();
    if let Some(why) = dv_unsupported {
        // Documents need doc values only to rebuild a missing _source.
        let blocks = !source_present;
        unsupported.push(json!({
            "what": format!(
                "doc values of {dv_segments} segment(s) (fields {}) cannot be read: {why}",
                dv_fields.into_iter().collect::<Vec<_>>().join(", ")
            ),
            "blocks": blocks,
            "consequence": if blocks {
                "_source is missing: these documents cannot be rebuilt and would not be migrated"
            } else {
                "not needed: every document has its _source"
            },
        }));
    }
    unsupported.extend(legacy_mapping_fields(md));
    // Where a rebuilt _source would come from, and what it cannot hold.
    let source_rebuild = (!source_present).then(|| {
        let plan = md.source_plan();
        json!({
            "mode": "auto",
            "fields": plan.fields.iter().map(|f| f.path.clone()).collect::<Vec<_>>(),
            "lost": plan.lost,
        })
    });
    json!({
        "name": name,
        "id": index.id(),
        "number_of_shards": index.number_of_shards(),
        "created_version": md.created_index_version().map(version_text),
        "created_index_version": md.created_index_version().map(|v| v.id()),
        "mounted_from": index.mounted().map(|m| m.to_string()),
        "soft_deletes": md.soft_deletes_enabled(),
        "mapping_types": mapping_types,
        "aliases": aliases,
        "live_docs": live,
        "deleted_docs": deleted,
        "size_in_bytes": bytes,
        "lucene_versions": versions,
        "stored_fields": stored,
        "source_present": source_present,
        "source_rebuild": source_rebuild,
        "vector_fields": super::inspect_vectors::vector_fields(name, md, &vector_segments),
        "unsupported": unsupported,
        "shards": shards,
    })
}

/// The meta fields of Elasticsearch 1.x/2.x mappings that no target has: the mapping
/// conversion drops them (docs/conversions.md) and their stored values are not sent.
fn legacy_mapping_fields(md: &snapshot::IndexMetadata) -> Vec<Value> {
    const DROPPED: [(&str, &str); 5] = [
        ("_all", "the catch-all field (removed in Elasticsearch 6/7; copy_to replaces it): dropped from the mapping"),
        ("_timestamp", "a stored field outside _source (removed in Elasticsearch 5): its values are not sent"),
        ("_ttl", "per-document expiry (removed in Elasticsearch 5): its values are not sent, documents do not expire"),
        ("_parent", "parent/child by type (removed in Elasticsearch 6; join fields replace it): the relation is not kept, routing is"),
        ("_size", "the mapper-size plugin's field: dropped from the mapping"),
    ];
    let mut out = Vec::new();
    for (field, what) in DROPPED {
        let mut types: Vec<&str> = md
            .mappings
            .iter()
            .filter(|m| m.mapping.get(field).is_some_and(|v| !disabled(v)))
            .map(|m| m.doc_type.as_str())
            .collect();
        types.sort();
        if !types.is_empty() {
            out.push(json!({
                "what": format!("{field} in mapping type(s) {}: {what}", types.join(", ")),
                "blocks": false,
            }));
        }
    }
    out
}

/// `{"enabled": false}`: a meta field switched off.
fn disabled(v: &Value) -> bool {
    v.get("enabled")
        .is_some_and(|e| *e == json!(false) || *e == json!("false"))
}

fn print_text(report: &Value) {
    println!(
        "repository {} (generation {})",
        report["repository"].as_str().unwrap_or(""),
        report["generation"]
    );
    let empty = Vec::new();
    for w in report["warnings"].as_array().unwrap_or(&empty) {
        println!("WARNING: {}", w.as_str().unwrap_or(""));
    }
    for s in report["snapshots"].as_array().unwrap_or(&empty) {
        println!(
            "\nsnapshot {}  uuid {}  state {}  version {}{}  ({})",
            s["name"].as_str().unwrap_or(""),
            s["uuid"].as_str().unwrap_or(""),
            s["state"].as_str().unwrap_or("?"),
            s["version"].as_str().unwrap_or("?"),
            if s["distribution"] == "opensearch" {
                " (OpenSearch)"
            } else {
                ""
            },
            s["layout"].as_str().unwrap_or("?"),
        );
        for f in s["failures"].as_array().unwrap_or(&empty) {
            println!(
                "  FAILED shard {} of {}: {}",
                f["shard_id"],
                f["index"].as_str().unwrap_or("?"),
                f["reason"].as_str().unwrap_or("")
            );
        }
        let t = &s["templates"];
        if let Some(e) = t["error"].as_str() {
            println!("  templates: ERROR {e}");
        }
        for kind in ["legacy", "component", "index"] {
            let list: Vec<&str> = t[kind]
                .as_array()
                .unwrap_or(&empty)
                .iter()
                .filter_map(Value::as_str)
                .collect();
            println!("  {kind} templates ({}): {}", list.len(), list.join(", "));
        }
        for i in s["indices"].as_array().unwrap_or(&empty) {
            if let Some(e) = i["error"].as_str() {
                println!("  index {}: ERROR {e}", i["name"].as_str().unwrap_or(""));
                continue;
            }
            let join = |v: &Value| {
                v.as_array()
                    .unwrap_or(&empty)
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            println!(
                "  index {}  shards {}  live {}  deleted {}  bytes {}  created {}",
                i["name"].as_str().unwrap_or(""),
                i["number_of_shards"],
                i["live_docs"],
                i["deleted_docs"],
                i["size_in_bytes"],
                i["created_version"].as_str().unwrap_or("?"),
            );
            println!(
                "    types [{}]  aliases [{}]  _source {}  lucene [{}]  stored fields [{}]",
                join(&i["mapping_types"]),
                join(&i["aliases"]),
                if i["source_present"] == true {
                    "present"
                } else {
                    "MISSING"
                },
                join(&i["lucene_versions"]),
                join(&i["stored_fields"]),
            );
            if let Some(ds) = i["failure_store_of"].as_str() {
                println!(
                    "    failure store of data stream {ds}: documents the stream refused at ingestion; left out unless listed (--index), then migrated as an ordinary index of this name, not into the data stream"
                );
            }
            if let Some(m) = i["mounted_from"].as_str() {
                println!(
                    "    searchable-snapshot (mounted) index: its documents are read from {m}"
                );
            }
            let r = &i["source_rebuild"];
            if r.is_object() {
                println!(
                    "    _source rebuild {}: {} fields from doc values / stored fields",
                    r["mode"].as_str().unwrap_or("?"),
                    r["fields"].as_array().map_or(0, Vec::len),
                );
                for l in r["lost"].as_array().unwrap_or(&empty) {
                    println!(
                        "      cannot rebuild {}: {}",
                        l["path"].as_str().unwrap_or(""),
                        l["reason"].as_str().unwrap_or("")
                    );
                }
            }
            super::inspect_vectors::print(i);
            for u in i["unsupported"].as_array().unwrap_or(&empty) {
                let what = u["what"].as_str().unwrap_or("");
                match u["consequence"].as_str() {
                    Some(c) if u["blocks"] == true => {
                        println!("    ERROR unsupported: {what}; {c}")
                    }
                    Some(c) => println!("    unsupported: {what}; {c}"),
                    None => println!("    unsupported: {what}"),
                }
            }
            for sh in i["shards"].as_array().unwrap_or(&empty) {
                if let Some(e) = sh["error"].as_str() {
                    println!("    shard {}: ERROR {e}", sh["shard"]);
                } else if let Some(e) = sh["failed"].as_str() {
                    println!("    shard {}: FAILED in the snapshot: {e}", sh["shard"]);
                }
            }
        }
    }
}
