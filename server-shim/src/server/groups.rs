//! Process groups (12.2): a construct's result, destruct, join and leave, each published as one
//! generation of the group index and the group's own table (docs/psets-groups.md "Groups").

use rshm_gds::psets::groups::{self, Change, Group, Groups};
use rshm_gds::{part, Result};

use super::Server;

impl Server {
    /// Publish the result of `PMIx_Group_construct` for group `name`: `group.members` in
    /// group-rank order. A group constructed again is replaced. A call that fails changes
    /// nothing.
    pub fn construct_group(&mut self, name: &str, group: Group) -> Result<()> {
        self.change_groups(name, |g| g.construct(name, group))
    }

    /// `PMIx_Group_destruct`: `NotFound` (nothing published) for an unknown group.
    pub fn destruct_group(&mut self, name: &str) -> Result<()> {
        self.change_groups(name, |g| g.destruct(name))
    }

    /// `PMIx_Group_join` accepted: `member` is the group's next rank.
    pub fn join_group(
        &mut self,
        name: &str,
        member: (&str, u32),
        endpoint: Option<&[u8]>,
    ) -> Result<()> {
        self.change_groups(name, |g| g.join(name, member, endpoint))
    }

    /// `PMIx_Group_leave`: the members after `member` move down one group rank.
    pub fn leave_group(&mut self, name: &str, member: (&str, u32)) -> Result<()> {
        self.change_groups(name, |g| g.leave(name, member))
    }

    fn change_groups(
        &mut self,
        name: &str,
        f: impl FnOnce(&mut Groups) -> Result<Change>,
    ) -> Result<()> {
        let mut next = self.groups.clone();
        let change = f(&mut next)?;
        let mut tx = self.writer.begin();
        tx.put_table(groups::NAMESPACE, part::GROUPS, &change.index)?;
        match &change.group {
            Some(t) => tx.put_table(name, part::GROUPS, t)?,
            None => tx.remove_table(name, part::GROUPS)?,
        }
        tx.commit()?;
        self.groups = next;
        Ok(())
    }
}
