//! What job data reads from a mapped table once and then on every get: each key's default realm
//! (standard 6.1, by its name) and the job's session and local node (`keys::meta`).
//!
//! The store knows nothing of PMIx; its [`TableView`] keeps, per mapped table, what a layer
//! above derives from it, computed on first use (a table no get reads, such as posted data,
//! never pays): a byte per key ([`TableView::key_tag`]: here [`RealmOfKey`], the key's default
//! realm, an array read on every get) and one value of the whole table
//! ([`TableView::derived`]: here [`JobMeta`], read by the gets of session and node keys). The
//! methods below are the table's job-data reading of itself, defined here beside it rather
//! than in the store.

#![forbid(unsafe_code)]

use super::keys::{default_realm, meta, DefaultRealm};
use super::node_ids;
use crate::layout::Realm;
use crate::table::{KeyTag, TableView};

/// What a job table says of its session and of the store's own node (`keys::meta`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobMeta {
    /// `meta::SESSION_ID`, when registered.
    pub session: Option<u32>,
    /// `meta::LOCAL_NODEID`, when the registration names the store's node.
    pub local_node: Option<u32>,
    /// The host's id of the store's node (`node_ids::host_id`): a rank is local when its
    /// `PMIX_NODEID` is this, which every posted-card Get asks.
    pub local_host_id: Option<u32>,
}

impl JobMeta {
    /// Read from the table's meta realm.
    #[cold]
    #[inline(never)]
    fn read(t: &TableView) -> JobMeta {
        let meta_u32 = |key: &str| {
            let v = t.get(Realm::Meta, key)?.as_u64()?;
            u32::try_from(v).ok()
        };
        let local_node = meta_u32(meta::LOCAL_NODEID);
        JobMeta {
            session: meta_u32(meta::SESSION_ID),
            local_node,
            local_host_id: local_node.and_then(|n| {
                node_ids::host_id_given_local(t, n, local_node).and_then(node_ids::as_u32)
            }),
        }
    }
}

/// Each key's default realm, as the tag a mapped table keeps per key
/// ([`TableView::key_tag`]): the realm's discriminant (a key whose name is not UTF-8 is a
/// process key).
struct RealmOfKey;

impl KeyTag for RealmOfKey {
    fn tag(name: &[u8]) -> u8 {
        std::str::from_utf8(name).map_or(DefaultRealm::Proc, default_realm) as u8
    }
}

/// The [`DefaultRealm`] whose discriminant [`RealmOfKey`] gave (the identity, compiled).
#[inline]
fn realm_of_tag(tag: u8) -> DefaultRealm {
    const SESSION: u8 = DefaultRealm::Session as u8;
    const JOB: u8 = DefaultRealm::Job as u8;
    const APP: u8 = DefaultRealm::App as u8;
    const NODE: u8 = DefaultRealm::Node as u8;
    match tag {
        SESSION => DefaultRealm::Session,
        JOB => DefaultRealm::Job,
        APP => DefaultRealm::App,
        NODE => DefaultRealm::Node,
        _ => DefaultRealm::Proc,
    }
}

/// The table's [`JobMeta`]; `None` only if its derived slot holds another layer's value.
#[inline]
fn cached_meta(t: &TableView) -> Option<&JobMeta> {
    t.derived(JobMeta::read)
}

impl TableView {
    /// The job's session and local node, as registered (read once per mapped table).
    #[inline]
    pub fn job_meta(&self) -> JobMeta {
        match cached_meta(self) {
            Some(m) => *m,
            None => JobMeta::read(self),
        }
    }

    /// The default realm of key `kid` (its name's, standard 6.1; computed once per mapped
    /// table), or `None` when the table has no key `kid`.
    #[inline]
    pub(crate) fn default_realm(&self, kid: u32) -> Option<DefaultRealm> {
        self.key_tag::<RealmOfKey>(kid).map(realm_of_tag)
    }
}
