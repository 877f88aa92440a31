//! What job data reads from a mapped table once and then on every get: each key's default realm
//! (standard 6.1, by its name) and the job's session and local node (`keys::meta`).
//!
//! The store knows nothing of PMIx: its [`TableView`] keeps, per mapped table, one value the
//! layer above derives from it ([`TableView::derived`], a `OnceLock` of a `Box<dyn Any>`). Job
//! data keeps its [`JobFacts`] there, computed on the first get that needs them (a table no
//! get reads, such as posted data, never pays for them), so a get pays a load and a type check
//! instead of matching the key's name or looking the meta values up. The methods below are
//! the table's job-data reading of itself, defined here beside it rather than in the store.

#![forbid(unsafe_code)]

use super::keys::{default_realm, meta, DefaultRealm};
use crate::layout::Realm;
use crate::table::TableView;

/// What a job table says of its session and of the store's own node (`keys::meta`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobMeta {
    /// `meta::SESSION_ID`, when registered.
    pub session: Option<u32>,
    /// `meta::LOCAL_NODEID`, when the registration names the store's node.
    pub local_node: Option<u32>,
}

impl JobMeta {
    /// Read from the table's meta realm.
    fn read(t: &TableView) -> JobMeta {
        let meta_u32 = |key: &str| {
            let v = t.get(Realm::Meta, key)?.as_u64()?;
            u32::try_from(v).ok()
        };
        JobMeta {
            session: meta_u32(meta::SESSION_ID),
            local_node: meta_u32(meta::LOCAL_NODEID),
        }
    }
}

/// A mapped table's job-data facts, kept in its [`TableView::derived`] slot.
struct JobFacts {
    meta: JobMeta,
    /// The default realm of each key id (a key whose name is not UTF-8 is a process key).
    defaults: Box<[DefaultRealm]>,
}

impl JobFacts {
    fn of(t: &TableView) -> JobFacts {
        let defaults = (0..t.key_count())
            .map(|kid| {
                let name = t.key_str(kid).and_then(|k| std::str::from_utf8(k).ok());
                name.map_or(DefaultRealm::Proc, default_realm)
            })
            .collect();
        JobFacts {
            meta: JobMeta::read(t),
            defaults,
        }
    }
}

/// The table's facts; `None` only if its slot holds another layer's value.
#[inline]
fn facts(t: &TableView) -> Option<&JobFacts> {
    t.derived(JobFacts::of)
}

impl TableView {
    /// The job's session and local node, as registered (read once per mapped table).
    #[inline]
    pub fn job_meta(&self) -> JobMeta {
        match facts(self) {
            Some(f) => f.meta,
            None => JobMeta::read(self),
        }
    }

    /// The default realm of key `kid` (its name's, standard 6.1; computed once per mapped
    /// table), or `None` when the table has no key `kid`.
    #[inline]
    pub(crate) fn default_realm(&self, kid: u32) -> Option<DefaultRealm> {
        match facts(self) {
            Some(f) => f.defaults.get(kid as usize).copied(),
            None => {
                let name = self.key_str(kid).filter(|_| kid < self.key_count())?;
                Some(std::str::from_utf8(name).map_or(DefaultRealm::Proc, default_realm))
            }
        }
    }
}
