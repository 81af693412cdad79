//! Metadata planning over the real fixture repositories (no target needed): every
//! template and index of each snapshot is accounted for, user objects are planned for
//! creation with bodies a modern target accepts, system templates are excluded.

use metadata::{
    plan, Action, MetadataItem, MetadataKind, MultiTypeMode, Options, ProductVersion,
    SourceMetadata,
};
use serde_json::Value;

fn fixtures() -> Option<std::path::PathBuf> {
    testkit::fixtures::require_fixtures("metadata_plan").map(|p| p.join("snapshots"))
}

fn load(dir: &std::path::Path, repo: &str) -> (Value, Vec<(String, SourceMetadata)>) {
    let expected: Value =
        serde_json::from_slice(&std::fs::read(dir.join(format!("{repo}.expected.json"))).unwrap())
            .unwrap();
    let store =
        snapshot::open_blob_store(dir.join(repo).to_str().unwrap(), &Default::default()).unwrap();
    let r = snapshot::Repository::open(store).unwrap();
    let mut out = Vec::new();
    for name in expected["snapshots"].as_object().unwrap().keys() {
        let snap = r.snapshot(name).unwrap();
        out.push((name.clone(), SourceMetadata::from_snapshot(&snap).unwrap()));
    }
    (expected, out)
}

fn names(v: &Value) -> Vec<String> {
    let mut n: Vec<String> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    n.sort();
    n
}

fn of_kind(items: &[MetadataItem], kind: MetadataKind) -> Vec<String> {
    let mut n: Vec<String> = items
        .iter()
        .filter(|i| i.kind == kind)
        .map(|i| i.name.clone())
        .collect();
    n.sort();
    n
}

const REPOS: &[&str] = &[
    "ES_5_6_Updates_Deletes",
    "ES_6_8_Single",
    "ES_7_10_BWC_Check",
    "ES_7_10_Single",
    "ES_7_10_Updates_Deletes_w_Soft",
];

#[test]
fn every_fixture_is_planned_completely() {
    let Some(dir) = fixtures() else { return };
    for repo in REPOS {
        let (expected, snaps) = load(&dir, repo);
        for (snap, source) in snaps {
            let exp = &expected["snapshots"][&snap];
            for target in [
                ProductVersion::os(3, 8),
                ProductVersion::os(1, 3),
                ProductVersion::es(7, 10),
                ProductVersion::es(6, 8),
                ProductVersion::es(8, 15),
            ] {
                let items = plan(&source, target, &Options::default());
                let ctx = format!("{repo}/{snap} → {target}");
                assert_eq!(
                    of_kind(&items, MetadataKind::LegacyTemplate),
                    names(&exp["templates"]["legacy"]),
                    "{ctx}"
                );
                assert_eq!(
                    of_kind(&items, MetadataKind::ComponentTemplate),
                    names(&exp["templates"]["component"]),
                    "{ctx}"
                );
                assert_eq!(
                    of_kind(&items, MetadataKind::IndexTemplate),
                    names(&exp["templates"]["index"]),
                    "{ctx}"
                );
                let mut indices: Vec<String> = exp["indices"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .cloned()
                    .collect();
                indices.sort();
                assert_eq!(of_kind(&items, MetadataKind::Index), indices, "{ctx}");
                for i in &items {
                    assert_ne!(i.action, Action::Error, "{ctx}: {i:#?}");
                    if i.action == Action::Create {
                        let body = i.body.as_ref().unwrap();
                        let text = body.to_string();
                        for bad in [
                            "\"string\"",
                            "\"_all\"",
                            "\"include_in_all\"",
                            "index.uuid",
                            "index.version.created",
                            "index.creation_date",
                            "index.provided_name",
                        ] {
                            assert!(
                                !text.contains(bad),
                                "{ctx}: {} body contains {bad}: {text}",
                                i.name
                            );
                        }
                    }
                }
                for (name, e) in exp["indices"].as_object().unwrap() {
                    let i = items
                        .iter()
                        .find(|i| i.kind == MetadataKind::Index && &i.name == name)
                        .unwrap();
                    assert_eq!(i.action, Action::Create, "{ctx}: {i:#?}");
                    let body = i.body.as_ref().unwrap();
                    for (k, v) in e["settings_subset"].as_object().unwrap() {
                        assert_eq!(&body["settings"][k], v, "{ctx}: {name} {k}");
                    }
                    let mut aliases: Vec<String> = body
                        .get("aliases")
                        .and_then(Value::as_object)
                        .map(|a| a.keys().cloned().collect())
                        .unwrap_or_default();
                    aliases.sort();
                    assert_eq!(aliases, names(&e["aliases"]), "{ctx}: {name}");
                    let types = e["mapping_types"].as_array().unwrap();
                    match (types.len(), body.get("mappings")) {
                        (0, m) => assert!(m.is_none(), "{ctx}: {name} {m:?}"),
                        (_, Some(m)) if target.typed_mappings() => {
                            assert_eq!(
                                m.as_object().unwrap().keys().collect::<Vec<_>>(),
                                ["_doc"],
                                "{ctx}: {name}"
                            )
                        }
                        (_, Some(m)) => assert!(m.get("_doc").is_none(), "{ctx}: {name} typeless"),
                        (_, None) => panic!("{ctx}: {name} lost its mappings"),
                    }
                }
            }
        }
    }
}

#[test]
fn user_templates_planned_system_ones_excluded() {
    let Some(dir) = fixtures() else { return };
    let (_, snaps) = load(&dir, "ES_7_10_Single");
    let items = plan(&snaps[0].1, ProductVersion::os(3, 8), &Options::default());
    let create = |k| {
        let mut v: Vec<&str> = items
            .iter()
            .filter(|i| i.kind == k && i.action == Action::Create)
            .map(|i| i.name.as_str())
            .collect();
        v.sort();
        v
    };
    assert_eq!(create(MetadataKind::LegacyTemplate), Vec::<&str>::new());
    assert_eq!(create(MetadataKind::ComponentTemplate), ["posts_template"]);
    assert_eq!(
        create(MetadataKind::IndexTemplate),
        ["posts_index_template"]
    );
    assert_eq!(
        create(MetadataKind::Index),
        ["posts_2023_02_25", "posts_2024_01_01"]
    );

    let (_, snaps) = load(&dir, "ES_6_8_Single");
    let items = plan(&snaps[0].1, ProductVersion::os(3, 8), &Options::default());
    let t = items
        .iter()
        .find(|i| i.name == "posts_index_template")
        .unwrap();
    assert_eq!(t.action, Action::Create);
    let body = t.body.as_ref().unwrap();
    assert_eq!(body["index_patterns"], serde_json::json!(["posts_*"]));
    assert!(body["aliases"]["alias2"]["filter"].is_object(), "{body}");
    assert!(body["aliases"].get("{index}-alias").is_some(), "{body}");
}

#[test]
fn es56_two_types_merge_or_split() {
    let Some(dir) = fixtures() else { return };
    let (_, snaps) = load(&dir, "ES_5_6_Updates_Deletes");
    let source = &snaps[0].1;
    let items = plan(source, ProductVersion::os(3, 8), &Options::default());
    let i = items
        .iter()
        .find(|i| i.name == "test_updates_deletes")
        .unwrap();
    assert!(
        i.notes.transformations.iter().any(|t| t.contains("merged")),
        "{i:#?}"
    );
    let split = Options {
        multi_type_mode: MultiTypeMode::Split,
        ..Options::default()
    };
    let items = plan(source, ProductVersion::os(3, 8), &split);
    let mut idx = of_kind(&items, MetadataKind::Index);
    idx.sort();
    assert_eq!(
        idx,
        ["test_updates_deletes_type1", "test_updates_deletes_type2"]
    );
    let routing = metadata::DocumentRouting::new(source, &split);
    assert_eq!(
        routing.target_index("test_updates_deletes", Some("type2")),
        Some("test_updates_deletes_type2")
    );

    // every system template of 5.6 still transforms cleanly when asked for
    let all = Options {
        legacy_templates: metadata::Allowlist::parse(&["regex:.*"]).unwrap(),
        ..Options::default()
    };
    for target in [ProductVersion::os(3, 8), ProductVersion::es(6, 8)] {
        let items = plan(source, target, &all);
        for i in items
            .iter()
            .filter(|i| i.kind == MetadataKind::LegacyTemplate)
        {
            assert_eq!(i.action, Action::Create, "{i:#?}");
            let text = i.body.as_ref().unwrap().to_string();
            assert!(
                !text.contains("\"string\"")
                    && !text.contains("\"_all\":{\"enabled\"")
                    && !text.contains("\"template\":"),
                "{}: {text}",
                i.name
            );
        }
    }
}
