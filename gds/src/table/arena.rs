//! A builder's arena: value bytes shared with the builder's clones. A writer clones a table
//! it keeps (a namespace's posted base) to apply a change it may yet drop; with shared arenas
//! the clone copies the entries, not megabytes of values. Merged runs' arenas are never
//! written again; arena 0, which takes inserts, is copied first if a clone shares it.

#![forbid(unsafe_code)]

use std::sync::Arc;

#[derive(Clone, Default)]
pub(super) struct Arena(Arc<Vec<u8>>);

impl Arena {
    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The bytes to append to: this builder's own (copied from a clone's first).
    pub(super) fn writable(&mut self) -> &mut Vec<u8> {
        Arc::make_mut(&mut self.0)
    }
}

impl From<Vec<u8>> for Arena {
    fn from(bytes: Vec<u8>) -> Arena {
        Arena(Arc::new(bytes))
    }
}

impl AsRef<[u8]> for Arena {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}
