//! Process sets the host defines and deletes (`PMIx_server_define_process_set` /
//! `PMIx_server_delete_process_set`, 17.2.19-20): each change published as one generation of the
//! set table (docs/psets-groups.md).

use gds::psets::{self, Registry};
use gds::{part, Error, Result};

use super::Server;

impl Server {
    /// Define set `name` with `members` (namespace, rank) in their order, and publish. A set
    /// defined again is replaced. A call that fails (a bad name, an unwritable table) changes
    /// nothing: the sets stay as the last publication left them.
    pub fn define_pset(&mut self, name: &str, members: &[(&str, u32)]) -> Result<()> {
        let undo = self.psets.define(name, members)?;
        self.publish_change(undo)
    }

    /// Define several sets at once, in their order, and publish them as one generation (a
    /// launch's sets: a define costs a rewrite of the whole set index, so a host defining many
    /// sets gives them together). All or nothing.
    pub fn define_psets(&mut self, sets: &[(&str, Vec<(&str, u32)>)]) -> Result<()> {
        let mut next = self.psets.clone();
        for (name, members) in sets {
            next.define(name, members)?;
        }
        self.publish_psets(next)
    }

    /// Delete set `name` and publish; `NotFound` (nothing published) when there is none.
    pub fn delete_pset(&mut self, name: &str) -> Result<()> {
        let undo = self.psets.delete_undoable(name).ok_or(Error::NotFound)?;
        self.publish_change(undo)
    }

    /// Remove the set table (a root-only commit, which a full filesystem still allows): readers
    /// then pass every set Get and query to their host library. For a front end whose host
    /// holds sets the store could not take.
    pub fn withdraw_psets(&mut self) -> Result<()> {
        let mut tx = self.writer.begin();
        tx.remove_table(psets::NAMESPACE, part::PSETS)?;
        tx.remove_table(psets::DELTA_NAMESPACE, part::PSETS)?;
        tx.commit()?;
        self.psets = Registry::new();
        Ok(())
    }

    /// Publish every set as a new base (the delta table removed), one generation.
    fn publish_psets(&mut self, mut next: Registry) -> Result<()> {
        let mut tx = self.writer.begin();
        next.stage_base(&mut tx)?;
        tx.commit()?;
        next.merge();
        self.psets = next;
        Ok(())
    }

    /// Publish the registry after one define or delete: its delta table alone, or, once the
    /// delta outweighs its bound, a merged base. A failed publication undoes the change.
    fn publish_change(&mut self, undo: psets::Undo) -> Result<()> {
        let mut tx = self.writer.begin();
        let staged = self.psets.stage_change(&mut tx);
        match staged.and_then(|merge| tx.commit().map(|_| merge)) {
            Ok(merge) => {
                if merge {
                    self.psets.merge();
                }
                Ok(())
            }
            Err(e) => {
                self.psets.undo(undo);
                Err(e)
            }
        }
    }
}
