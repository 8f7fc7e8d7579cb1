//! A compact name index over BTF: a sorted vector of `(name hash, type id, item)` built in
//! one pass without allocating per name. Lookups binary-search the hash, then compare names.

/// FNV-1a, 64 bits: fast and good enough to spread BTF names.
pub fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Entries sorted by hash; `item` distinguishes several names in one type (enumerators).
#[derive(Debug, Default)]
pub struct NameIndex {
    entries: Vec<(u64, u32, u32)>,
}

impl NameIndex {
    /// Builds the index from `(name, type id, item)` triples.
    pub fn build<'a>(items: impl Iterator<Item = (&'a str, u32, u32)>) -> NameIndex {
        let mut entries: Vec<(u64, u32, u32)> = items
            .map(|(name, id, item)| (name_hash(name), id, item))
            .collect();
        entries.sort_unstable();
        NameIndex { entries }
    }

    /// The `(type id, item)` pairs whose name hashes like `name`, in id order. Callers check
    /// the name itself (hash collisions are possible).
    pub fn candidates(&self, name: &str) -> impl Iterator<Item = (u32, u32)> + '_ {
        let h = name_hash(name);
        let start = self.entries.partition_point(|e| e.0 < h);
        self.entries[start..]
            .iter()
            .take_while(move |e| e.0 == h)
            .map(|e| (e.1, e.2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_all_entries_of_a_name() {
        let idx =
            NameIndex::build([("a", 3, 0), ("b", 1, 0), ("a", 2, 5), ("c", 9, 1)].into_iter());
        assert_eq!(idx.candidates("a").collect::<Vec<_>>(), [(2, 5), (3, 0)]);
        assert_eq!(idx.candidates("c").collect::<Vec<_>>(), [(9, 1)]);
        assert_eq!(idx.candidates("zz").count(), 0);
        assert_ne!(name_hash("task_struct"), name_hash("task_struck"));
    }
}
