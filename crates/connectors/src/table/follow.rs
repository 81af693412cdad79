//! The table's change feed ([`engine::follow::ChangeFeed`]): a PostgreSQL logical
//! replication slot and publication named after the migration (see `table::follow`).
//!
//! A round peeks the committed transactions of the slot up to the round's bounds and
//! keeps each changed key once, at its last change (earlier changes of the key in the
//! round are `superseded`). Every key's row is then read as it is now and rendered as the
//! backfill renders rows: a row there is written (an INSERT, an UPDATE whatever TOASTed
//! values it left out, the new key of a key change), a row gone — or no longer matching
//! `--where` — is deleted (a DELETE, the old key of a key change). The target therefore
//! converges on the table: after the last change is applied each key holds the row as it
//! is, whatever order the rounds read rows in. A key outside `--from`/`--until` is not the
//! migration's: counted (`outside`), not sent.
//!
//! Positions: `Key("<commit LSN, 16 hex digits>.<place in the transaction, 8 hex
//! digits>")`, increasing in commit order.

use std::collections::HashMap;
use std::sync::Arc;

use coordination::Position;
use engine::document::{Document, Op, Read, Skip};
use engine::error::SourceError;
use engine::follow::{ChangeCounts, ChangeFeed, FeedLag, FeedStart, RoundBounds, RoundReads};
use table::follow::{ChangeKind, CurrentRow, FollowName};
use table::{Bounds, Table, TableError};

/// Microseconds between the Unix epoch and PostgreSQL's (2000-01-01).
const PG_EPOCH_UNIX_US: i64 = 946_684_800_000_000;

/// Changed keys read back per statement.
const ROWS_PER_READ: usize = 2000;

/// A table's changes after its backfill.
pub struct TableFeed {
    table: Arc<Table>,
    bounds: Bounds,
    group: Arc<str>,
    runtime: tokio::runtime::Handle,
}

impl TableFeed {
    pub fn new(
        table: Arc<Table>,
        bounds: Bounds,
        group: Arc<str>,
        runtime: tokio::runtime::Handle,
    ) -> Self {
        TableFeed {
            table,
            bounds,
            group,
            runtime,
        }
    }

    fn error(&self, what: &str, e: TableError) -> SourceError {
        let msg = format!("table {}: {what}", self.group);
        let error = match e {
            _ if e.is_transient() => SourceError::item(msg),
            TableError::FollowLost(_) => SourceError::permanent(msg),
            _ => SourceError::fatal(msg),
        };
        error.caused_by(e)
    }
}

fn names(name: &str) -> FollowName {
    FollowName {
        slot: name.to_string(),
        publication: name.to_string(),
    }
}

/// A change's position: commit order, then its place in the transaction.
pub fn position(commit_lsn: u64, seq: u32) -> Position {
    Position::Key(format!("{commit_lsn:016X}.{seq:08X}"))
}

impl ChangeFeed for TableFeed {
    fn describe(&self) -> String {
        self.group.to_string()
    }

    fn start(&self, name: &str) -> Result<FeedStart, SourceError> {
        let s = self
            .runtime
            .block_on(self.table.start_follow(&names(name)))
            .map_err(|e| self.error("starting to follow", e))?;
        let mut created = Vec::new();
        if s.created_slot {
            created.push(format!("replication slot {name}"));
        }
        if s.created_publication {
            created.push(format!("publication {name}"));
        }
        Ok(FeedStart {
            name: name.to_string(),
            from: s.from,
            created,
        })
    }

    fn log_end(&self, name: &str) -> Result<u64, SourceError> {
        match self.runtime.block_on(self.table.slot_state(name)) {
            // The flushed end: decoding reads no further (see `SlotState::flushed`).
            Ok(Some(s)) => Ok(s.flushed),
            Ok(None) => Err(SourceError::permanent(format!(
                "table {}: replication slot {name} is gone (dropped?): changes from here on are lost; start a new migration",
                self.group
            ))),
            Err(e) => Err(self.error("reading the replication slot", e)),
        }
    }

    fn read_round(&self, name: &str, round: &RoundBounds) -> Result<RoundReads, SourceError> {
        let peeked = self
            .runtime
            .block_on(self.table.peek_changes(&names(name), round.upto, round.max))
            .map_err(|e| self.error("reading changes", e))?;
        let mut counts = ChangeCounts {
            unchanged_toast: peeked.unchanged_toast,
            transactions: peeked.transactions,
            ..ChangeCounts::default()
        };
        // Each key once, at its last change.
        let mut last: HashMap<&str, (u64, u32)> = HashMap::new();
        let mut superseded = 0;
        for c in &peeked.changes {
            match c.kind {
                ChangeKind::Insert => counts.inserts += 1,
                ChangeKind::Update => counts.updates += 1,
                ChangeKind::Delete => counts.deletes += 1,
                ChangeKind::KeyChangeOld => counts.key_changes += 1,
                ChangeKind::KeyChangeNew => {}
            }
            if last.insert(c.key.as_str(), (c.commit_lsn, c.seq)).is_some() {
                superseded += 1;
            }
        }
        let mut keys: Vec<(&str, (u64, u32))> = last.into_iter().collect();
        keys.sort_by_key(|(_, at)| *at);
        let texts: Vec<String> = keys.iter().map(|(k, _)| k.to_string()).collect();
        let mut rows = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(ROWS_PER_READ) {
            let got = self
                .runtime
                .block_on(self.table.current_rows(chunk, &self.bounds))
                .map_err(|e| self.error("reading changed rows", e))?;
            if got.len() != chunk.len() {
                return Err(SourceError::item(format!(
                    "table {}: {} changed keys asked for, {} answers",
                    self.group,
                    chunk.len(),
                    got.len()
                )));
            }
            rows.extend(got);
        }
        let mut reads = Vec::with_capacity(rows.len());
        let mut outside = 0;
        for ((_, (lsn, seq)), row) in keys.iter().zip(rows) {
            let position = position(*lsn, *seq);
            let doc = |op: Op, id: String, source: Vec<u8>| Document {
                position: position.clone(),
                op,
                index: self.group.clone(),
                id,
                doc_type: None,
                routing: None,
                source: source.into(),
            };
            reads.push(match row {
                CurrentRow::Row { key, json } => Read::Doc(doc(Op::Index, key, json)),
                CurrentRow::Gone { key } => Read::Doc(doc(Op::Delete, key, Vec::new())),
                CurrentRow::Outside => {
                    outside += 1;
                    continue;
                }
                CurrentRow::Bad { key, reason } => Read::Skip(Skip {
                    position: position.clone(),
                    index: self.group.clone(),
                    id: key,
                    doc_type: None,
                    routing: None,
                    reason: "bad_row",
                    detail: reason,
                    source: None,
                }),
            });
        }
        let full = peeked.messages >= u64::from(round.max.max(1));
        let confirm_to = match (full, peeked.last_end) {
            (true, Some(end)) => end,
            (_, end) => end.unwrap_or(0).max(round.upto),
        };
        Ok(RoundReads {
            reads,
            counts,
            superseded,
            outside,
            confirm_to,
            full,
            newest_commit_ms: peeked
                .newest_commit_us
                .map(|us| (us + PG_EPOCH_UNIX_US) / 1000),
        })
    }

    fn confirm(&self, name: &str, to: u64) -> Result<(), SourceError> {
        self.runtime
            .block_on(self.table.confirm_follow(name, to))
            .map_err(|e| self.error("confirming the replication slot", e))
    }

    fn lag(&self, name: &str) -> Result<Option<FeedLag>, SourceError> {
        let s = self
            .runtime
            .block_on(self.table.slot_state(name))
            .map_err(|e| self.error("reading the replication slot", e))?;
        Ok(s.map(|s| FeedLag {
            current: s.current,
            confirmed: s.confirmed,
            retained_from: s.restart,
        }))
    }

    fn drop_hint(&self, name: &str) -> String {
        format!(
            "psql \"$SOURCE\" -c \"SELECT pg_drop_replication_slot('{name}')\" -c \"DROP PUBLICATION {name}\""
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_follow_commit_order_then_place() {
        let a = position(0x0153_a0d0, 7);
        let b = position(0x0153_a0d0, 8);
        let c = position(0x1_0000_0000, 0);
        assert!(a < b && b < c, "{a:?} {b:?} {c:?}");
    }
}
