//! The half of metadata migration that talks to the target: what exists already (GET and
//! HEAD only, for `evaluate`), then creating what is missing in order (`migrate`).

use cluster::{Client, ClusterError, Created, TemplateKind};
use serde_json::Value;

use super::build::{plan, Options};
use super::error::MetadataError;
use super::plan::{Action, MetadataItem, MetadataKind, Outcome, Report};
use super::source::SourceMetadata;
use super::ProductVersion;

/// How many settings the target may refuse, one by one, before an index is given up.
const MAX_SETTING_RETRIES: usize = 8;

/// The target's distribution and version (`GET /` on first use).
pub async fn target_version(client: &Client) -> Result<ProductVersion, MetadataError> {
    let t = match client.target() {
        Some(t) => t.clone(),
        None => client.detect().await.map_err(target_err)?,
    };
    Ok(t.version)
}

fn target_err(e: ClusterError) -> MetadataError {
    MetadataError::Target(e.to_string())
}

/// What `migrate` would do, asking the target only what exists: no request that writes.
pub async fn evaluate(
    source: &SourceMetadata,
    client: &Client,
    options: &Options,
) -> Result<Report, MetadataError> {
    // The type mapping provider's rules, expanded once for this snapshot (a pair that
    // --type-route names too is an error before anything is asked of the target).
    let options = &options
        .with_type_mapping(source)
        .map_err(|e| MetadataError::Options(e.to_string()))?;
    let target = target_version(client).await?;
    // A Serverless target (SigV4 `aoss`) drops the settings it manages.
    let serverless = client.target().is_some_and(|t| t.serverless);
    let mut items = if serverless && !options.serverless {
        let options = Options {
            serverless,
            ..options.clone()
        };
        plan(source, target, &options)
    } else {
        plan(source, target, options)
    };
    check_existing(&mut items, client).await?;
    Ok(Report {
        mode: "evaluate",
        source_version: source.version,
        target_version: target,
        items,
    })
}

/// Creates every missing template and index, in order; existing ones are left untouched
/// and reported as `skip-exists`. A refused item is reported as an error and the rest go on.
pub async fn migrate(
    source: &SourceMetadata,
    client: &Client,
    options: &Options,
) -> Result<Report, MetadataError> {
    let mut report = evaluate(source, client, options).await?;
    report.mode = "migrate";
    if report.is_blocked() {
        // Blocking conversions are reported before anything is created: a half-created
        // set of templates and indices would be worse than none.
        let blocked = report.summary().blocked;
        tracing::error!(
            "{blocked} item(s) BLOCKED by conversions the target cannot hold: nothing is created"
        );
        for item in &mut report.items {
            if item.action == Action::Create {
                item.reasons.push(format!(
                    "not created: {blocked} item(s) are BLOCKED (see BLOCKING)"
                ));
            }
        }
        return Ok(report);
    }
    for item in &mut report.items {
        if item.action == Action::Create {
            create(item, client).await;
        }
    }
    Ok(report)
}

fn template_kind(kind: MetadataKind) -> Option<TemplateKind> {
    match kind {
        MetadataKind::LegacyTemplate => Some(TemplateKind::Legacy),
        MetadataKind::ComponentTemplate => Some(TemplateKind::Component),
        MetadataKind::IndexTemplate => Some(TemplateKind::Index),
        MetadataKind::DataStream | MetadataKind::Index => None,
    }
}

async fn exists(client: &Client, kind: MetadataKind, name: &str) -> Result<bool, ClusterError> {
    match (template_kind(kind), kind) {
        (Some(k), _) => client.template_exists(k, name).await,
        (None, MetadataKind::DataStream) => client.data_stream_exists(name).await,
        (None, _) => client.index_exists(name).await,
    }
}

async fn check_existing(items: &mut [MetadataItem], client: &Client) -> Result<(), MetadataError> {
    for item in items.iter_mut() {
        if item.action != Action::Create {
            continue;
        }
        if exists(client, item.kind, &item.name)
            .await
            .map_err(target_err)?
        {
            item.action = Action::SkipExists;
            let what = if item.kind == MetadataKind::Index {
                "an index or alias with this name exists on the target; left untouched"
            } else {
                "exists on the target; left untouched"
            };
            item.reasons = vec![what.into()];
        }
    }
    // an index template needs each component it is composed of
    let components: Vec<(String, Action)> = items
        .iter()
        .filter(|i| i.kind == MetadataKind::ComponentTemplate)
        .map(|i| (i.name.clone(), i.action))
        .collect();
    for item in items.iter_mut() {
        if item.kind != MetadataKind::IndexTemplate || item.action != Action::Create {
            continue;
        }
        let needs: Vec<String> = item
            .body
            .as_ref()
            .and_then(|b| b.get("composed_of"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        for c in needs {
            let planned = components.iter().find(|(n, _)| *n == c).map(|(_, a)| *a);
            let ok = match planned {
                Some(Action::Create | Action::SkipExists) => true,
                Some(_) => false,
                None => client
                    .template_exists(TemplateKind::Component, &c)
                    .await
                    .map_err(target_err)?,
            };
            if !ok {
                item.action = Action::Error;
                item.reasons = vec![format!(
                    "component template {c} is neither migrated nor present on the target"
                )];
                break;
            }
        }
    }
    Ok(())
}

/// `unknown setting [index.foo]` in a refusal → `index.foo`.
fn refused_setting(message: &str) -> Option<String> {
    let start = message.find("unknown setting [")? + "unknown setting [".len();
    let end = message[start..].find(']')? + start;
    Some(message[start..end].to_string())
}

async fn create(item: &mut MetadataItem, client: &Client) {
    let Some(mut body) = item.body.clone() else {
        return;
    };
    let mut attempts = 0;
    let result = loop {
        let r = match (template_kind(item.kind), item.kind) {
            (Some(k), _) => client.put_template(k, &item.name, &body).await,
            (None, MetadataKind::DataStream) => client.create_data_stream(&item.name).await,
            (None, _) => client.create_index(&item.name, &body).await,
        };
        match r {
            Err(e) if e.status() == Some(400) && attempts < MAX_SETTING_RETRIES => {
                let msg = e.to_string();
                let removed = refused_setting(&msg).and_then(|key| {
                    let settings = match item.kind {
                        MetadataKind::ComponentTemplate | MetadataKind::IndexTemplate => {
                            body.get_mut("template")?.get_mut("settings")?
                        }
                        _ => body.get_mut("settings")?,
                    };
                    settings.as_object_mut()?.remove(&key).map(|_| key)
                });
                match removed {
                    Some(key) => {
                        attempts += 1;
                        item.notes.warn(format!(
                            "setting {key} dropped: the target refused it as unknown"
                        ));
                    }
                    None => break Err(e),
                }
            }
            other => break other,
        }
    };
    match result {
        Ok(Created::Created) => {
            item.outcome = Outcome::Created;
            item.reasons.push("created".into());
            item.body = Some(body);
        }
        Ok(Created::AlreadyExists) => {
            item.action = Action::SkipExists;
            item.reasons = vec!["created meanwhile by someone else; left untouched".into()];
        }
        Err(e) => {
            tracing::error!(kind = item.kind.label(), name = %item.name, "creation refused: {e}");
            item.action = Action::Error;
            item.outcome = Outcome::Failed;
            item.reasons = vec![e.to_string()];
            item.body = Some(body);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn refused_setting_is_parsed() {
        assert_eq!(
            super::refused_setting("PUT /x: HTTP 400 illegal_argument_exception: unknown setting [index.lifecycle.name] please check"),
            Some("index.lifecycle.name".into())
        );
        assert_eq!(super::refused_setting("mapper_parsing_exception"), None);
    }
}
