//! The doc values of one field, read forward document by document.

use crate::data_input::Endian;
use crate::error::Result;
use crate::field_infos::DocValuesType;

use super::disi::Disi;
use super::meta::{DocsMeta, Entry, NumericMeta};
use super::region::{Monotonic, Region};
use super::values::{Binaries, Numbers, Terms};

/// The values one document has for a field. Numbers for NUMERIC and SORTED_NUMERIC (in
/// Lucene's order: ascending), bytes for BINARY, SORTED and SORTED_SET (terms in ord
/// order, that is sorted by bytes, without duplicates).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DocValue {
    pub numbers: Vec<i64>,
    pub bytes: Vec<Vec<u8>>,
}

impl DocValue {
    pub fn clear(&mut self) {
        self.numbers.clear();
        self.bytes.clear();
    }
    pub fn is_empty(&self) -> bool {
        self.numbers.is_empty() && self.bytes.is_empty()
    }
}

/// Which documents have a value: none, all, or those of an IndexedDISI.
#[derive(Debug)]
enum Docs {
    None,
    All(u32),
    Disi(Disi),
}

impl Docs {
    fn new(m: &DocsMeta, data: &Region, endian: Endian, max_doc: u32) -> Result<Docs> {
        Ok(match m.offset {
            -2 => Docs::None,
            -1 => Docs::All(max_doc),
            o => Docs::Disi(Disi::new(
                data.sub(o, m.length, "docs-with-field set")?,
                endian,
                (m.dense_rank_power >= 0).then_some(m.dense_rank_power as u8),
                max_doc,
            )),
        })
    }

    /// The index of `doc` among the documents with a value.
    fn index(&mut self, doc: u32) -> Result<Option<u64>> {
        match self {
            Docs::None => Ok(None),
            Docs::All(max) => Ok((doc < *max).then_some(u64::from(doc))),
            Docs::Disi(d) => d.advance_exact(doc),
        }
    }
}

#[derive(Debug)]
enum Kind {
    Numeric(Numbers),
    Binary(Binaries),
    /// Ords (one per document with a value, or addressed ranges of them) and terms.
    Sorted {
        ords: Numbers,
        addresses: Option<Monotonic>,
        terms: Box<Terms>,
    },
    SortedNumeric {
        values: Numbers,
        addresses: Option<Monotonic>,
    },
    /// Lucene 4.10: presence and values by doc id.
    Lucene4(Box<super::lucene4::Values>),
}

/// A field's doc values, read in increasing doc order (see [`FieldValues::read`]).
#[derive(Debug)]
pub struct FieldValues {
    name: String,
    /// `<data file> field <name>`, for errors.
    context: String,
    kind_name: DocValuesType,
    docs: Docs,
    kind: Kind,
    last_doc: Option<u32>,
    scratch: Vec<u8>,
}

fn ords_as_numbers(bpv: u32, offset: i64, length: i64) -> NumericMeta {
    NumericMeta {
        docs: DocsMeta {
            offset: -1,
            length: 0,
            dense_rank_power: -1,
        },
        num_values: 0,
        table: None,
        block_shift: -1,
        bpv,
        min: 0,
        gcd: 1,
        values_offset: offset,
        values_length: length,
    }
}

impl FieldValues {
    pub(crate) fn new(
        name: &str,
        entry: &Entry,
        data: &Region,
        endian: Endian,
        max_doc: u32,
    ) -> Result<FieldValues> {
        let addresses =
            |a: &Option<(i64, i64, super::region::MonotonicMeta)>| -> Result<Option<Monotonic>> {
                match a {
                    None => Ok(None),
                    Some((o, l, m)) => Ok(Some(Monotonic::new(
                        m.clone(),
                        data.sub(*o, *l, "addresses")?,
                        endian,
                    )?)),
                }
            };
        let (kind_name, docs, kind) = match entry {
            Entry::Numeric(m) => (
                DocValuesType::Numeric,
                Docs::new(&m.docs, data, endian, max_doc)?,
                Kind::Numeric(Numbers::new(m, data, endian)?),
            ),
            Entry::Binary(m) => {
                let region = data.sub(m.data_offset, m.data_length, "binary values")?;
                let fixed = (m.min_length == m.max_length).then_some(m.max_length as u32);
                (
                    DocValuesType::Binary,
                    Docs::new(&m.docs, data, endian, max_doc)?,
                    Kind::Binary(Binaries::new(
                        region,
                        m.data_offset,
                        fixed,
                        addresses(&m.addresses)?,
                        m.compressed,
                    )?),
                )
            }
            Entry::Sorted(o, t) | Entry::SortedSet(o, t) => {
                let dt = if matches!(entry, Entry::Sorted(..)) {
                    DocValuesType::Sorted
                } else {
                    DocValuesType::SortedSet
                };
                (
                    dt,
                    Docs::new(&o.docs, data, endian, max_doc)?,
                    Kind::Sorted {
                        ords: Numbers::new(
                            &ords_as_numbers(o.bpv, o.offset, o.length),
                            data,
                            endian,
                        )?,
                        addresses: addresses(&o.addresses)?,
                        terms: Box::new(Terms::new(t, data, endian)?),
                    },
                )
            }
            Entry::Sorted90(n, t) => (
                DocValuesType::Sorted,
                Docs::new(&n.docs, data, endian, max_doc)?,
                Kind::Sorted {
                    ords: Numbers::new(n, data, endian)?,
                    addresses: None,
                    terms: Box::new(Terms::new(t, data, endian)?),
                },
            ),
            Entry::SortedSet90(s, t) => (
                DocValuesType::SortedSet,
                Docs::new(&s.numeric.docs, data, endian, max_doc)?,
                Kind::Sorted {
                    ords: Numbers::new(&s.numeric, data, endian)?,
                    addresses: addresses(&s.addresses)?,
                    terms: Box::new(Terms::new(t, data, endian)?),
                },
            ),
            Entry::SortedNumeric(s) => (
                DocValuesType::SortedNumeric,
                Docs::new(&s.numeric.docs, data, endian, max_doc)?,
                Kind::SortedNumeric {
                    values: Numbers::new(&s.numeric, data, endian)?,
                    addresses: addresses(&s.addresses)?,
                },
            ),
        };
        Ok(FieldValues {
            context: format!("{} (field {name})", data.file_name()),
            name: name.to_string(),
            kind_name,
            docs,
            kind,
            last_doc: None,
            scratch: Vec::new(),
        })
    }

    /// A field of a Lucene 4.10 `.dvd` (`data`: its area between header and footer).
    pub(crate) fn lucene4(
        name: &str,
        entry: &super::lucene4::Entry,
        data: &Region,
        max_doc: u32,
    ) -> Result<FieldValues> {
        use super::lucene4::Entry as E;
        let kind_name = match entry {
            E::Numeric(_) => DocValuesType::Numeric,
            E::Binary(_) => DocValuesType::Binary,
            E::Sorted { set: false, .. } => DocValuesType::Sorted,
            E::Sorted { set: true, .. } => DocValuesType::SortedSet,
            E::SortedSet { .. } => DocValuesType::SortedSet,
            E::SortedNumeric { .. } => DocValuesType::SortedNumeric,
        };
        Ok(FieldValues {
            context: format!("{} (field {name})", data.file_name()),
            name: name.to_string(),
            kind_name,
            docs: Docs::All(max_doc),
            kind: Kind::Lucene4(Box::new(super::lucene4::Values::new(entry, data, max_doc)?)),
            last_doc: None,
            scratch: Vec::new(),
        })
    }

    /// The field's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The field's doc-values type.
    pub fn doc_values_type(&self) -> DocValuesType {
        self.kind_name
    }

    /// Puts the values of `doc` (segment-local) into `out` (cleared first); `false` when
    /// the document has none. Documents must come in increasing order.
    pub fn read(&mut self, doc: u32, out: &mut DocValue) -> Result<bool> {
        out.clear();
        if self.last_doc.is_some_and(|d| doc < d) {
            return Err(crate::error::Error::unsupported(
                self.context.clone(),
                format!(
                    "doc values read backwards (doc {doc} after {:?})",
                    self.last_doc
                ),
            ));
        }
        self.last_doc = Some(doc);
        let Some(index) = self.docs.index(doc)? else {
            return Ok(false);
        };
        match &mut self.kind {
            Kind::Lucene4(v) => return v.read(doc, out, &mut self.scratch),
            Kind::Numeric(n) => out.numbers.push(n.get(index)?),
            Kind::Binary(b) => {
                b.get(index, &mut self.scratch)?;
                out.bytes.push(self.scratch.clone());
            }
            Kind::Sorted {
                ords,
                addresses,
                terms,
            } => {
                let (from, to) = match addresses {
                    None => (index, index + 1),
                    Some(a) => (a.get(index)? as u64, a.get(index + 1)? as u64),
                };
                if to < from || to - from > terms.size().max(1) {
                    return Err(crate::error::Error::corrupt(
                        self.context.clone(),
                        format!("doc {doc} has ords {from}..{to}"),
                    ));
                }
                for i in from..to {
                    let ord = ords.get(i)?;
                    if ord < 0 {
                        return Err(crate::error::Error::corrupt(
                            self.context.clone(),
                            format!("doc {doc} has ord {ord}"),
                        ));
                    }
                    out.bytes.push(terms.get(ord as u64)?.to_vec());
                }
            }
            Kind::SortedNumeric { values, addresses } => match addresses {
                None => out.numbers.push(values.get(index)?),
                Some(a) => {
                    let (from, to) = (a.get(index)?, a.get(index + 1)?);
                    if from < 0 || to < from || to - from > 1 << 24 {
                        return Err(crate::error::Error::corrupt(
                            self.context.clone(),
                            format!("doc {doc} has values {from}..{to}"),
                        ));
                    }
                    for i in from..to {
                        out.numbers.push(values.get(i as u64)?);
                    }
                }
            },
        }
        Ok(true)
    }
}
