//! A Vec in chunks of a fixed size, for the owner graph's objects (one per object in scope).
//! Lists arrive a page at a time; flattening the pages into one Vec held every object twice
//! for a moment (the new Vec and the pages not yet moved: 144 bytes an object, about 27 MB
//! at the scalability envelope's 186,000 objects, and the peak of `owners --all -A` under
//! heaptrack). Moved into chunks page by page, the extra is at most one chunk.

use std::ops::Index;

/// Items per chunk: a power of two, so that an index splits with a shift and a mask.
const SHIFT: usize = 12;
const CHUNK: usize = 1 << SHIFT;

#[derive(Debug)]
pub struct Chunked<T> {
    /// Every chunk but the last holds exactly CHUNK items.
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked { chunks: Vec::new(), len: 0 }
    }
}

impl<T> Chunked<T> {
    /// The items of `pages` in order, each page freed as soon as it is moved.
    pub fn from_pages(pages: Vec<Vec<T>>) -> Chunked<T> {
        let mut out = Chunked::default();
        for page in pages {
            out.extend(page);
        }
        out
    }

    pub fn push(&mut self, item: T) {
        match self.chunks.last_mut() {
            Some(last) if last.len() < CHUNK => last.push(item),
            // The first chunk grows as a Vec does: a namespace of a few objects stays small.
            _ => {
                let mut chunk = if self.chunks.is_empty() { Vec::new() } else { Vec::with_capacity(CHUNK) };
                chunk.push(item);
                self.chunks.push(chunk);
            }
        }
        self.len += 1;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn get(&self, i: usize) -> Option<&T> {
        self.chunks.get(i >> SHIFT)?.get(i & (CHUNK - 1))
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + Clone {
        self.chunks.iter().flatten()
    }
}

impl<T> Extend<T> for Chunked<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, items: I) {
        for item in items {
            self.push(item);
        }
    }
}

impl<T> FromIterator<T> for Chunked<T> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        let mut out = Chunked::default();
        out.extend(items);
        out
    }
}

impl<T> From<Vec<T>> for Chunked<T> {
    fn from(items: Vec<T>) -> Self {
        Chunked::from_pages(vec![items])
    }
}

impl<T> Index<usize> for Chunked<T> {
    type Output = T;

    fn index(&self, i: usize) -> &T {
        match self.get(i) {
            Some(item) => item,
            None => panic!("index {i} out of range for {} items", self.len),
        }
    }
}

impl<'a, T> IntoIterator for &'a Chunked<T> {
    type Item = &'a T;
    type IntoIter = std::iter::Flatten<std::slice::Iter<'a, Vec<T>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.chunks.iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any split into pages gives the items of one flat Vec, by index and in order.
        #[test]
        fn pages_in_chunks_read_as_one_vec(sizes in prop::collection::vec(0usize..3 * CHUNK, 0..6)) {
            let mut next = 0;
            let pages: Vec<Vec<usize>> = sizes
                .iter()
                .map(|&n| {
                    next += n;
                    (next - n..next).collect()
                })
                .collect();
            let flat: Vec<usize> = pages.iter().flatten().copied().collect();
            let chunked = Chunked::from_pages(pages);
            prop_assert_eq!(chunked.len(), flat.len());
            prop_assert_eq!(chunked.is_empty(), flat.is_empty());
            prop_assert!(chunked.iter().copied().eq(flat.iter().copied()));
            prop_assert!(chunked.iter().rev().copied().eq(flat.iter().rev().copied()));
            for (i, &v) in flat.iter().enumerate() {
                prop_assert_eq!(chunked[i], v);
            }
            prop_assert_eq!(chunked.get(flat.len()), None);
            prop_assert!(chunked.chunks.iter().rev().skip(1).all(|c| c.len() == CHUNK));
        }
    }
}
