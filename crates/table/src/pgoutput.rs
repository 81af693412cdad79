//! PostgreSQL's logical replication messages (the `pgoutput` plugin, protocol version 1),
//! as `pg_logical_slot_peek_binary_changes` returns them: one message per row.
//!
//! Layout (PostgreSQL documentation, "Logical Replication Message Formats"; checked against
//! the bytes a PostgreSQL 15 server sends, see the tests): every message starts with one
//! tag byte; integers are big-endian; strings end with a NUL byte.
//!
//! - `B` begin: final LSN of the transaction (its commit record) `u64`, commit time `i64`
//!   (µs since 2000-01-01), xid `u32`.
//! - `C` commit: flags `u8`, commit LSN `u64`, end LSN `u64`, commit time `i64`.
//! - `R` relation: oid `u32`, namespace, name, replica identity `u8`, columns `u16`, then per
//!   column flags `u8` (1: part of the key), name, type oid `u32`, type modifier `i32`.
//! - `I` insert: oid, `N`, tuple. `U` update: oid, optionally `K` (the old key) or `O` (the
//!   old row) and a tuple, then `N` and the new tuple. `D` delete: oid, `K` or `O`, tuple.
//! - `T` truncate: relations `u32`, options `u8`, oids.
//! - Tuple: columns `u16`, per column `n` (NULL), `u` (an unchanged TOASTed value: not sent),
//!   `t` text (length `u32`, bytes) or `b` binary (the same).
//! - `O` origin, `Y` type, `M` message: read and passed over.
//!
//! Bad bytes are an error saying where, never a panic; no length is trusted beyond the
//! bytes actually there.

/// A log sequence number.
pub type Lsn = u64;

/// `0/16B3748`, as PostgreSQL writes an LSN.
pub fn lsn_text(lsn: Lsn) -> String {
    format!("{:X}/{:X}", lsn >> 32, lsn & 0xFFFF_FFFF)
}

/// An LSN from PostgreSQL's text of it.
pub fn parse_lsn(s: &str) -> Option<Lsn> {
    let (hi, lo) = s.split_once('/')?;
    let hi = u32::from_str_radix(hi, 16).ok()?;
    let lo = u32::from_str_radix(lo, 16).ok()?;
    Some((u64::from(hi) << 32) | u64::from(lo))
}

/// One value of a tuple.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Datum {
    Null,
    /// A TOASTed value the update did not change: not in the message.
    Unchanged,
    Text(Vec<u8>),
    Binary(Vec<u8>),
}

/// A column of a relation message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelColumn {
    pub key: bool,
    pub name: String,
    pub type_oid: u32,
}

/// One decoded message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    Begin {
        final_lsn: Lsn,
        commit_time_us: i64,
        xid: u32,
    },
    Commit {
        commit_lsn: Lsn,
        end_lsn: Lsn,
        commit_time_us: i64,
    },
    Relation {
        oid: u32,
        namespace: String,
        name: String,
        columns: Vec<RelColumn>,
    },
    Insert {
        oid: u32,
        new: Vec<Datum>,
    },
    Update {
        oid: u32,
        /// The old key (`K`) or the old row (`O`) when the key changed or the replica
        /// identity is FULL.
        old: Option<Vec<Datum>>,
        new: Vec<Datum>,
    },
    Delete {
        oid: u32,
        old: Vec<Datum>,
    },
    Truncate {
        oids: Vec<u32>,
    },
    /// Origin, type and logical messages: nothing for a follower.
    Other(u8),
}

/// Why a message could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("pgoutput message {tag:?} at byte {at}: {what}")]
pub struct DecodeError {
    pub tag: char,
    pub at: usize,
    pub what: String,
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    tag: char,
}

impl<'a> Reader<'a> {
    fn fail(&self, what: impl Into<String>) -> DecodeError {
        DecodeError {
            tag: self.tag,
            at: self.at,
            what: what.into(),
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|e| *e <= self.bytes.len())
            .ok_or_else(|| {
                self.fail(format!(
                    "{n} bytes wanted, {} left",
                    self.bytes.len() - self.at
                ))
            })?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, DecodeError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }

    fn string(&mut self) -> Result<String, DecodeError> {
        let rest = &self.bytes[self.at..];
        let len = rest
            .iter()
            .position(|b| *b == 0)
            .ok_or_else(|| self.fail("a string without its NUL end"))?;
        let s = String::from_utf8(rest[..len].to_vec())
            .map_err(|_| self.fail("a string that is not UTF-8"))?;
        self.at += len + 1;
        Ok(s)
    }

    fn tuple(&mut self) -> Result<Vec<Datum>, DecodeError> {
        let n = usize::from(self.u16()?);
        // Each column takes at least one byte: a count beyond the bytes left is corrupt.
        if n > self.bytes.len() - self.at {
            return Err(self.fail(format!("{n} columns in fewer bytes")));
        }
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(match self.u8()? {
                b'n' => Datum::Null,
                b'u' => Datum::Unchanged,
                k @ (b't' | b'b') => {
                    let len = self.u32()? as usize;
                    let v = self.take(len)?.to_vec();
                    if k == b't' {
                        Datum::Text(v)
                    } else {
                        Datum::Binary(v)
                    }
                }
                other => return Err(self.fail(format!("column kind {:?}", other as char))),
            });
        }
        Ok(out)
    }

    fn done(&self) -> Result<(), DecodeError> {
        if self.at == self.bytes.len() {
            Ok(())
        } else {
            Err(self.fail(format!(
                "{} bytes after the message",
                self.bytes.len() - self.at
            )))
        }
    }
}

/// Reads one message.
pub fn decode(bytes: &[u8]) -> Result<Message, DecodeError> {
    let Some(&tag) = bytes.first() else {
        return Err(DecodeError {
            tag: '?',
            at: 0,
            what: "an empty message".into(),
        });
    };
    let mut r = Reader {
        bytes,
        at: 1,
        tag: tag as char,
    };
    let m = match tag {
        b'B' => Message::Begin {
            final_lsn: r.u64()?,
            commit_time_us: r.u64()? as i64,
            xid: r.u32()?,
        },
        b'C' => {
            let _flags = r.u8()?;
            Message::Commit {
                commit_lsn: r.u64()?,
                end_lsn: r.u64()?,
                commit_time_us: r.u64()? as i64,
            }
        }
        b'R' => {
            let oid = r.u32()?;
            let namespace = r.string()?;
            let name = r.string()?;
            let _identity = r.u8()?;
            let n = usize::from(r.u16()?);
            if n > bytes.len() - r.at {
                return Err(r.fail(format!("{n} columns in fewer bytes")));
            }
            let mut columns = Vec::with_capacity(n);
            for _ in 0..n {
                let flags = r.u8()?;
                let name = r.string()?;
                let type_oid = r.u32()?;
                let _typmod = r.u32()?;
                columns.push(RelColumn {
                    key: flags & 1 == 1,
                    name,
                    type_oid,
                });
            }
            Message::Relation {
                oid,
                namespace,
                name,
                columns,
            }
        }
        b'I' => {
            let oid = r.u32()?;
            match r.u8()? {
                b'N' => {}
                other => return Err(r.fail(format!("insert tuple marked {:?}", other as char))),
            }
            Message::Insert {
                oid,
                new: r.tuple()?,
            }
        }
        b'U' => {
            let oid = r.u32()?;
            let (old, new) = match r.u8()? {
                b'K' | b'O' => {
                    let old = r.tuple()?;
                    match r.u8()? {
                        b'N' => {}
                        other => {
                            return Err(r.fail(format!("update tuple marked {:?}", other as char)))
                        }
                    }
                    (Some(old), r.tuple()?)
                }
                b'N' => (None, r.tuple()?),
                other => return Err(r.fail(format!("update tuple marked {:?}", other as char))),
            };
            Message::Update { oid, old, new }
        }
        b'D' => {
            let oid = r.u32()?;
            match r.u8()? {
                b'K' | b'O' => {}
                other => return Err(r.fail(format!("delete tuple marked {:?}", other as char))),
            }
            Message::Delete {
                oid,
                old: r.tuple()?,
            }
        }
        b'T' => {
            let n = r.u32()? as usize;
            let _options = r.u8()?;
            if n > (bytes.len() - r.at) / 4 {
                return Err(r.fail(format!("{n} relations in fewer bytes")));
            }
            let mut oids = Vec::with_capacity(n);
            for _ in 0..n {
                oids.push(r.u32()?);
            }
            Message::Truncate { oids }
        }
        b'O' | b'Y' | b'M' => return Ok(Message::Other(tag)),
        other => {
            return Err(DecodeError {
                tag: other as char,
                at: 0,
                what: "a message this reader does not know (streamed or two-phase transactions are not asked for)".into(),
            })
        }
    };
    r.done()?;
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    // Captured from PostgreSQL 15: `create table t(id int primary key, big text, n int, z
    // int)`, an insert (8,'b',2,3), then `update t set n=5 where id=8`.
    #[test]
    fn messages_of_a_real_server() {
        let begin = decode(&hex("42000000000153a0d000030461d7683f46000002dd")).unwrap();
        assert_eq!(
            begin,
            Message::Begin {
                final_lsn: 0x0153a0d0,
                commit_time_us: 0x00030461d7683f46,
                xid: 0x2dd
            }
        );
        let rel = decode(&hex("52000040097075626c69630074006400040169640000000017ffffffff006269670000000019ffffffff006e0000000017ffffffff007a0000000017ffffffff")).unwrap();
        let Message::Relation {
            oid,
            namespace,
            name,
            columns,
        } = rel
        else {
            panic!("{rel:?}")
        };
        assert_eq!(
            (oid, namespace.as_str(), name.as_str()),
            (0x4009, "public", "t")
        );
        let cols: Vec<(bool, &str, u32)> = columns
            .iter()
            .map(|c| (c.key, c.name.as_str(), c.type_oid))
            .collect();
        assert_eq!(
            cols,
            [
                (true, "id", 23),
                (false, "big", 25),
                (false, "n", 23),
                (false, "z", 23)
            ]
        );
        let ins = decode(&hex(
            "49000040094e0004740000000138740000000162740000000132740000000133",
        ))
        .unwrap();
        let t = |s: &str| Datum::Text(s.as_bytes().to_vec());
        assert_eq!(
            ins,
            Message::Insert {
                oid: 0x4009,
                new: vec![t("8"), t("b"), t("2"), t("3")]
            }
        );
        let commit = decode(&hex("4300000000000153a0d0000000000153a10000030461d7683f46")).unwrap();
        assert_eq!(
            commit,
            Message::Commit {
                commit_lsn: 0x0153a0d0,
                end_lsn: 0x0153a100,
                commit_time_us: 0x00030461d7683f46
            }
        );
        let upd = decode(&hex(
            "55000040094e0004740000000138740000000162740000000135740000000133",
        ))
        .unwrap();
        assert!(matches!(upd, Message::Update { old: None, .. }));
    }

    // Also captured: an update that changed the key (old key 1, new 5, `big` TOASTed and
    // unchanged), a delete by key, a truncate.
    #[test]
    fn key_changes_unchanged_toast_deletes_and_truncates() {
        let mut m = b"U\x00\x00\x40\x09K\x00\x03t\x00\x00\x00\x011nnN\x00\x03t\x00\x00\x00\x015ut\x00\x00\x00\x012".to_vec();
        let t = |s: &str| Datum::Text(s.as_bytes().to_vec());
        assert_eq!(
            decode(&m).unwrap(),
            Message::Update {
                oid: 0x4009,
                old: Some(vec![t("1"), Datum::Null, Datum::Null]),
                new: vec![t("5"), Datum::Unchanged, t("2")]
            }
        );
        m.truncate(m.len() - 3);
        let e = decode(&m).unwrap_err();
        assert!(e.to_string().contains("bytes wanted"), "{e}");
        let d = decode(b"D\x00\x00\x40\x09K\x00\x03t\x00\x00\x00\x015nn").unwrap();
        assert_eq!(
            d,
            Message::Delete {
                oid: 0x4009,
                old: vec![t("5"), Datum::Null, Datum::Null]
            }
        );
        let tr = decode(b"T\x00\x00\x00\x01\x00\x00\x00\x40\x09").unwrap();
        assert_eq!(tr, Message::Truncate { oids: vec![0x4009] });
    }

    #[test]
    fn corrupt_bytes_are_errors_not_panics() {
        for bad in [
            &b""[..],
            b"I\x00",
            b"I\x00\x00\x40\x09N\xff\xff",
            b"I\x00\x00\x40\x09N\x00\x01t\xff\xff\xff\xff",
            b"R\x00\x00\x40\x09public",
            b"T\xff\xff\xff\xff\x00",
            b"Z",
            b"B\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x01extra",
        ] {
            assert!(decode(bad).is_err(), "{bad:?}");
        }
        assert_eq!(parse_lsn("0/16B3748"), Some(0x16B3748));
        assert_eq!(lsn_text(0x1_0000_0010), "1/10");
        assert_eq!(
            parse_lsn(&lsn_text(0xABCD_1234_5678)),
            Some(0xABCD_1234_5678)
        );
    }
}
