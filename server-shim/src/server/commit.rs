//! A process's commit handed over whole (`rshm_server_commit`): published as staging each of
//! its values and flushing would publish them, but a process's first commit since a merge
//! goes from the caller's values straight into the store's pack, with nothing copied or built
//! in between (a server that forks its clients while they commit pays for every page it
//! writes in between: docs/modex.md).

use rshm_gds::modex::{Commit, PostedParts, Scope, SmallCommit};
use rshm_gds::Result;

use super::pending::{Flushed, Unpublished};
use super::{PostedData, Server};

impl Server {
    /// Publish the values process (`ns`, `rank`) committed, `(scope, key, value)` in put order,
    /// as one generation: the same answers, refusals and failure handling as
    /// [`Server::stage_ref`] of each, then [`Server::flush`].
    pub fn commit(
        &mut self,
        ns: &str,
        rank: u32,
        values: &[(u8, &str, PostedData<'_>)],
    ) -> std::result::Result<Flushed, Unpublished> {
        self.flush_first();
        // Any commit the direct path does not take (or fails to publish) is staged: the
        // staged path refuses what it must and withdraws what it cannot publish.
        if let Ok(Some(flushed)) = self.commit_small(ns, rank, values) {
            return Ok(flushed);
        }
        for (scope, key, data) in values {
            self.stage_ref(ns, rank, *scope, key, *data);
        }
        self.flush()
    }

    fn commit_small(
        &mut self,
        ns: &str,
        rank: u32,
        values: &[(u8, &str, PostedData<'_>)],
    ) -> Result<Option<Flushed>> {
        if self.check_posted_taken().is_err() {
            return Ok(None);
        }
        let Some(parts) = self.posted.get(ns) else {
            return Ok(None);
        };
        let mut commit = Commit::new(rank, values.len())?;
        for (scope, key, data) in values {
            let scope = Scope::from_raw(*scope)?;
            match data {
                PostedData::Bytes(b) => commit.put_bytes(scope, key, b),
                PostedData::Value(v) => commit.put(scope, key, v)?,
            }
        }
        let Some(small) = parts.stage_small(&commit)? else {
            return Ok(None);
        };
        self.publish_small(ns, small)?;
        Ok(Some(Flushed {
            values: values.len(),
            refused: 0,
        }))
    }

    /// Publish a commit staged straight into the pack (`PostedParts::stage_small`) as one
    /// generation, and keep it.
    pub(super) fn publish_small(&mut self, ns: &str, small: SmallCommit<'_>) -> Result<()> {
        let mut tx = self.writer.begin();
        PostedParts::publish_small(&small, &mut tx, ns)?;
        tx.commit()?;
        if let Some(parts) = self.posted.get_mut(ns) {
            parts.accept_small(small);
        }
        Ok(())
    }
}
