//! Segment info files (`<segment>.si`): max doc, compound flag, file list, attributes and
//! the Lucene version that wrote the segment.
//!
//! Formats: `Lucene50SegmentInfo` v0–1 (5.0–6.1), `Lucene62SegmentInfo` v0–1 (6.2–6.6),
//! `Lucene70SegmentInfo` v0 (7.0–8.5), `Lucene86SegmentInfo` v0 (8.6–8.11) — big-endian —
//! and `Lucene90SegmentInfo` v0 (9.0+, little-endian) in two layouts: 9.9+ writers add a
//! has-blocks byte after the compound flag, chosen by the segment's own version.
//! The index sort, the last field, is not decoded; the CRC-32 covers it.
//!
//! Lucene 4.x: `Lucene40SegmentInfo` v0 (4.0–4.5) and `Lucene46SegmentInfo` v0–1
//! (4.6–4.10; v1 adds the footer), plain headers without ids, the version as a string
//! (docs/specs/lucene4.md).

use std::collections::BTreeMap;

use crate::codec_util::{self, ID_LEN};
use crate::data_input::{DataInput, Endian};
use crate::error::{Error, Result};
use crate::version::LuceneVersion;

/// What a `.si` file says about a segment.
#[derive(Debug, Clone)]
pub struct SegmentInfo {
    /// Header codec name and version, e.g. `Lucene90SegmentInfo v0`.
    pub format: String,
    /// Lucene version that wrote the segment.
    pub version: LuceneVersion,
    /// Oldest Lucene version that contributed documents (7.0+ formats).
    pub min_version: Option<LuceneVersion>,
    pub max_doc: u32,
    pub is_compound: bool,
    /// Whether the segment holds document blocks (9.9+ layout only).
    pub has_blocks: Option<bool>,
    pub diagnostics: BTreeMap<String, String>,
    pub files: Vec<String>,
    pub attributes: BTreeMap<String, String>,
}

impl SegmentInfo {
    /// The stored-fields mode recorded by the codec (`BEST_SPEED`, `BEST_COMPRESSION`,
    /// `ZSTD`, …), from whichever `…StoredFieldsFormat.mode` attribute is present.
    pub fn stored_fields_mode_attribute(&self) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k.ends_with("StoredFieldsFormat.mode") || *k == "es.stored_fields.mode")
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Layout {
    /// Lucene50 and Lucene62: no min version; 62 adds the index sort.
    L50,
    /// Lucene70, Lucene86 and Lucene90 before 9.9: min version, no has-blocks byte.
    L70,
    /// Lucene90SegmentInfo as written by 9.9+ (Lucene99 layout): has-blocks byte.
    L99,
}

/// Parses a `.si` file; `display` names it in errors, `segment_id` is the id from the
/// commit. The CRC-32 is verified (the file is small).
pub fn parse_segment_info(
    display: &str,
    bytes: &[u8],
    segment_id: &[u8; ID_LEN],
) -> Result<SegmentInfo> {
    {
        let mut probe = DataInput::new(display, bytes);
        let (codec, version) = codec_util::read_header(&mut probe)?;
        if codec == "Lucene40SegmentInfo" || codec == "Lucene46SegmentInfo" {
            return parse_segment_info_4x(display, bytes, codec, version);
        }
    }
    codec_util::verify_checksum_bytes(display, bytes)?;
    let body = &bytes[..bytes.len() - codec_util::FOOTER_LEN];
    let mut input = DataInput::new(display, body);
    let header = codec_util::read_index_header_any(&mut input)?;
    let (endian, layout, min, max) = match header.codec {
        "Lucene50SegmentInfo" => (Endian::Big, Layout::L50, 0, 1),
        "Lucene62SegmentInfo" => (Endian::Big, Layout::L50, 0, 1),
        "Lucene70SegmentInfo" => (Endian::Big, Layout::L70, 0, 0),
        "Lucene86SegmentInfo" => (Endian::Big, Layout::L70, 0, 0),
        "Lucene90SegmentInfo" => (Endian::Little, Layout::L70, 0, 0),
        other => {
            return Err(Error::unsupported(
                display,
                format!("segment info codec {other:?} (version {})", header.version),
            ))
        }
    };
    codec_util::check_name_version(
        display,
        header.codec,
        header.version,
        header.codec,
        min,
        max,
    )?;
    codec_util::check_id_suffix(display, &header, segment_id, "")?;
    let legacy_maps = header.codec == "Lucene50SegmentInfo" && header.version == 0;
    let format = format!("{} v{}", header.codec, header.version);
    let start = input.position();

    if header.codec != "Lucene90SegmentInfo" {
        return parse_body(&mut input, endian, layout, legacy_maps, format);
    }
    // Lucene90SegmentInfo: the 9.9+ layout adds a byte; decide by the version, and if
    // that layout does not parse, try the other one before giving up.
    let version = read_version(&mut input.clone(), endian)?;
    let (first, second) = if version >= LuceneVersion::new(9, 9, 0) {
        (Layout::L99, Layout::L70)
    } else {
        (Layout::L70, Layout::L99)
    };
    match parse_body(&mut input, endian, first, false, format.clone()) {
        Ok(si) => Ok(si),
        Err(e) => {
            let mut retry = input.clone();
            retry.seek(start as u64)?;
            parse_body(&mut retry, endian, second, false, format).map_err(|_| e)
        }
    }
}

/// Parses a Lucene 4.x `.si`: `Lucene40SegmentInfo` v0 (version string, doc count,
/// compound flag, diagnostics, attributes, files) or `Lucene46SegmentInfo` v0–1 (the same
/// without attributes; v1 ends with a footer).
fn parse_segment_info_4x(
    display: &str,
    bytes: &[u8],
    codec: &str,
    version: i32,
) -> Result<SegmentInfo> {
    let l46 = codec == "Lucene46SegmentInfo";
    let body = if l46 && version >= 1 {
        codec_util::verify_checksum_bytes(display, bytes)?;
        &bytes[..bytes.len() - codec_util::FOOTER_LEN]
    } else {
        bytes
    };
    let mut input = DataInput::new(display, body);
    codec_util::check_header(&mut input, codec, 0, if l46 { 1 } else { 0 })?;
    let text = input.read_string()?;
    let lucene = parse_version_string(text)
        .ok_or_else(|| input.corrupt(format!("invalid Lucene version {text:?}")))?;
    let max_doc = input.read_i32(Endian::Big)?;
    if max_doc < 0 {
        return Err(input.corrupt(format!("negative max doc {max_doc}")));
    }
    let is_compound = match input.read_u8()? as i8 {
        1 => true,
        -1 => false,
        b => return Err(input.corrupt(format!("invalid compound-file marker {b}"))),
    };
    let diagnostics = input.read_legacy_map_of_strings()?;
    let attributes = if l46 {
        BTreeMap::new()
    } else {
        input.read_legacy_map_of_strings()?
    };
    let files = input.read_legacy_set_of_strings()?;
    for f in &files {
        if f.is_empty() || f.contains(['/', '\\']) {
            return Err(input.corrupt(format!("invalid file name {f:?} in the file list")));
        }
    }
    if input.remaining() != 0 {
        return Err(input.corrupt(format!("{} unexpected bytes at the end", input.remaining())));
    }
    Ok(SegmentInfo {
        format: format!("{codec} v{version}"),
        version: lucene,
        min_version: None,
        max_doc: max_doc as u32,
        is_compound,
        has_blocks: None,
        diagnostics,
        files,
        attributes,
    })
}

/// `4.10.4` (or `4.10`, `4.0.0.2`) as a version; parts beyond the third are ignored.
fn parse_version_string(text: &str) -> Option<LuceneVersion> {
    let mut parts = text.split('.').map(|p| p.parse::<u32>().ok());
    let major = parts.next()??;
    let minor = parts.next()??;
    let bugfix = parts.next().unwrap_or(Some(0))?;
    for rest in parts {
        rest?;
    }
    (major <= 100).then_some(LuceneVersion::new(major, minor, bugfix))
}

fn parse_body(
    input: &mut DataInput<'_>,
    endian: Endian,
    layout: Layout,
    legacy_maps: bool,
    format: String,
) -> Result<SegmentInfo> {
    let version = read_version(input, endian)?;
    let min_version = if layout == Layout::L50 {
        None
    } else {
        match input.read_u8()? {
            0 => None,
            1 => Some(read_version(input, endian)?),
            b => return Err(input.corrupt(format!("invalid has-min-version marker {b}"))),
        }
    };
    let max_doc = input.read_i32(endian)?;
    if max_doc < 0 {
        return Err(input.corrupt(format!("negative max doc {max_doc}")));
    }
    let is_compound = match input.read_u8()? as i8 {
        1 => true,
        -1 => false,
        b => return Err(input.corrupt(format!("invalid compound-file marker {b}"))),
    };
    let has_blocks = if layout == Layout::L99 {
        match input.read_u8()? {
            0 | 0xFF => Some(false), // Lucene writes NO as -1
            1 => Some(true),
            b => return Err(input.corrupt(format!("invalid has-blocks marker {b}"))),
        }
    } else {
        None
    };
    let (diagnostics, files, attributes) = if legacy_maps {
        (
            input.read_legacy_map_of_strings()?,
            input.read_legacy_set_of_strings()?,
            input.read_legacy_map_of_strings()?,
        )
    } else {
        (
            input.read_map_of_strings()?,
            input.read_set_of_strings()?,
            input.read_map_of_strings()?,
        )
    };
    for f in &files {
        if f.is_empty() || f.contains(['/', '\\']) {
            return Err(input.corrupt(format!("invalid file name {f:?} in the file list")));
        }
    }
    // What remains is the index sort (62+ formats), never needed to read stored fields.
    Ok(SegmentInfo {
        format,
        version,
        min_version,
        max_doc: max_doc as u32,
        is_compound,
        has_blocks,
        diagnostics,
        files,
        attributes,
    })
}

fn read_version(input: &mut DataInput<'_>, endian: Endian) -> Result<LuceneVersion> {
    let mut parts = [0u32; 3];
    for p in &mut parts {
        let v = input.read_i32(endian)?;
        *p = u32::try_from(v).map_err(|_| input.corrupt(format!("negative version number {v}")))?;
    }
    if parts[0] > 100 {
        return Err(input.corrupt(format!(
            "implausible Lucene version {}.{}.{}",
            parts[0], parts[1], parts[2]
        )));
    }
    Ok(LuceneVersion::new(parts[0], parts[1], parts[2]))
}
