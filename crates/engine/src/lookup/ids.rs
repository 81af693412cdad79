//! Every id of a target index against every id the source delivers to it, in bounded
//! memory: each side's ids are gathered in runs of at most [`RUN_BYTES`] of id text,
//! each run sorted and (past the first) written to an anonymous temporary file, then the
//! runs are merged in order and the two sorted streams walked side by side. What one side
//! has and the other lacks is counted (and the first ones listed): missing on the target,
//! or extra there.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use serde::Serialize;

/// Id text held in memory per side before a run is sorted and spilled to disk.
pub const RUN_BYTES: usize = 64 << 20;

/// The longest id read back from a run (ids are written by us; a longer length is a
/// damaged file, refused rather than allocated).
const MAX_ID_BYTES: u32 = 1 << 24;

/// One side's ids, gathered.
#[derive(Debug)]
pub struct IdRuns {
    run: Vec<String>,
    bytes: usize,
    limit: usize,
    spilled: Vec<File>,
    /// Ids pushed (repeats included).
    pub pushed: u64,
}

impl Default for IdRuns {
    fn default() -> Self {
        IdRuns::with_limit(RUN_BYTES)
    }
}

impl IdRuns {
    /// Runs of at most `limit` bytes of id text (tests use small ones).
    pub fn with_limit(limit: usize) -> Self {
        IdRuns {
            run: Vec::new(),
            bytes: 0,
            limit: limit.max(1),
            spilled: Vec::new(),
            pushed: 0,
        }
    }

    pub fn push(&mut self, id: String) -> io::Result<()> {
        self.pushed += 1;
        // The text and the `String` it is held in.
        self.bytes += id.len() + std::mem::size_of::<String>();
        self.run.push(id);
        if self.bytes >= self.limit {
            self.spill()?;
        }
        Ok(())
    }

    /// How many runs went to disk.
    pub fn runs_on_disk(&self) -> usize {
        self.spilled.len()
    }

    fn spill(&mut self) -> io::Result<()> {
        let mut run = std::mem::take(&mut self.run);
        self.bytes = 0;
        run.sort_unstable();
        run.dedup();
        let mut w = BufWriter::new(tempfile::tempfile()?);
        for id in &run {
            let len = u32::try_from(id.len())
                .ok()
                .filter(|l| *l <= MAX_ID_BYTES)
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "an id over 16 MiB"))?;
            w.write_all(&len.to_le_bytes())?;
            w.write_all(id.as_bytes())?;
        }
        let mut f = w.into_inner().map_err(io::IntoInnerError::into_error)?;
        f.seek(SeekFrom::Start(0))?;
        self.spilled.push(f);
        Ok(())
    }

    /// The ids in order, each once.
    pub fn sorted(mut self) -> io::Result<Sorted> {
        self.run.sort_unstable();
        self.run.dedup();
        let mut runs: Vec<Run> = self
            .spilled
            .into_iter()
            .map(|f| Run::File(BufReader::new(f)))
            .collect();
        runs.push(Run::Mem(std::mem::take(&mut self.run).into_iter()));
        let mut heap = BinaryHeap::with_capacity(runs.len());
        for (at, r) in runs.iter_mut().enumerate() {
            if let Some(id) = r.next_id()? {
                heap.push(Reverse((id, at)));
            }
        }
        Ok(Sorted {
            runs,
            heap,
            last: None,
        })
    }
}

enum Run {
    Mem(std::vec::IntoIter<String>),
    File(BufReader<File>),
}

impl Run {
    fn next_id(&mut self) -> io::Result<Option<String>> {
        match self {
            Run::Mem(i) => Ok(i.next()),
            Run::File(r) => {
                let mut len = [0u8; 4];
                match r.read_exact(&mut len) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
                    Err(e) => return Err(e),
                }
                let len = u32::from_le_bytes(len);
                if len > MAX_ID_BYTES {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("an id run holds a length of {len} bytes"),
                    ));
                }
                let mut buf = vec![0u8; len as usize];
                r.read_exact(&mut buf)?;
                String::from_utf8(buf)
                    .map(Some)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
            }
        }
    }
}

/// One side's ids in order, each once (a k-way merge of the runs).
pub struct Sorted {
    runs: Vec<Run>,
    heap: BinaryHeap<Reverse<(String, usize)>>,
    last: Option<String>,
}

impl Sorted {
    pub fn next_id(&mut self) -> io::Result<Option<String>> {
        while let Some(Reverse((id, at))) = self.heap.pop() {
            if let Some(next) = self.runs[at].next_id()? {
                self.heap.push(Reverse((next, at)));
            }
            if self.last.as_deref() == Some(id.as_str()) {
                continue;
            }
            self.last = Some(id.clone());
            return Ok(Some(id));
        }
        Ok(None)
    }
}

/// Every id of one target index against the ids the source delivers to it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IdsVerdict {
    /// Distinct ids the source delivers to the index.
    pub source: u64,
    /// Distinct ids the target index holds.
    pub target: u64,
    pub missing_count: u64,
    pub extra_count: u64,
    /// The first missing ids, in order (at most the listing limit).
    pub missing: Vec<String>,
    /// The first ids on the target that the source does not deliver.
    pub extra: Vec<String>,
}

impl IdsVerdict {
    pub fn ok(&self) -> bool {
        self.missing_count == 0 && self.extra_count == 0
    }
}

/// Walks both sorted streams side by side.
pub fn compare(mut want: Sorted, mut have: Sorted, listed: usize) -> io::Result<IdsVerdict> {
    let mut v = IdsVerdict::default();
    let mut w = want.next_id()?;
    let mut h = have.next_id()?;
    loop {
        let (missing, extra) = match (&w, &h) {
            (None, None) => return Ok(v),
            (Some(a), Some(b)) if a == b => (false, false),
            (Some(a), Some(b)) => (a < b, a > b),
            (Some(_), None) => (true, false),
            (None, Some(_)) => (false, true),
        };
        if missing {
            v.source += 1;
            v.missing_count += 1;
            if v.missing.len() < listed {
                v.missing.extend(w.take());
            }
            w = want.next_id()?;
        } else if extra {
            v.target += 1;
            v.extra_count += 1;
            if v.extra.len() < listed {
                v.extra.extend(h.take());
            }
            h = have.next_id()?;
        } else {
            v.source += 1;
            v.target += 1;
            w = want.next_id()?;
            h = have.next_id()?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(ids: &[String], limit: usize) -> IdRuns {
        let mut r = IdRuns::with_limit(limit);
        for id in ids {
            r.push(id.clone()).unwrap();
        }
        r
    }

    #[test]
    fn runs_spilled_to_disk_merge_in_order_and_the_differences_are_found() {
        let source: Vec<String> = (0..5000)
            .map(|i| format!("doc-{}", (i * 7919) % 5000))
            .collect();
        let mut target: Vec<String> = source
            .iter()
            .filter(|id| *id != "doc-4321")
            .cloned()
            .collect();
        target.push("doc-extra".into());
        // Repeats (a document written twice) count once.
        target.push("doc-17".into());
        let want = runs(&source, 4096);
        let have = runs(&target, 1000);
        assert!(want.runs_on_disk() > 10 && have.runs_on_disk() > 10);
        let v = compare(want.sorted().unwrap(), have.sorted().unwrap(), 10).unwrap();
        assert_eq!(
            v,
            IdsVerdict {
                source: 5000,
                target: 5000,
                missing_count: 1,
                extra_count: 1,
                missing: vec!["doc-4321".into()],
                extra: vec!["doc-extra".into()],
            }
        );
        let v = compare(
            runs(&source, usize::MAX).sorted().unwrap(),
            runs(&[], 10).sorted().unwrap(),
            3,
        )
        .unwrap();
        assert_eq!((v.missing_count, v.missing.len(), v.target), (5000, 3, 0));
    }

    /// The cost per million documents (README): `cargo test -p migrate --lib --release
    /// verify::ids -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn cost_per_million_ids() {
        let n = 1_000_000u64;
        let started = std::time::Instant::now();
        let mut want = IdRuns::default();
        let mut have = IdRuns::default();
        for i in 0..n {
            let id = format!("{:016x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            want.push(id.clone()).unwrap();
            if i != 4321 {
                have.push(id).unwrap();
            }
        }
        let v = compare(want.sorted().unwrap(), have.sorted().unwrap(), 10).unwrap();
        assert_eq!((v.source, v.missing_count), (n, 1));
        let peak = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmHWM"))
                    .map(str::to_string)
            });
        println!("{n} ids per side: {:?}, peak {peak:?}", started.elapsed());
        // Small runs: the same ids through the disk.
        let started = std::time::Instant::now();
        let mut want = IdRuns::with_limit(4 << 20);
        let mut have = IdRuns::with_limit(4 << 20);
        for i in 0..n {
            let id = format!("{:016x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            want.push(id.clone()).unwrap();
            have.push(id).unwrap();
        }
        let runs = want.runs_on_disk();
        let v = compare(want.sorted().unwrap(), have.sorted().unwrap(), 10).unwrap();
        assert!(v.ok());
        println!(
            "{n} ids per side in {runs} runs of 4 MiB: {:?}",
            started.elapsed()
        );
    }
}
