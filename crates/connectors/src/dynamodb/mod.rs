//! Sink: a DynamoDB table, `dynamodb://TABLE?region=R[&endpoint=URL][&partition-key=A][&sort-key=A]`.
//! A table's rows become items keyed by the key column; documents (snapshots, JSON
//! lines) become items of their `_source` fields plus `_index` (the partition key) and
//! `_id` (the sort key), unless `partition-key`/`sort-key` name others; a table keyed by
//! `_id` without `_index` is refused for documents (two indices' documents of one id would
//! overwrite each other).

use super::{
    BoxedSink, ConnectError, Context, OpenedLookup, OpenedSink, OpenedSource, Params,
    SinkConnector, SourceShape,
};
mod keys;
pub mod lookup;
mod options;
mod preflight;
pub mod sink;

pub use keys::dynamo_key_of;
pub use lookup::DynamoLookup;
pub use options::DynamoOptions;
pub use preflight::check_key_unique;
pub use sink::{BatchLimits, DynamoSink, DynamoSinkOptions, DynamoUrl};

pub(super) const SINK: SinkConnector = SinkConnector {
    name: "dynamodb",
    schemes: &["dynamodb"],
    params: options::PARAMS,
    open: |url, params, ctx, source| Box::pin(open(url, params, ctx, source)),
    lookup: |url, params, ctx, shape| Box::pin(lookup(url, params, ctx, shape)),
    identity: |url, params, ctx| Ok(DynamoOptions::parse(url, params, ctx)?.url.display()),
};

/// The key a row of a source with a key column is written under (its key attributes as
/// the sink writes them); `None` for documents.
fn key_of(url: &DynamoUrl, shape: &SourceShape) -> Option<crate::KeyOf> {
    let key_column = shape.key_column.clone()?;
    let partition = url.partition_key.clone().unwrap_or(key_column);
    let attrs = std::iter::once(partition)
        .chain(url.sort_key.clone())
        .collect();
    Some(dynamo_key_of(shape.hints.clone(), attrs))
}

/// `BatchGetItem` on the table, documents converted as the sink converts them; the table
/// must exist with the key the source's shape asks for (never created).
async fn lookup(
    url: &str,
    params: &Params,
    ctx: &Context,
    shape: &SourceShape,
) -> Result<OpenedLookup, ConnectError> {
    let mut options = DynamoOptions::parse(url, params, ctx)?;
    options.create_table = false;
    let sink = connect(&options, ctx, shape).await?;
    Ok(OpenedLookup {
        key_of: key_of(&options.url, shape),
        lookup: Box::new(DynamoLookup::new(
            sink.client().clone(),
            sink.table(),
            sink.key().clone(),
            sink.hints().clone(),
            shape.key_column.is_none(),
        )),
        index: None,
    })
}

async fn open(
    url: &str,
    params: &Params,
    ctx: &Context,
    source: &OpenedSource,
) -> Result<OpenedSink, ConnectError> {
    let options = DynamoOptions::parse(url, params, ctx)?;
    // A table's key mapping must be unique in it: checked before the table is created
    // or a row read.
    if let Some(check) = &source.key_check {
        check_key_unique(&options.url, check.as_ref(), options.allow_key_collisions).await?;
    }
    let shape = source.shape();
    let sink = connect(&options, ctx, &shape).await?;
    Ok(OpenedSink {
        key_of: key_of(&options.url, &shape),
        sink: BoxedSink::new(sink),
        index: None,
        target_client: None,
    })
}

async fn connect(
    options: &DynamoOptions,
    ctx: &Context,
    source: &SourceShape,
) -> Result<DynamoSink, ConnectError> {
    let parsed = &options.url;
    let options = DynamoSinkOptions {
        create_table: options.create_table,
        // Documents: partition key `_index`, sort key `_id` (documents of several indices
        // share a table); a table's rows: its key column.
        key_column: Some(source.key_column.clone().unwrap_or_else(|| "_index".into())),
        sort_column: source.key_column.is_none().then(|| "_id".into()),
        hints: source.hints.clone(),
        document_fields: source.key_column.is_none(),
        max_in_flight: ctx.max_in_flight.max(1),
        batch: BatchLimits {
            max_docs: ctx.batch.max_docs,
            max_bytes: ctx.batch.max_bytes,
        },
        max_docs_per_sec: ctx.rates.docs_per_sec,
        max_bytes_per_sec: ctx.rates.bytes_per_sec,
        throttle_budget: ctx.throttle_budget,
        ..DynamoSinkOptions::default()
    };
    DynamoSink::connect(parsed, options)
        .await
        .map_err(|e| ConnectError::message(redact::text(&e.to_string()).into_owned()))
}
