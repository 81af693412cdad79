//! Every value of one NUMERIC doc-values field of a segment at once (Elasticsearch's
//! `_seq_no`, `_version`, `_primary_term`), deleted documents included, for callers that
//! look values up by doc id in any order. Decoding is [`FieldValues`]'.

use crate::doc_set::DocSet;
use crate::error::{Error, Result};
use crate::field_infos::DocValuesType;
use crate::names;
use crate::reader::SegmentReader;

use super::{DocValue, FieldValues};

/// Values of one field of one segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumericValues {
    /// Value by document (0 where there is none).
    values: Vec<i64>,
    /// Documents with a value; `None`: all.
    present: Option<DocSet>,
}

impl NumericValues {
    /// The value of `doc`, if it has one.
    #[inline]
    pub fn get(&self, doc: u32) -> Option<i64> {
        let v = *self.values.get(doc as usize)?;
        match &self.present {
            Some(p) if !p.contains(doc) => None,
            _ => Some(v),
        }
    }

    /// Documents of the segment (with or without a value).
    pub fn max_doc(&self) -> u32 {
        self.values.len() as u32
    }

    /// `(doc, value)` for every document with a value, in doc order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, i64)> + '_ {
        (0..self.max_doc()).filter_map(|d| self.get(d).map(|v| (d, v)))
    }
}

/// Reads every value of the NUMERIC doc-values field `field` of `segment` (in-place
/// updates of the field included). `None` when the segment has no such field or the
/// field has no doc values; an error naming the segment's `.fnm` when it has doc values
/// of another type.
pub fn read_numeric_values(segment: &SegmentReader, field: &str) -> Result<Option<NumericValues>> {
    let Some(info) = segment.field_infos().by_name(field) else {
        return Ok(None);
    };
    match info.doc_values_type {
        DocValuesType::None => return Ok(None),
        DocValuesType::Numeric => {}
        other => {
            return Err(Error::unsupported(
                names::segment_file_name(segment.name(), "", "fnm"),
                format!("field {field:?} has {other:?} doc values, expected NUMERIC"),
            ))
        }
    }
    let Some(mut field_values) = segment.doc_values().field(field)? else {
        return Ok(None);
    };
    Ok(Some(collect(&mut field_values, segment.max_doc())?))
}

fn collect(field: &mut FieldValues, max_doc: u32) -> Result<NumericValues> {
    let mut values = vec![0i64; max_doc as usize];
    let mut present = DocSet::empty(max_doc);
    let mut all = true;
    let mut value = DocValue::default();
    for doc in 0..max_doc {
        if field.read(doc, &mut value)? {
            values[doc as usize] = value.numbers.first().copied().unwrap_or_default();
            present.insert(doc);
        } else {
            all = false;
        }
    }
    Ok(NumericValues {
        values,
        present: (!all).then_some(present),
    })
}
