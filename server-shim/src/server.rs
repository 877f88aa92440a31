//! A store as a PMIx server sees it: namespaces registered from their registration arrays
//! (`PMIx_server_register_nspace`, 17.2.3), resources (17.2.5), committed data of local clients,
//! and the collected data of fences, each publication one generation.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rshm_gds::jobdata::{self, keys, Resources};
use rshm_gds::modex::{FenceBatch, PostedParts, Scope, Staged};
use rshm_gds::{part, Error, Info, Ownership, Result, StoreOptions, Value, Writer};

mod commit;
mod groups;
mod pending;
pub(crate) mod psets;
use crate::topology;

pub use pending::{Flushed, Unpublished};

/// The environment a client needs to attach (setup_fork), named once in `abi`.
pub use rshm_abi::env;

/// How to open a server's store; from the `info` array of `rshm_server_open` (docs/ffi.md).
/// Where it goes is `rshm_gds::choose_base_dir(base_dir, server_tmpdir)`.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// An explicit base directory, used as given (`rshm.dir`; without it `$RSHM_DIR`).
    pub base_dir: Option<PathBuf>,
    /// The PMIx server's tmpdir (`PMIX_SERVER_TMPDIR`; without it the environment's): taken
    /// only when it is a tmpfs (a resource manager's is often on disk).
    pub server_tmpdir: Option<PathBuf>,
    /// Who besides the server may read the store (`PMIX_USERID`, `PMIX_GRPID`: the job's user
    /// and group when the server runs as root for them): ACL entries.
    pub ownership: Ownership,
    /// This node's name, as the registrations name it (`PMIX_HOSTNAME`); default the kernel's.
    pub local_host: Option<String>,
    /// Publish the node's topology and complete registrations' locality (`rshm.topology`:
    /// true for this machine's, or an hwloc XML document; docs/topology.md).
    pub topology: Option<rshm_topo::Source>,
    /// With topology, replicate each job table per NUMA domain (`rshm.numa`; none on a node
    /// of one domain).
    pub numa: bool,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            base_dir: None,
            server_tmpdir: None,
            ownership: Ownership::PRIVATE,
            local_host: None,
            topology: None,
            numa: false,
        }
    }
}

fn u32_of(v: &Value, key: &str) -> Result<u32> {
    match *v {
        Value::Uint32(u) | Value::Uint(u) => Ok(u),
        _ => Err(Error::InvalidArgument(format!("{key} must be a uint32"))),
    }
}

fn string_of(v: &Value, key: &str) -> Result<String> {
    match v {
        Value::String(s) if !s.is_empty() => Ok(s.clone()),
        _ => Err(Error::InvalidArgument(format!(
            "{key} must be a non-empty string"
        ))),
    }
}

impl ServerOptions {
    /// Read the directives rshm understands; others are ignored (they are the host's).
    pub fn from_infos(infos: &[Info]) -> Result<ServerOptions> {
        let mut o = ServerOptions::default();
        for i in infos {
            match i.key.as_str() {
                env::INFO_DIR => o.base_dir = Some(string_of(&i.value, env::INFO_DIR)?.into()),
                // Only a hint (taken when a tmpfs): an empty one is none.
                "pmix.srvr.tmpdir" => match &i.value {
                    Value::String(s) => o.server_tmpdir = (!s.is_empty()).then(|| PathBuf::from(s)),
                    _ => {
                        return Err(Error::InvalidArgument(
                            "PMIX_SERVER_TMPDIR must be a string".into(),
                        ))
                    }
                },
                "pmix.euid" => o.ownership.reader_uid = Some(u32_of(&i.value, "PMIX_USERID")?),
                "pmix.egid" => o.ownership.reader_gid = Some(u32_of(&i.value, "PMIX_GRPID")?),
                topology::INFO_KEY => {
                    o.topology = match &i.value {
                        Value::Bool(true) => Some(rshm_topo::Source::Discover),
                        Value::Bool(false) => None,
                        Value::String(xml) if !xml.is_empty() => {
                            Some(rshm_topo::Source::Xml(xml.clone()))
                        }
                        _ => {
                            return Err(Error::InvalidArgument(format!(
                                "{} must be a bool or an hwloc XML string",
                                topology::INFO_KEY
                            )))
                        }
                    }
                }
                topology::NUMA_INFO_KEY => match i.value {
                    Value::Bool(b) => o.numa = b,
                    _ => {
                        return Err(Error::InvalidArgument(format!(
                            "{} must be a bool",
                            topology::NUMA_INFO_KEY
                        )))
                    }
                },
                keys::HOSTNAME => match &i.value {
                    Value::String(s) => o.local_host = Some(s.clone()),
                    _ => {
                        return Err(Error::InvalidArgument(
                            "PMIX_HOSTNAME must be a string".into(),
                        ))
                    }
                },
                _ => {}
            }
        }
        Ok(o)
    }
}

/// The kernel's name for this node.
fn kernel_hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "localhost".into())
}

/// One server's store.
pub struct Server {
    writer: Writer,
    ownership: Ownership,
    local_host: String,
    posted: HashMap<String, PostedParts>,
    resources: Option<Resources>,
    /// Values staged for the next flush ([`Server::stage`]), in the order staged.
    pending: pending::Pending,
    /// Posted data withdrawn for good ([`Server::withdraw_posted_for_good`]): no more is taken.
    posted_withdrawn: bool,
    /// The process sets the host defined (`psets.rs`).
    psets: rshm_gds::psets::Registry,
    /// The namespaces registered and not deregistered: no set may take one's name.
    registered: std::collections::HashSet<String>,
    /// The process groups constructed (`groups.rs`).
    groups: rshm_gds::psets::groups::Groups,
    /// The node's topology, when the server publishes it ([`ServerOptions::topology`]).
    topology: Option<topology::NodeTopology>,
}

/// What [`Server::withdraw`] withdrew.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Withdrawn {
    /// The key, in every scope (or there was nothing to withdraw).
    Key,
    /// The namespace's whole posted table: the key's could not be published.
    Namespace,
    /// Neither could be published: the store's posted data was withdrawn for good
    /// ([`rshm_gds::modex::withdraw_for_good`]); its readers ask the next store in line.
    Store,
}

/// One value of a fence's collected data (or of a commit).
pub struct PostedValue {
    pub nspace: String,
    pub rank: u32,
    pub scope: u8,
    pub key: String,
    pub value: Value,
}

/// A posted value as [`Server::store_refs`] takes it: borrowed from the caller.
pub struct PostedRef<'a> {
    pub nspace: &'a str,
    pub rank: u32,
    pub scope: u8,
    pub key: &'a str,
    pub data: PostedData<'a>,
}

/// What a [`PostedRef`] holds.
#[derive(Clone, Copy)]
pub enum PostedData<'a> {
    Value(&'a Value),
    /// A `PMIX_BYTE_OBJECT`'s bytes, read in place from C: stored without a copy into a
    /// [`Value`] first.
    Bytes(&'a [u8]),
}

impl Server {
    /// Create the store.
    pub fn open(opts: ServerOptions) -> Result<Server> {
        // Loaded before the store exists: a topology that does not load creates nothing.
        let node = match &opts.topology {
            Some(source) => Some(topology::NodeTopology::load(source, opts.numa)?),
            None => None,
        };
        let base =
            rshm_gds::choose_base_dir(opts.base_dir.as_deref(), opts.server_tmpdir.as_deref());
        let writer = Writer::create(StoreOptions {
            base_dir: Some(base),
            ownership: opts.ownership,
            ..StoreOptions::default()
        })?;
        let mut server = Server {
            writer,
            ownership: opts.ownership,
            local_host: opts.local_host.unwrap_or_else(kernel_hostname),
            posted: HashMap::new(),
            resources: None,
            pending: pending::Pending::default(),
            posted_withdrawn: false,
            psets: rshm_gds::psets::Registry::new(),
            registered: std::collections::HashSet::new(),
            groups: rshm_gds::psets::groups::Groups::new(),
            topology: None,
        };
        if let Some(node) = node {
            let mut tx = server.writer.begin();
            tx.put_table(topology::NAMESPACE, topology::PART, &node.table()?)?;
            tx.commit()?;
            server.topology = Some(node);
        }
        Ok(server)
    }

    /// The store directory (what clients attach to).
    pub fn path(&self) -> &Path {
        self.writer.path()
    }

    /// The store's owner (this process's effective uid): what clients require
    /// (`RSHM_STORE_OWNER`).
    pub fn owner_uid(&self) -> u32 {
        self.writer.owner_uid()
    }

    /// One line for a log: where the store is, on what, owned and readable by whom.
    pub fn describe(&self) -> String {
        let id = |v: Option<u32>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
        format!(
            "store {} ({}), owner uid {}, readable by uid {} gid {}",
            self.path().display(),
            if rshm_gds::is_tmpfs(self.path()) {
                "tmpfs"
            } else {
                "NOT tmpfs"
            },
            self.owner_uid(),
            id(self.ownership.reader_uid),
            id(self.ownership.reader_gid),
        )
    }

    /// What the store has published so far (generations, bytes and files written).
    pub fn stats(&self) -> rshm_gds::WriterStats {
        self.writer.stats()
    }

    /// This node's name, as registrations are read against.
    pub fn local_host(&self) -> &str {
        &self.local_host
    }

    /// `PMIx_server_register_nspace`: build the namespace's job data from its registration
    /// array and publish it (replacing an earlier registration of the same namespace).
    /// `nlocalprocs` is the host's count of local clients; the store derives locality from the
    /// maps, so it is only checked for sanity.
    pub fn register_nspace<I: jobdata::RegInfo>(
        &mut self,
        ns: &str,
        nlocalprocs: i32,
        infos: &[I],
    ) -> Result<()> {
        if nlocalprocs < 0 {
            return Err(Error::InvalidArgument("nlocalprocs < 0".into()));
        }
        let (mut table, _summary) = jobdata::build(Some(&self.local_host), infos)?;
        if let Some(node) = &self.topology {
            node.complete(infos, &mut table)?;
        }
        let mut tx = self.writer.begin();
        tx.put_table(ns, part::DATA, &table)?;
        if let Some(node) = &self.topology {
            node.put_replicas(&mut tx, ns, &table)?;
        }
        tx.commit()?;
        self.registered.insert(ns.to_owned());
        Ok(())
    }

    /// `PMIx_server_deregister_nspace`: remove the namespace, its job data and posted data
    /// (values staged for it included).
    pub fn deregister_nspace(&mut self, ns: &str) -> Result<()> {
        self.drop_staged(ns);
        self.posted.remove(ns);
        let mut tx = self.writer.begin();
        tx.remove_namespace(ns);
        tx.commit()?;
        self.registered.remove(ns);
        Ok(())
    }

    /// `PMIx_server_register_resources` (17.2.5): node information not tied to a namespace.
    /// A call that fails changes nothing: its infos are not kept for a later call to publish.
    pub fn register_resources(&mut self, infos: &[Info]) -> Result<()> {
        let mut res = self.resources.clone().unwrap_or_default();
        res.add(&self.local_host, infos)?;
        let mut tx = self.writer.begin();
        tx.put_table(jobdata::resources::NAMESPACE, part::RESOURCES, res.table())?;
        tx.commit()?;
        self.resources = Some(res);
        Ok(())
    }

    /// Store posted values and publish them as one generation: a client's commit (visible to
    /// local peers at once) or a fence's collected data (all of it visible at once or none).
    /// Every value is checked before any is stored, so a refused batch changes nothing.
    /// Staged values are flushed first ([`Server::flush`]).
    pub fn store(&mut self, values: &[PostedValue]) -> Result<()> {
        self.store_refs(values.iter().map(|v| PostedRef {
            nspace: &v.nspace,
            rank: v.rank,
            scope: v.scope,
            key: &v.key,
            data: PostedData::Value(&v.value),
        }))
    }

    /// [`Server::store`] of borrowed values.
    pub fn store_refs<'a>(
        &mut self,
        values: impl IntoIterator<Item = PostedRef<'a>>,
    ) -> Result<()> {
        self.flush_first();
        self.check_posted_taken()?;
        // One fence batch per namespace, in the order the namespaces first appear: a fence
        // delivers every rank's values in rank order, which the batch merges without sorting.
        // Building the batches checks every value (scope, reserved key, type), so a refused
        // batch changes nothing.
        let mut batches: Vec<(&str, FenceBatch)> = Vec::new();
        for v in values {
            let scope = Scope::from_raw(v.scope)?;
            let i = match batches.iter().position(|(ns, _)| *ns == v.nspace) {
                Some(i) => i,
                None => {
                    batches.push((v.nspace, FenceBatch::new()));
                    batches.len() - 1
                }
            };
            let batch = &mut batches[i].1;
            match v.data {
                PostedData::Value(value) => batch.put(v.rank, scope, v.key, value)?,
                PostedData::Bytes(bytes) => batch.put_bytes(v.rank, scope, v.key, bytes)?,
            }
        }
        // Staged (the tables each namespace's change rewrites, built apart), kept only once
        // published: a batch that cannot be written (a full filesystem) is forgotten, not left
        // to be published by the next call.
        let mut staged = Vec::with_capacity(batches.len());
        for (ns, batch) in batches {
            let change = match self.posted.get(ns) {
                Some(p) => p.stage(batch, &mut self.writer, ns)?,
                None => PostedParts::new().stage(batch, &mut self.writer, ns)?,
            };
            staged.push((ns, change));
        }
        self.publish_changes(staged)
    }

    /// Publish changes of posted data as one generation, and keep them once published (a
    /// change that cannot be written is forgotten: state and store stay as they were).
    pub(crate) fn publish_changes(&mut self, changes: Vec<(&str, Staged)>) -> Result<()> {
        let mut tx = self.writer.begin();
        for (ns, change) in &changes {
            PostedParts::publish(change, &mut tx, ns)?;
        }
        tx.commit()?;
        for (ns, change) in changes {
            match self.posted.get_mut(ns) {
                Some(parts) => parts.accept(change),
                None => self.posted.entry(ns.to_owned()).or_default().accept(change),
            }
        }
        Ok(())
    }

    /// Withdraw what `rank` of `ns` posted under `key`, in every scope, as one generation: for
    /// a key whose newer value the store could not take (a type it does not hold, a full
    /// filesystem), so that clients stop reading the older value here and ask the next store
    /// in line. Like [`Server::store`], applied to a copy kept only once published.
    ///
    /// If that publication fails (it writes the namespace's posted table anew), the whole
    /// posted table of `ns` is withdrawn instead (a commit that writes only a root), and
    /// forgotten: its values are then all found elsewhere, and later commits start a new
    /// table. Returns which of the two happened; an error only when neither could be
    /// published, and then the older value may still be read here. Staged values are flushed
    /// first.
    pub fn withdraw(&mut self, ns: &str, rank: u32, key: &str) -> Result<Withdrawn> {
        self.flush_first();
        if self.posted_withdrawn {
            return Ok(Withdrawn::Store);
        }
        let change = match self.posted.get(ns) {
            Some(p) => p.stage_withdraw(rank, key, &mut self.writer, ns)?,
            // Nothing posted in `ns`: nothing to withdraw (the rank is still checked).
            None => PostedParts::new().stage_withdraw(rank, key, &mut self.writer, ns)?,
        };
        let Some(change) = change else {
            return Ok(Withdrawn::Key);
        };
        match self.publish_changes(vec![(ns, change)]) {
            Ok(()) => Ok(Withdrawn::Key),
            Err(key_err) => match self.withdraw_posted_only(ns) {
                Ok(()) => Ok(Withdrawn::Namespace),
                Err(_) => {
                    self.withdraw_posted_for_good().map_err(|_| key_err)?;
                    Ok(Withdrawn::Store)
                }
            },
        }
    }

    /// Withdraw the posted tables of `ns` (its job data stays) and forget its posted values.
    /// Staged values are flushed first. If not even that can be published, the store's posted
    /// data is withdrawn for good ([`Server::withdraw_posted_for_good`]); the error still says
    /// why the withdrawal failed.
    pub fn withdraw_posted(&mut self, ns: &str) -> Result<()> {
        self.flush_first();
        self.withdraw_posted_only(ns).inspect_err(|_| {
            let _ = self.withdraw_posted_for_good();
        })
    }

    fn withdraw_posted_only(&mut self, ns: &str) -> Result<()> {
        let mut tx = self.writer.begin();
        match self.posted.get(ns) {
            Some(p) => p.remove_all(&mut tx, ns)?,
            None => PostedParts::new().remove_all(&mut tx, ns)?,
        }
        tx.commit()?;
        self.posted.remove(ns);
        Ok(())
    }

    /// `Err` once posted data was withdrawn for good.
    pub(crate) fn check_posted_taken(&self) -> Result<()> {
        if self.posted_withdrawn {
            return Err(Error::InvalidArgument(
                "this store's posted data was withdrawn (it could no longer be written)".into(),
            ));
        }
        Ok(())
    }

    /// Withdraw every posted value of the store for good, for when a change of posted data can
    /// be neither published nor withdrawn (the store directory removed, a full filesystem):
    /// readers stop answering posted data from the store (job data stays), and later posted
    /// values are refused, so that no reader is ever answered an older value than the next
    /// store in line holds.
    pub fn withdraw_posted_for_good(&mut self) -> Result<()> {
        rshm_gds::modex::withdraw_for_good(&mut self.writer)?;
        self.posted_withdrawn = true;
        self.posted.clear();
        Ok(())
    }

    /// The environment variables a client of (`ns`, `rank`) needs to attach.
    pub fn client_env(&self, ns: &str, rank: u32) -> Vec<(&'static str, String)> {
        vec![
            (env::STORE, self.path().display().to_string()),
            (env::STORE_OWNER, self.owner_uid().to_string()),
            (env::STORE_ID, self.writer.store_id().to_owned()),
            (env::NSPACE, ns.to_owned()),
            (env::RANK, rank.to_string()),
        ]
        .into_iter()
        .chain(
            self.topology
                .as_ref()
                .map(|t| t.replicas())
                .filter(|&n| n > 0)
                .map(|n| (env::NUMA_REPLICAS, n.to_string())),
        )
        .collect()
    }

    /// Remove the store and every file in it.
    pub fn close(self) -> Result<()> {
        self.writer.close()
    }
}
