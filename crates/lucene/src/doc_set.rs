//! A set of documents of one segment (a bitset over `0..max_doc`), and a [`Selection`]:
//! one set per segment of an index, for walks over chosen documents instead of the live
//! ones ([`crate::IndexReader::selected`]).

/// Documents of one segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocSet {
    words: Vec<u64>,
    max_doc: u32,
}

impl DocSet {
    /// The empty set over a segment of `max_doc` documents.
    pub fn empty(max_doc: u32) -> DocSet {
        DocSet {
            words: vec![0; (max_doc as usize).div_ceil(64)],
            max_doc,
        }
    }

    pub fn max_doc(&self) -> u32 {
        self.max_doc
    }

    /// Adds `doc` (ignored beyond max doc); returns whether it was new.
    #[inline]
    pub fn insert(&mut self, doc: u32) -> bool {
        if doc >= self.max_doc {
            return false;
        }
        let w = &mut self.words[(doc >> 6) as usize];
        let bit = 1u64 << (doc & 63);
        let new = *w & bit == 0;
        *w |= bit;
        new
    }

    /// Removes `doc`; returns whether it was there.
    #[inline]
    pub fn remove(&mut self, doc: u32) -> bool {
        if doc >= self.max_doc {
            return false;
        }
        let w = &mut self.words[(doc >> 6) as usize];
        let bit = 1u64 << (doc & 63);
        let was = *w & bit != 0;
        *w &= !bit;
        was
    }

    #[inline]
    pub fn contains(&self, doc: u32) -> bool {
        doc < self.max_doc && self.words[(doc >> 6) as usize] & (1u64 << (doc & 63)) != 0
    }

    /// Number of documents in the set.
    pub fn len(&self) -> u32 {
        self.words.iter().map(|w| w.count_ones()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|w| *w == 0)
    }

    /// The first document at or after `from`.
    #[inline]
    pub fn next(&self, from: u32) -> Option<u32> {
        if from >= self.max_doc {
            return None;
        }
        let mut i = (from >> 6) as usize;
        let mut w = self.words[i] & (u64::MAX << (from & 63));
        loop {
            if w != 0 {
                return Some((i as u32) * 64 + w.trailing_zeros());
            }
            i += 1;
            w = *self.words.get(i)?;
        }
    }

    /// Adds every document of `other` (a set over the same segment).
    pub fn union_with(&mut self, other: &DocSet) {
        for (w, o) in self.words.iter_mut().zip(&other.words) {
            *w |= o;
        }
    }

    /// The documents in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let mut next = self.next(0);
        std::iter::from_fn(move || {
            let d = next?;
            next = d.checked_add(1).and_then(|n| self.next(n));
            Some(d)
        })
    }
}

/// One [`DocSet`] per segment of an index, in the reader's segment order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Selection {
    sets: Vec<DocSet>,
}

impl Selection {
    /// A selection from one set per segment (in [`crate::IndexReader::segments`] order).
    pub fn new(sets: Vec<DocSet>) -> Selection {
        Selection { sets }
    }

    /// The set of segment `seg` (by position), if there is one.
    pub fn segment(&self, seg: usize) -> Option<&DocSet> {
        self.sets.get(seg)
    }

    /// The sets, one per segment.
    pub fn sets(&self) -> &[DocSet] {
        &self.sets
    }

    /// Documents selected in all segments.
    pub fn len(&self) -> u64 {
        self.sets.iter().map(|s| u64::from(s.len())).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.sets.iter().all(DocSet::is_empty)
    }

    /// The documents of `self` or `other` (selections over the same segments).
    pub fn union(&self, other: &Selection) -> Selection {
        let mut sets = self.sets.clone();
        for (s, o) in sets.iter_mut().zip(&other.sets) {
            s.union_with(o);
        }
        Selection { sets }
    }

    /// The first selected document of segment `seg` at or after `from`.
    #[inline]
    pub fn next(&self, seg: usize, from: u32) -> Option<u32> {
        self.sets.get(seg)?.next(from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_operations() {
        for max in [0u32, 1, 63, 64, 65, 200] {
            let mut s = DocSet::empty(max);
            assert!(s.is_empty());
            assert!(!s.insert(max), "beyond max doc");
            for d in (0..max).step_by(3) {
                assert!(s.insert(d));
                assert!(!s.insert(d));
            }
            let want: Vec<u32> = (0..max).step_by(3).collect();
            assert_eq!(s.iter().collect::<Vec<_>>(), want);
            assert_eq!(s.len() as usize, want.len());
            if max > 3 {
                assert_eq!(s.next(1), Some(3));
                assert!(s.remove(3));
                assert!(!s.contains(3));
                assert_eq!(s.next(1), if max > 6 { Some(6) } else { None });
            }
        }
        let sel = Selection::new(vec![DocSet::empty(10), {
            let mut s = DocSet::empty(100);
            s.insert(99);
            s
        }]);
        assert_eq!(sel.len(), 1);
        let mut other = sel.clone();
        other.sets[1].insert(3);
        other.sets[0].insert(9);
        let u = sel.union(&other);
        assert_eq!(u.len(), 3);
        assert_eq!(u.next(1, 0), Some(3));
        assert_eq!(sel.next(0, 0), None);
        assert_eq!(sel.next(1, 5), Some(99));
        assert_eq!(sel.next(7, 0), None);
    }
}
