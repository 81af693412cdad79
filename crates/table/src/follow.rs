//! Following a table's changes after its backfill: a logical replication slot (plugin
//! `pgoutput`) and a publication of the table, read through PostgreSQL's SQL functions
//! (`pg_logical_slot_peek_binary_changes`, `pg_replication_slot_advance`), so the same
//! connections as the backfill's serve (no replication connection, no replication
//! privilege beyond the slot functions' own: the `REPLICATION` attribute or superuser).
//!
//! - [`Table::start_follow`] makes sure the slot and the publication exist (creating them
//!   when absent) and that a DELETE carries the key column (the replica identity). The slot
//!   is created before the backfill reads any row, so every change committed after that
//!   point is kept by the server until the follower confirms it.
//! - [`Table::peek_changes`] decodes the committed transactions after the slot's confirmed
//!   position, up to an LSN and a number of messages, without consuming them: the same call
//!   returns the same transactions until [`Table::confirm_follow`] moves the slot on. A
//!   round is therefore repeatable, which is what makes a replaced follower exact.
//! - [`Table::current_rows`] reads the rows of changed keys as they are now, rendered as the
//!   backfill renders them (so unchanged TOASTed values, which pgoutput leaves out of an
//!   UPDATE, are read, never written as null), with the keys whose rows are gone (or no
//!   longer match `--where`) to delete.

use std::collections::BTreeSet;

use tokio_postgres::types::ToSql;

use crate::error::TableError;
use crate::name::quote_ident;
use crate::pgoutput::{decode, lsn_text, parse_lsn, Datum, Lsn, Message};
use crate::reader::Table;
use crate::slots::Bounds;
use crate::value::{key_text, Raw};

/// The slot and the publication a migration follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowName {
    pub slot: String,
    pub publication: String,
}

/// What [`Table::start_follow`] found or made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    pub created_slot: bool,
    pub created_publication: bool,
    /// The slot's confirmed position: changes committed after it are followed.
    pub from: Lsn,
}

/// What a change does to its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Insert,
    Update,
    Delete,
    /// An UPDATE that changed the key: the old key's half (a delete).
    KeyChangeOld,
    /// ... and the new key's half (a write).
    KeyChangeNew,
}

/// One change of one key, in commit order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The commit LSN of its transaction, and its place in the transaction.
    pub commit_lsn: Lsn,
    pub seq: u32,
    pub commit_time_us: i64,
    pub kind: ChangeKind,
    /// The key column's text as PostgreSQL writes it.
    pub key: String,
}

/// The changes of one peek.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Peeked {
    pub changes: Vec<Change>,
    /// Messages returned (begin, relation, changes, commit, …).
    pub messages: u64,
    pub transactions: u64,
    /// The end of the last transaction returned.
    pub last_end: Option<Lsn>,
    /// The newest commit time returned (µs since 2000-01-01).
    pub newest_commit_us: Option<i64>,
    /// Updates that left a TOASTed value out (read from the table instead).
    pub unchanged_toast: u64,
    /// Changes of other tables of the publication (passed over).
    pub other_tables: u64,
}

/// The slot as the server sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotState {
    /// Where the server's WAL ends now (inserted: perhaps not written out or flushed yet).
    pub current: Lsn,
    /// How far the WAL is flushed: logical decoding reads no further, so a round must
    /// not end past it (with `synchronous_commit=off` a commit may sit unflushed for a
    /// while; a round bounded by `current` would confirm past it and lose it).
    pub flushed: Lsn,
    /// What the follower confirmed: changes after it are still to apply.
    pub confirmed: Lsn,
    /// The oldest WAL the slot keeps on the server's disk.
    pub restart: Lsn,
}

/// A changed key's row as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CurrentRow {
    /// The row, rendered: write it.
    Row { key: String, json: Vec<u8> },
    /// No row has the key now (deleted later, or no longer matching `--where`): delete it.
    Gone { key: String },
    /// The key is outside `--from`/`--until`: not the migration's.
    Outside,
    /// The row cannot be rendered (as a backfill read would refuse it).
    Bad { key: Option<String>, reason: String },
}

fn push(out: &mut Peeked, txn: Option<(Lsn, i64)>, seq: &mut u32, kind: ChangeKind, key: String) {
    let (commit_lsn, commit_time_us) = txn.unwrap_or((0, 0));
    out.changes.push(Change {
        commit_lsn,
        seq: *seq,
        commit_time_us,
        kind,
        key,
    });
    *seq = seq.saturating_add(1);
}

/// SQLSTATE 55006: the slot is in use by another session (a follower whose lease ran out
/// and that has not noticed yet): worth waiting for.
fn follow_error(what: &str, e: &tokio_postgres::Error) -> TableError {
    if e.code().map(|c| c.code()) == Some("55006") {
        return TableError::Unavailable(format!("{what}: {}", redact::text(&pgconn::describe(e))));
    }
    TableError::from_pg(what, e)
}

impl Table {
    /// Makes sure the slot and the publication exist and fit: called once for the fleet,
    /// before the backfill reads a row.
    pub async fn start_follow(&self, name: &FollowName) -> Result<Started, TableError> {
        let table = self.schema.table.clone();
        let bad = |m: String| TableError::Config(format!("following {table}: {m}"));
        let wal = self
            .query(
                "reading wal_level",
                "SELECT current_setting('wal_level')",
                &[],
            )
            .await?;
        let level: String = wal.first().map(|r| r.get(0)).unwrap_or_default();
        if level != "logical" {
            return Err(bad(format!(
                "the server has wal_level={level}; following needs wal_level=logical (set it in postgresql.conf and restart the server)"
            )));
        }
        self.check_replica_identity().await?;
        let client = self.client().await?;
        // The publication: made here when absent (its own read-write transaction: the
        // sessions are read-only by default), else it must publish this table's inserts,
        // updates, deletes and truncates.
        let found = client
            .query(
                "SELECT pubinsert AND pubupdate AND pubdelete AND pubtruncate,
                        EXISTS (SELECT 1 FROM pg_publication_tables t
                                WHERE t.pubname = p.pubname AND t.schemaname = $2 AND t.tablename = $3)
                 FROM pg_publication p WHERE p.pubname = $1",
                &[&name.publication, &table.schema.clone().unwrap_or_default(), &table.name],
            )
            .await
            .map_err(|e| follow_error("reading the publication", &e))?;
        let created_publication = match found.first() {
            None => {
                client
                    .batch_execute(&format!(
                        "BEGIN; SET TRANSACTION READ WRITE; CREATE PUBLICATION {} FOR TABLE {}; COMMIT",
                        quote_ident(&name.publication),
                        table.sql()
                    ))
                    .await
                    .map_err(|e| {
                        bad(format!(
                            "creating publication {}: {} (create it yourself: CREATE PUBLICATION {} FOR TABLE {})",
                            name.publication,
                            redact::text(&pgconn::describe(&e)),
                            quote_ident(&name.publication),
                            table.sql()
                        ))
                    })?;
                true
            }
            Some(r) => {
                let (all_ops, has_table): (bool, bool) = (r.get(0), r.get(1));
                if !has_table {
                    return Err(bad(format!(
                        "publication {} exists and does not publish the table (ALTER PUBLICATION {} ADD TABLE {})",
                        name.publication,
                        quote_ident(&name.publication),
                        table.sql()
                    )));
                }
                if !all_ops {
                    return Err(bad(format!(
                        "publication {} does not publish every insert, update, delete and truncate: changes would be missed",
                        name.publication
                    )));
                }
                false
            }
        };
        let slot = client
            .query(
                "SELECT plugin::text, slot_type::text, database::text = current_database(),
                        confirmed_flush_lsn::text
                 FROM pg_replication_slots WHERE slot_name = $1",
                &[&name.slot],
            )
            .await
            .map_err(|e| follow_error("reading the replication slot", &e))?;
        let (created_slot, from) = match slot.first() {
            Some(r) => {
                let (plugin, kind, here): (Option<String>, String, Option<bool>) =
                    (r.get(0), r.get(1), r.get(2));
                if kind != "logical" || plugin.as_deref() != Some("pgoutput") || here != Some(true)
                {
                    return Err(bad(format!(
                        "replication slot {} exists and is not a pgoutput slot of this database (plugin {}, {kind})",
                        name.slot,
                        plugin.unwrap_or_default()
                    )));
                }
                let lsn: Option<String> = r.get(3);
                (false, lsn.as_deref().and_then(parse_lsn).unwrap_or(0))
            }
            None => {
                let r = client
                    .query(
                        "SELECT lsn::text FROM pg_create_logical_replication_slot($1, 'pgoutput')",
                        &[&name.slot],
                    )
                    .await
                    .map_err(|e| {
                        bad(format!(
                            "creating replication slot {}: {}",
                            name.slot,
                            redact::text(&pgconn::describe(&e))
                        ))
                    })?;
                let lsn: String = r.first().map(|r| r.get(0)).unwrap_or_default();
                (true, parse_lsn(&lsn).unwrap_or(0))
            }
        };
        Ok(Started {
            created_slot,
            created_publication,
            from,
        })
    }

    /// A DELETE must carry the key column: the replica identity is the key's own unique
    /// index (the primary key when it is the key), or FULL.
    async fn check_replica_identity(&self) -> Result<(), TableError> {
        let table = &self.schema.table;
        let key = &self.schema.key_column().name;
        let rows = self
            .query(
                "reading the replica identity",
                "SELECT c.relreplident::text,
                        EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a
                                  ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
                                WHERE i.indrelid = c.oid AND i.indnkeyatts = 1 AND a.attname = $2
                                  AND ((c.relreplident = 'd' AND i.indisprimary)
                                       OR (c.relreplident = 'i' AND i.indisreplident)))
                 FROM pg_class c WHERE c.oid = to_regclass($1)",
                &[&table.sql(), key],
            )
            .await?;
        let Some(r) = rows.first() else {
            return Err(TableError::Config(format!("table {table} not found")));
        };
        let (ident, key_is_identity): (String, bool) = (r.get(0), r.get(1));
        if ident == "f" || key_is_identity {
            return Ok(());
        }
        Err(TableError::Config(format!(
            "following {table}: a DELETE would not carry key column {key} (the replica identity is {}): make {key} the primary key, or ALTER TABLE {} REPLICA IDENTITY USING INDEX <{key}'s unique index>, or REPLICA IDENTITY FULL",
            match ident.as_str() {
                "d" => "the primary key, which is not the key column",
                "n" => "NOTHING",
                "i" => "another index",
                _ => "unknown",
            },
            table.sql()
        )))
    }

    /// The server's WAL position and the slot's positions.
    pub async fn slot_state(&self, slot: &str) -> Result<Option<SlotState>, TableError> {
        let rows = self
            .query(
                "reading the replication slot",
                "SELECT pg_current_wal_insert_lsn()::text, confirmed_flush_lsn::text, restart_lsn::text,
                        pg_current_wal_flush_lsn()::text
                 FROM pg_replication_slots WHERE slot_name = $1",
                &[&slot],
            )
            .await?;
        let Some(r) = rows.first() else {
            return Ok(None);
        };
        let lsn = |i: usize| -> Lsn {
            r.get::<_, Option<String>>(i)
                .as_deref()
                .and_then(parse_lsn)
                .unwrap_or(0)
        };
        Ok(Some(SlotState {
            current: lsn(0),
            confirmed: lsn(1),
            restart: lsn(2),
            flushed: lsn(3),
        }))
    }

    /// The committed transactions after the slot's confirmed position that commit before
    /// `upto`, stopping after the transaction that brings the messages over `max_messages`
    /// (whole transactions only); the table's changes in commit order. Repeatable until
    /// the slot is confirmed further.
    pub async fn peek_changes(
        &self,
        name: &FollowName,
        upto: Lsn,
        max_messages: u32,
    ) -> Result<Peeked, TableError> {
        let client = self.client().await?;
        let upto_text = lsn_text(upto);
        let max = i32::try_from(max_messages.max(1)).unwrap_or(i32::MAX);
        let params: [&(dyn ToSql + Sync); 4] = [&name.slot, &upto_text, &max, &name.publication];
        let rows = client
            .query(
                "SELECT data FROM pg_logical_slot_peek_binary_changes($1, $2::text::pg_lsn, $3,
                     'proto_version', '1', 'publication_names', $4)",
                &params,
            )
            .await
            .map_err(|e| follow_error("reading changes from the replication slot", &e))?;
        let data: Vec<Vec<u8>> = rows.iter().map(|r| r.get(0)).collect();
        self.changes_of(&data).await
    }

    /// The table's changes in decoded messages.
    async fn changes_of(&self, data: &[Vec<u8>]) -> Result<Peeked, TableError> {
        let table = &self.schema.table;
        let key_name = &self.schema.key_column().name;
        let mut out = Peeked::default();
        // The table's relation id, and where its key is in its tuples.
        let mut ours: Option<(u32, usize)> = None;
        let mut txn: Option<(Lsn, i64)> = None;
        let mut seq = 0u32;
        for bytes in data {
            out.messages += 1;
            let msg = decode(bytes).map_err(|e| {
                TableError::Query(format!(
                    "following {table}: a change that cannot be read: {e}"
                ))
            })?;
            let key_of = |tuple: &[Datum], at: usize| -> Result<String, TableError> {
                match tuple.get(at) {
                    Some(Datum::Text(b)) => String::from_utf8(b.clone()).map_err(|_| {
                        TableError::Query(format!("following {table}: a key that is not UTF-8"))
                    }),
                    other => Err(TableError::Query(format!(
                        "following {table}: a change without its key column {key_name} ({other:?})"
                    ))),
                }
            };
            match msg {
                Message::Begin {
                    final_lsn,
                    commit_time_us,
                    ..
                } => {
                    txn = Some((final_lsn, commit_time_us));
                    seq = 0;
                }
                Message::Commit {
                    end_lsn,
                    commit_time_us,
                    ..
                } => {
                    out.transactions += 1;
                    out.last_end = Some(end_lsn);
                    out.newest_commit_us = Some(commit_time_us);
                    txn = None;
                }
                Message::Relation {
                    oid,
                    namespace,
                    name,
                    columns,
                } => {
                    if table.schema.as_deref() != Some(namespace.as_str()) || table.name != name {
                        continue;
                    }
                    let Some(at) = columns.iter().position(|c| &c.name == key_name) else {
                        return Err(TableError::Config(format!(
                            "following {table}: the table no longer has key column {key_name}"
                        )));
                    };
                    let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
                    self.check_columns(&names).await?;
                    ours = Some((oid, at));
                }
                Message::Insert { oid, new } => match ours {
                    Some((o, at)) if o == oid => push(
                        &mut out,
                        txn,
                        &mut seq,
                        ChangeKind::Insert,
                        key_of(&new, at)?,
                    ),
                    _ => out.other_tables += 1,
                },
                Message::Update { oid, old, new } => match ours {
                    Some((o, at)) if o == oid => {
                        if new.contains(&Datum::Unchanged) {
                            out.unchanged_toast += 1;
                        }
                        let new_key = key_of(&new, at)?;
                        let old_key = match &old {
                            Some(t) => Some(key_of(t, at)?),
                            None => None,
                        };
                        match old_key {
                            Some(k) if k != new_key => {
                                push(&mut out, txn, &mut seq, ChangeKind::KeyChangeOld, k);
                                push(&mut out, txn, &mut seq, ChangeKind::KeyChangeNew, new_key);
                            }
                            _ => push(&mut out, txn, &mut seq, ChangeKind::Update, new_key),
                        }
                    }
                    _ => out.other_tables += 1,
                },
                Message::Delete { oid, old } => match ours {
                    Some((o, at)) if o == oid => push(
                        &mut out,
                        txn,
                        &mut seq,
                        ChangeKind::Delete,
                        key_of(&old, at)?,
                    ),
                    _ => out.other_tables += 1,
                },
                Message::Truncate { oids } => {
                    if ours.is_some_and(|(o, _)| oids.contains(&o)) {
                        let at = txn.map_or(0, |(l, _)| l);
                        return Err(TableError::FollowLost(format!(
                            "following {table}: the table was TRUNCATEd (transaction committed at {}); the target still holds its rows. Empty the target and run the migration again (a new migration, new slot)",
                            lsn_text(at)
                        )));
                    }
                }
                Message::Other(_) => {}
            }
        }
        Ok(out)
    }

    /// A relation message's columns against what this process reads: a column added since
    /// the table was opened (and still there) stops the follower; a column dropped since,
    /// or one added before the table was opened, is fine (rows are read as they are now).
    async fn check_columns(&self, names: &[&str]) -> Result<(), TableError> {
        if !self.opts.columns.is_empty() {
            // `--columns`: only the listed columns are read; others may come and go.
            return Ok(());
        }
        let known: BTreeSet<&str> = self
            .schema
            .columns
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        let unknown: Vec<String> = names
            .iter()
            .filter(|n| !known.contains(*n))
            .map(|n| n.to_string())
            .collect();
        if unknown.is_empty() {
            return Ok(());
        }
        let rows = self
            .query(
                "reading the columns",
                "SELECT a.attname::text FROM pg_attribute a
                 WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped",
                &[&self.schema.table.sql()],
            )
            .await?;
        let now: BTreeSet<String> = rows.iter().map(|r| r.get(0)).collect();
        let added: Vec<&String> = unknown.iter().filter(|n| now.contains(*n)).collect();
        if added.is_empty() {
            return Ok(());
        }
        Err(TableError::Config(format!(
            "following {}: column(s) {} were added after rfs opened the table: restart the followers so that they read them (rows that do not change again keep the target's copy without them: run a new backfill if they matter)",
            self.schema.table,
            added.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        )))
    }

    /// Confirms every change before `to`: the server may drop the WAL it kept for them. A
    /// position at or before the slot's is left alone.
    pub async fn confirm_follow(&self, slot: &str, to: Lsn) -> Result<(), TableError> {
        let to_text = lsn_text(to);
        self.query(
            "confirming the replication slot",
            "SELECT pg_replication_slot_advance(s.slot_name, $2::text::pg_lsn)
             FROM pg_replication_slots s
             WHERE s.slot_name = $1 AND s.confirmed_flush_lsn < $2::text::pg_lsn",
            &[&slot, &to_text],
        )
        .await?;
        Ok(())
    }

    /// Drops the slot and the publication (the migration is over): the server stops
    /// keeping WAL for it.
    pub async fn drop_follow(&self, name: &FollowName) -> Result<(bool, bool), TableError> {
        let slot = self
            .query(
                "dropping the replication slot",
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1",
                &[&name.slot],
            )
            .await?;
        let client = self.client().await?;
        let publication = client
            .query(
                "SELECT 1 FROM pg_publication WHERE pubname = $1",
                &[&name.publication],
            )
            .await
            .map_err(|e| follow_error("reading the publication", &e))?;
        if !publication.is_empty() {
            client
                .batch_execute(&format!(
                    "BEGIN; SET TRANSACTION READ WRITE; DROP PUBLICATION {}; COMMIT",
                    quote_ident(&name.publication)
                ))
                .await
                .map_err(|e| follow_error("dropping the publication", &e))?;
        }
        Ok((!slot.is_empty(), !publication.is_empty()))
    }

    /// The rows of `keys` (key texts as PostgreSQL writes them) as they are now, in the
    /// order given: rendered like the backfill's, gone, or outside `bounds`.
    pub async fn current_rows(
        &self,
        keys: &[String],
        bounds: &Bounds,
    ) -> Result<Vec<CurrentRow>, TableError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let ty = &self.key_type;
        let as_text = if self.schema.key_column().kind.read_as_text() {
            "::text"
        } else {
            ""
        };
        let mut values: Vec<String> = Vec::new();
        let mut inside = vec!["true".to_string()];
        for (v, op) in [(&bounds.from, ">="), (&bounds.until, "<")] {
            if let Some(v) = v {
                values.push(v.clone());
                inside.push(format!(
                    "rfs_k.rfs_t::{ty} {op} ${}::text::{ty}",
                    values.len() + 1
                ));
            }
        }
        let filter = self
            .opts
            .filter
            .as_ref()
            .map(|p| format!(" AND ({p})"))
            .unwrap_or_default();
        let table = self.schema.table.sql();
        let sql = format!(
            "SELECT {cols}, (rfs_k.rfs_t::{ty}){as_text}, {inside}
             FROM unnest($1::text[]) WITH ORDINALITY AS rfs_k(rfs_t, rfs_i)
             LEFT JOIN {table} ON {table}.{key} = rfs_k.rfs_t::{ty}{filter}
             ORDER BY rfs_k.rfs_i",
            cols = self.columns_sql,
            inside = inside.join(" AND "),
            key = self.key_sql,
        );
        let keys_param: Vec<&str> = keys.iter().map(String::as_str).collect();
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&keys_param];
        params.extend(values.iter().map(|v| v as &(dyn ToSql + Sync)));
        let rows = self
            .query(
                &format!("reading changed rows of {}", self.schema.table),
                &sql,
                &params,
            )
            .await?;
        let n = self.schema.columns.len();
        let kind = &self.schema.key_column().kind;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            if !row.try_get::<_, bool>(n + 1).unwrap_or(false) {
                out.push(CurrentRow::Outside);
                continue;
            }
            let present = row
                .try_get::<_, Raw>(self.schema.key)
                .map(|r| r.0.is_some())
                .unwrap_or(false);
            if !present {
                let raw: Raw = row.try_get(n).unwrap_or(Raw(None));
                out.push(match key_text(kind, raw.0) {
                    Ok(key) => CurrentRow::Gone { key },
                    Err(e) => CurrentRow::Bad {
                        key: None,
                        reason: e.0,
                    },
                });
                continue;
            }
            let mut json = Vec::with_capacity(256);
            out.push(match self.renderer.render(row, &mut json) {
                Ok(key) => CurrentRow::Row { key, json },
                Err((key, bad)) => CurrentRow::Bad { key, reason: bad.0 },
            });
        }
        Ok(out)
    }
}
