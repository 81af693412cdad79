//! Bit-packed integer arrays: Lucene ≤ 8 packs values into a big-endian bit stream (value
//! 0 in the most significant bits of byte 0); Lucene 9+ `DirectReader` packs them from
//! the least significant bit of little-endian words.

use crate::data_input::Endian;

/// Bytes needed for `count` values of `bpv` bits.
pub(crate) fn packed_len(count: u64, bpv: u32) -> u64 {
    (count * u64::from(bpv)).div_ceil(8)
}

/// Value `index` of `bpv`-bit values packed in `data` (`bpv <= 64`). Bytes past the end
/// of `data` read as zero; callers check lengths with [`packed_len`] first.
#[inline]
pub(crate) fn packed_get(data: &[u8], index: u64, bpv: u32, order: Endian) -> u64 {
    if bpv == 0 {
        return 0;
    }
    let bit = index * u64::from(bpv);
    let byte = (bit >> 3) as usize;
    let shift = (bit & 7) as u32;
    let mut window = [0u8; 16];
    if byte < data.len() {
        let n = (data.len() - byte).min(16);
        window[..n].copy_from_slice(&data[byte..byte + n]);
    }
    match order {
        Endian::Big => {
            let w = u128::from_be_bytes(window);
            ((w << shift) >> (128 - bpv)) as u64
        }
        Endian::Little => {
            let w = u128::from_le_bytes(window);
            let mask = if bpv == 64 {
                u64::MAX
            } else {
                (1u64 << bpv) - 1
            };
            ((w >> shift) as u64) & mask
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_endian_bit_stream() {
        // bpv 4: 0x12 0x34 → 1, 2, 3, 4; bpv 12: 0xABC 0xDEF.
        assert_eq!(
            (0..4)
                .map(|i| packed_get(&[0x12, 0x34], i, 4, Endian::Big))
                .collect::<Vec<_>>(),
            vec![1, 2, 3, 4]
        );
        let d = [0xAB, 0xCD, 0xEF];
        assert_eq!(packed_get(&d, 0, 12, Endian::Big), 0xABC);
        assert_eq!(packed_get(&d, 1, 12, Endian::Big), 0xDEF);
        assert_eq!(packed_get(&[0xFF; 8], 0, 64, Endian::Big), u64::MAX);
        assert_eq!(packed_get(&[0x80], 0, 1, Endian::Big), 1);
        assert_eq!(packed_get(&[0x80], 1, 1, Endian::Big), 0);
    }

    #[test]
    fn little_endian_words() {
        let d = [0xBC, 0xFA, 0xDE];
        assert_eq!(packed_get(&d, 0, 12, Endian::Little), 0xABC);
        assert_eq!(packed_get(&d, 1, 12, Endian::Little), 0xDEF);
        assert_eq!(packed_get(&[0x21], 1, 4, Endian::Little), 2);
        assert_eq!(packed_get(&[0xFF; 16], 1, 64, Endian::Little), u64::MAX);
        // Past the end reads zero instead of panicking.
        assert_eq!(packed_get(&[], 1000, 64, Endian::Little), 0);
    }
}
