//! Work coordination for a leaderless fleet of workers: work items, leases with
//! exponential backoff, successor items with a progress cursor, a control record and
//! phase records — one protocol over a small `Store` trait with several backends.
