//! IndexedDISI read forward: which documents have a value, and the rank (index) of a
//! document among them — the position of its value in the value arrays.
//!
//! The set is stored in blocks of 65 536 doc ids, only non-empty ones, in increasing
//! order: sparse (the low 16 bits of each doc), dense (a 1024-word bitset, preceded by a
//! rank table from Lucene 8 on) or all. A sparse block for doc 2³¹−1 ends the set.

use crate::data_input::Endian;
use crate::error::Result;

use super::region::Region;

const NO_MORE_DOCS: u32 = i32::MAX as u32;

#[derive(Debug)]
enum Block {
    /// Before the first block.
    Start,
    Sparse(Vec<u16>),
    Dense {
        words: Box<[u64; 1024]>,
        /// Set bits in the words before each word.
        before: Box<[u32; 1024]>,
    },
    All,
    /// Past the last block.
    End,
}

/// A forward iterator over a docs-with-field set.
#[derive(Debug)]
pub(crate) struct Disi {
    region: Region,
    endian: Endian,
    dense_rank_power: Option<u8>,
    max_doc: u32,
    /// Offset of the next block header.
    next_at: u64,
    block_id: i64,
    block: Block,
    block_count: u64,
    /// Index of the first document of the current block.
    base_index: u64,
    sparse_pos: usize,
}

impl Disi {
    pub fn new(region: Region, endian: Endian, dense_rank_power: Option<u8>, max_doc: u32) -> Disi {
        Disi {
            region,
            endian,
            dense_rank_power,
            max_doc,
            next_at: 0,
            block_id: -1,
            block: Block::Start,
            block_count: 0,
            base_index: 0,
            sparse_pos: 0,
        }
    }

    fn u16(&mut self, at: u64) -> Result<u16> {
        let b: [u8; 2] = self.region.get(at, 2)?.try_into().expect("2 bytes");
        Ok(match self.endian {
            Endian::Big => u16::from_be_bytes(b),
            Endian::Little => u16::from_le_bytes(b),
        })
    }

    fn load_next(&mut self) -> Result<()> {
        self.base_index += self.block_count;
        let at = self.next_at;
        let id = i64::from(self.u16(at)?);
        let n = u32::from(self.u16(at + 2)?) + 1;
        if id <= self.block_id {
            return Err(self.region.corrupt(format!(
                "IndexedDISI block {id} after block {}",
                self.block_id
            )));
        }
        self.block_id = id;
        self.sparse_pos = 0;
        let base = (id as u64) << 16;
        let mut pos = at + 4;
        if n <= 4095 {
            let bytes = self.region.get(pos, 2 * n as usize)?.to_vec();
            pos += 2 * u64::from(n);
            let mut docs = Vec::with_capacity(n as usize);
            for c in bytes.chunks_exact(2) {
                let low = match self.endian {
                    Endian::Big => u16::from_be_bytes([c[0], c[1]]),
                    Endian::Little => u16::from_le_bytes([c[0], c[1]]),
                };
                if docs.last().is_some_and(|&p| p >= low) {
                    return Err(self
                        .region
                        .corrupt("IndexedDISI sparse block is not in increasing order"));
                }
                docs.push(low);
            }
            if base + u64::from(docs[0]) == u64::from(NO_MORE_DOCS) {
                self.block = Block::End;
                self.block_count = 0;
                return Ok(());
            }
            let last = base + u64::from(*docs.last().expect("n >= 1"));
            if last >= u64::from(self.max_doc) {
                return Err(self.region.corrupt(format!(
                    "IndexedDISI doc {last} is beyond max doc {}",
                    self.max_doc
                )));
            }
            self.block = Block::Sparse(docs);
        } else if n == 65536 {
            if base + 65536 > u64::from(self.max_doc) {
                return Err(self.region.corrupt(format!(
                    "IndexedDISI full block {id} is beyond max doc {}",
                    self.max_doc
                )));
            }
            self.block = Block::All;
        } else {
            if let Some(p) = self.dense_rank_power {
                pos += 1u64 << (17 - u32::from(p));
            }
            let endian = self.endian;
            let raw = self.region.get(pos, 8192)?;
            let mut words = Box::new([0u64; 1024]);
            let mut before = Box::new([0u32; 1024]);
            let mut count = 0u32;
            for (w, c) in raw.chunks_exact(8).enumerate() {
                let a: [u8; 8] = c.try_into().expect("8 bytes");
                let word = match endian {
                    Endian::Big => u64::from_be_bytes(a),
                    Endian::Little => u64::from_le_bytes(a),
                };
                words[w] = word;
                before[w] = count;
                count += word.count_ones();
            }
            pos += 8192;
            if count != n {
                return Err(self.region.corrupt(format!(
                    "IndexedDISI dense block {id} has {count} bits set, header says {n}"
                )));
            }
            if let Some(w) = (0..1024).rev().find(|&w| words[w] != 0) {
                let last = base + 64 * w as u64 + 63 - u64::from(words[w].leading_zeros());
                if last >= u64::from(self.max_doc) {
                    return Err(self.region.corrupt(format!(
                        "IndexedDISI doc {last} is beyond max doc {}",
                        self.max_doc
                    )));
                }
            }
            self.block = Block::Dense { words, before };
        }
        self.block_count = u64::from(n);
        self.next_at = pos;
        Ok(())
    }

    /// Whether `doc` has a value, and if so its index among the documents that have one.
    /// Documents must be asked for in non-decreasing order.
    pub fn advance_exact(&mut self, doc: u32) -> Result<Option<u64>> {
        let target = i64::from(doc >> 16);
        loop {
            if matches!(self.block, Block::End) {
                return Ok(None);
            }
            if self.block_id >= target && !matches!(self.block, Block::Start) {
                break;
            }
            self.load_next()?;
        }
        if self.block_id > target {
            return Ok(None);
        }
        let low = (doc & 0xFFFF) as u16;
        Ok(match &self.block {
            Block::Sparse(docs) => {
                while self.sparse_pos < docs.len() && docs[self.sparse_pos] < low {
                    self.sparse_pos += 1;
                }
                (docs.get(self.sparse_pos) == Some(&low))
                    .then(|| self.base_index + self.sparse_pos as u64)
            }
            Block::Dense { words, before } => {
                let w = usize::from(low >> 6);
                let bit = u32::from(low & 63);
                let word = words[w];
                (word >> bit & 1 == 1).then(|| {
                    let below = word & ((1u64 << bit) - 1);
                    self.base_index + u64::from(before[w]) + u64::from(below.count_ones())
                })
            }
            Block::All => Some(self.base_index + u64::from(low)),
            Block::Start | Block::End => None,
        })
    }
}
