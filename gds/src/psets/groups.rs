//! Process groups (the standard's 12.2) in the store: the result of a construct (membership in
//! group-rank order, `PMIX_GROUP_CONTEXT_ID`, the group's info, each member's
//! `PMIX_GROUP_ENDPT_DATA`) published as one generation; destruct, join and leave as updates
//! (docs/psets-groups.md "Groups"). Every group is a set of the group index (store name
//! [`NAMESPACE`], part [`crate::part::GROUPS`]: `PMIX_GROUP_NAMES` of a process, and the member
//! a group rank names) and has its own table (store name the group id, part `GROUPS`): the
//! group's values in the job realm, each member's endpoint data in the proc realm of its group
//! rank.

#![forbid(unsafe_code)]

use std::collections::HashMap;

use super::{check_name, Registry};
use crate::error::{Error, Result};
use crate::layout::Realm;
use crate::table::TableBuilder;
use crate::value::{types, DataArray, Info, Proc, Value};

/// The store name of the group index.
pub const NAMESPACE: &str = "rshm.groups";
/// `PMIX_GROUP_NAMES`: the groups a process is in.
pub const GROUP_NAMES: &str = "pmix.pgrp.nm";
/// `PMIX_GROUP_CONTEXT_ID`: the context id the host assigned.
pub const GROUP_CONTEXT_ID: &str = "pmix.grp.ctxid";
/// `PMIX_GROUP_ENDPT_DATA`: a member's endpoint data.
pub const GROUP_ENDPT_DATA: &str = "pmix.grp.endpt";
/// `PMIX_GROUP_MEMBERSHIP`: the members in group-rank order.
pub const GROUP_MEMBERSHIP: &str = "pmix.grp.mbrs";

/// One group as the server keeps it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Group {
    /// (namespace, rank) in group-rank order.
    pub members: Vec<(String, u32)>,
    pub context_id: Option<u64>,
    /// The group's info (job realm of its table).
    pub info: Vec<Info>,
    /// Each member's endpoint data, by group rank (`None`: none given).
    pub endpoints: Vec<Option<Vec<u8>>>,
}

/// Every group of the server.
#[derive(Clone, Debug, Default)]
pub struct Groups {
    groups: HashMap<String, Group>,
    index: Registry,
}

/// What a change left to publish: the index, and the group's table (`None`: remove it).
pub struct Change {
    pub index: TableBuilder,
    pub group: Option<TableBuilder>,
}

impl Groups {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn get(&self, name: &str) -> Option<&Group> {
        self.groups.get(name)
    }

    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    fn set(&mut self, name: &str, g: Group) -> Result<Change> {
        check_name(name, "group id")?;
        if g.members.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "group {name:?} without members"
            )));
        }
        if g.endpoints.len() > g.members.len() {
            return Err(Error::InvalidArgument("more endpoints than members".into()));
        }
        let mut seen = std::collections::HashSet::new();
        for (ns, r) in &g.members {
            if !seen.insert((ns.as_str(), *r)) {
                return Err(Error::InvalidArgument(format!(
                    "{ns}:{r} twice in group {name:?}"
                )));
            }
        }
        let table = group_table(&g)?;
        let members: Vec<(&str, u32)> = g.members.iter().map(|(n, r)| (n.as_str(), *r)).collect();
        let mut index = self.index.clone();
        index.define(name, &members)?;
        let change = Change {
            index: index.table()?,
            group: Some(table),
        };
        self.index = index;
        self.groups.insert(name.to_owned(), g);
        Ok(change)
    }

    /// The result of `PMIx_Group_construct` (12.2.1): `members` in group-rank order (the first
    /// is group rank 0), as the host completed it. A group constructed again is replaced.
    pub fn construct(&mut self, name: &str, g: Group) -> Result<Change> {
        self.set(name, g)
    }

    /// `PMIx_Group_destruct` (12.2.3): the group and its table go.
    pub fn destruct(&mut self, name: &str) -> Result<Change> {
        if !self.groups.contains_key(name) {
            return Err(Error::NotFound);
        }
        let mut index = self.index.clone();
        index.delete(name);
        let change = Change {
            index: index.table()?,
            group: None,
        };
        self.index = index;
        self.groups.remove(name);
        Ok(change)
    }

    /// `PMIx_Group_join` (12.2.7) accepted: `member` joins at the next group rank.
    pub fn join(
        &mut self,
        name: &str,
        member: (&str, u32),
        endpoint: Option<&[u8]>,
    ) -> Result<Change> {
        let mut g = self.groups.get(name).cloned().ok_or(Error::NotFound)?;
        g.endpoints.resize(g.members.len(), None);
        g.members.push((member.0.to_owned(), member.1));
        g.endpoints.push(endpoint.map(<[u8]>::to_vec));
        self.set(name, g)
    }

    /// `PMIx_Group_leave` (12.2.9): `member` leaves; the members after it move down one group
    /// rank. The last member leaving destructs the group.
    pub fn leave(&mut self, name: &str, member: (&str, u32)) -> Result<Change> {
        let mut g = self.groups.get(name).cloned().ok_or(Error::NotFound)?;
        let pos = g
            .members
            .iter()
            .position(|(n, r)| n == member.0 && *r == member.1)
            .ok_or(Error::NotFound)?;
        if g.members.len() == 1 {
            return self.destruct(name);
        }
        g.members.remove(pos);
        if pos < g.endpoints.len() {
            g.endpoints.remove(pos);
        }
        self.set(name, g)
    }
}

/// A group's own table: its values in the job realm, endpoints by group rank.
fn group_table(g: &Group) -> Result<TableBuilder> {
    let mut t = TableBuilder::new();
    for i in &g.info {
        t.insert(Realm::Job, &i.key, &i.value)?;
    }
    if let Some(id) = g.context_id {
        t.insert(Realm::Job, GROUP_CONTEXT_ID, &Value::Size(id))?;
    }
    let procs = g
        .members
        .iter()
        .map(|(n, r)| {
            Value::Proc(Proc {
                nspace: n.clone(),
                rank: *r,
            })
        })
        .collect();
    t.insert(
        Realm::Job,
        GROUP_MEMBERSHIP,
        &Value::DataArray(Box::new(DataArray {
            elem_type: types::PROC,
            items: procs,
        })),
    )?;
    for (rank, e) in g.endpoints.iter().enumerate() {
        if let Some(bytes) = e {
            let rank = u32::try_from(rank)
                .map_err(|_| Error::InvalidArgument("too many members".into()))?;
            t.insert(
                Realm::Proc(rank),
                GROUP_ENDPT_DATA,
                &Value::ByteObject(bytes.clone()),
            )?;
        }
    }
    Ok(t)
}
