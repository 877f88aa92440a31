//! Process sets the host defines and deletes (`PMIx_server_define_process_set` /
//! `PMIx_server_delete_process_set`, 17.2.19-20): each change published as one generation of the
//! set table (docs/psets-groups.md).

use rshm_gds::psets::{self, Registry};
use rshm_gds::{Error, Result};

use super::Server;

impl Server {
    /// Define set `name` with `members` (namespace, rank) in their order, and publish. A set
    /// defined again is replaced. A call that fails (a bad name, an unwritable table) changes
    /// nothing: the sets stay as the last publication left them.
    pub fn define_pset(&mut self, name: &str, members: &[(&str, u32)]) -> Result<()> {
        self.check_set_name(name)?;
        if let Err(e) = self.psets.define(name, members) {
            self.psets.rollback();
            return Err(e);
        }
        self.publish_set_changes()
    }

    /// Define several sets at once, in their order, and publish them as one generation. All or
    /// nothing. Costs the sets given and the chunks they touch (at most `psets::CHUNK_SETS`
    /// sets each), not the sets already defined.
    pub fn define_psets(&mut self, sets: &[(&str, Vec<(&str, u32)>)]) -> Result<()> {
        check_sets_per_call(sets.len())?;
        for (name, _) in sets {
            self.check_set_name(name)?;
        }
        for (name, members) in sets {
            if let Err(e) = self.psets.define(name, members) {
                self.psets.rollback();
                return Err(e);
            }
        }
        self.publish_set_changes()
    }

    /// Delete set `name` and publish; `NotFound` (nothing published) when there is none.
    pub fn delete_pset(&mut self, name: &str) -> Result<()> {
        if !self.psets.delete(name) {
            return Err(Error::NotFound);
        }
        self.publish_set_changes()
    }

    /// Remove the set table (a root-only commit, which a full filesystem still allows): readers
    /// then pass every set Get and query to their host library. For a front end whose host
    /// holds sets the store could not take.
    pub fn withdraw_psets(&mut self) -> Result<()> {
        let mut tx = self.writer.begin();
        self.psets.stage_removal(&mut tx)?;
        tx.commit()?;
        self.psets = Registry::new();
        Ok(())
    }

    /// A set name must not be a namespace this server registered: a Get of `{name,
    /// PMIX_RANK_WILDCARD}` would be ambiguous (17.2.19: set names "do not conflict with
    /// system-assigned namespaces").
    fn check_set_name(&self, name: &str) -> Result<()> {
        if self.registered.contains(name) {
            return Err(Error::InvalidArgument(format!(
                "set name {name:?} is a registered namespace's: a Get of {{{name}, \
                 PMIX_RANK_WILDCARD}} would be ambiguous"
            )));
        }
        Ok(())
    }

    /// Publish the registry after defines or deletes: the chunks they touched and the chunk
    /// list. A failed publication undoes the changes.
    fn publish_set_changes(&mut self) -> Result<()> {
        let mut tx = self.writer.begin();
        let staged = self.psets.stage(&mut tx);
        match staged.and_then(|_| tx.commit()) {
            Ok(_) => {
                self.psets.published();
                Ok(())
            }
            Err(e) => {
                self.psets.rollback();
                Err(e)
            }
        }
    }
}

/// At most [`psets::MAX_SETS_PER_CALL`] sets in one define call.
pub fn check_sets_per_call(n: usize) -> Result<()> {
    if n > psets::MAX_SETS_PER_CALL {
        return Err(Error::InvalidArgument(format!(
            "{n} sets in one call, more than one call may define ({})",
            psets::MAX_SETS_PER_CALL
        )));
    }
    Ok(())
}
