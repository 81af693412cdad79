//! What can go wrong reading a table.

/// A table could not be read.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TableError {
    /// The URL, a name or a flag value is wrong.
    #[error("{0}")]
    Config(String),
    /// The table's name does not parse.
    #[error(transparent)]
    Name(#[from] crate::name::TableNameError),
    /// The server could not be reached or went away; worth retrying.
    #[error("{0}")]
    Unavailable(String),
    /// The server refused a statement (permissions, a missing table, a type we cannot read).
    #[error("{0}")]
    Query(String),
    /// A followed table's changes can no longer be applied exactly (a TRUNCATE, the
    /// replication slot gone): no retry or restart helps, only a new migration.
    #[error("{0}")]
    FollowLost(String),
}

impl TableError {
    /// Whether trying again later may help (connection loss, timeouts, a server restarting,
    /// a replica cancelling a query for recovery).
    pub fn is_transient(&self) -> bool {
        matches!(self, TableError::Unavailable(_))
    }

    /// Classifies a driver error; `what` says what was being done.
    pub fn from_pg(what: &str, e: &tokio_postgres::Error) -> TableError {
        let msg = format!("{what}: {}", redact::text(&pgconn::describe(e)));
        let transient = match e.code() {
            // No SQLSTATE: the connection broke, was closed, or never opened.
            None => true,
            Some(code) => {
                let c = code.code();
                // 08: connection exceptions; 57014 statement timeout / cancel;
                // 57P0x: shutdown / cannot connect now; 53: insufficient resources;
                // 40001 / 40P01: serialization failure or deadlock (replica conflicts);
                // 25P03: a slot's snapshot was held idle past the server's
                // idle_in_transaction_session_timeout; 72000: snapshot too old. (A read
                // retried opens a new snapshot from the last key read.)
                c.starts_with("08")
                    || c == "25P03"
                    || c == "72000"
                    || c.starts_with("53")
                    || c == "57014"
                    || c.starts_with("57P0")
                    || c == "40001"
                    || c == "40P01"
            }
        };
        if transient {
            TableError::Unavailable(msg)
        } else {
            TableError::Query(msg)
        }
    }
}
