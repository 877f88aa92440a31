//! `PMIx_server_register_resources` (standard 17.2.5): information "not associated with a given
//! namespace", such as fabric devices and GPUs, which "could also have been included in a call
//! to PMIx_server_register_nspace - e.g., as part of a PMIX_NODE_INFO_ARRAY". It is kept in its
//! own table; node-realm lookups of a namespace fall back to it, by hostname, when the namespace
//! itself has no value (a namespace's own values override it).

#![forbid(unsafe_code)]

use std::collections::HashMap;

use super::keys::{self, meta};
use super::node_names;
use crate::error::{Error, Result};
use crate::layout::Realm;
use crate::table::TableBuilder;
use crate::value::{types, Info, Value};

/// The store namespace name of the resources table. It is published as part
/// [`crate::part::RESOURCES`], so it cannot collide with a PMIx namespace of the same name,
/// whose data is part 0.
pub const NAMESPACE: &str = "rshm.resources";

/// The server's accumulated resources: every `register_resources` call adds to it.
#[derive(Default, Clone)]
pub struct Resources {
    table: TableBuilder,
    /// Hostname → node id in this table (ids only join a host's values; lookups are by name).
    ids: HashMap<String, u32>,
}

impl Resources {
    pub fn new() -> Self {
        Self::default()
    }

    fn node(&mut self, host: &str) -> Result<u32> {
        if let Some(&id) = self.ids.get(host) {
            return Ok(id);
        }
        let id = self.ids.len() as u32;
        self.ids.insert(host.to_owned(), id);
        self.table.insert(
            Realm::Node(id),
            keys::HOSTNAME,
            &Value::String(host.to_owned()),
        )?;
        Ok(id)
    }

    /// Add a `register_resources` info array. Node arrays (`PMIX_NODE_INFO_ARRAY`, identified by
    /// `PMIX_HOSTNAME`) describe those nodes; top-level keys describe the local node,
    /// `local_host`. Later values override earlier ones. An array that fails changes nothing:
    /// none of its infos stay, to be published with a later call.
    pub fn add(&mut self, local_host: &str, infos: &[Info]) -> Result<()> {
        let mut next = self.clone();
        let known = next.ids.len();
        next.add_infos(local_host, infos)?;
        if next.ids.len() != known {
            let index = node_names::build(next.ids.iter().map(|(h, &id)| (h.as_str(), id)))?;
            next.table
                .insert(Realm::Meta, meta::NODES_BY_NAME, &Value::ByteObject(index))?;
        }
        *self = next;
        Ok(())
    }

    fn add_infos(&mut self, local_host: &str, infos: &[Info]) -> Result<()> {
        let bad = |what: &str| Error::InvalidArgument(format!("register_resources: {what}"));
        for info in infos {
            if info.key != keys::NODE_INFO_ARRAY {
                let id = self.node(local_host)?;
                self.table.insert(Realm::Node(id), &info.key, &info.value)?;
                continue;
            }
            let items: Vec<&Info> = match &info.value {
                Value::DataArray(a) if a.elem_type == types::INFO => a
                    .items
                    .iter()
                    .filter_map(|v| match v {
                        Value::Info(i) => Some(&**i),
                        _ => None,
                    })
                    .collect(),
                _ => return Err(bad("PMIX_NODE_INFO_ARRAY must be an array of pmix_info_t")),
            };
            let host = items
                .iter()
                .find(|i| i.key == keys::HOSTNAME)
                .and_then(|i| match &i.value {
                    Value::String(h) => Some(h.clone()),
                    _ => None,
                })
                .ok_or_else(|| bad("a node array without a PMIX_HOSTNAME string"))?;
            let id = self.node(&host)?;
            for i in items
                .iter()
                .filter(|i| i.key != keys::HOSTNAME && i.key != keys::NODEID)
            {
                self.table.insert(Realm::Node(id), &i.key, &i.value)?;
            }
        }
        Ok(())
    }

    /// The table to publish as (`NAMESPACE`, `part::RESOURCES`).
    pub fn table(&self) -> &TableBuilder {
        &self.table
    }
}
