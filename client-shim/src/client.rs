//! The client's side of PMIx_Get over an attached store: which table answers (job data for
//! reserved keys, posted data otherwise), who is asking (locality and the caller's own rank),
//! and the values PMIX_GET_POINTER_VALUES hands out.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use abi::c::HeldValue;
use abi::get::GetRequest;
use abi::types::pmix_value_t;
use abi::AbiError;
use gds::jobdata::{self, keys, resources, TargetRank};
use gds::modex;
use gds::{part, Error, Pin, Reader, Result, TableView, ValueRef};

/// The environment a client needs to attach (setup_fork), named once in `abi`.
pub use abi::env;

/// An attached client: the store, and who this process is.
pub struct Client {
    reader: Reader,
    me: Option<(String, u32)>,
    pointers: Mutex<HashMap<usize, Held>>,
}

/// A PMIX_GET_POINTER_VALUES answer: the `pmix_value_t` the caller was given, and the table
/// whose mapping its byte pointers may borrow.
struct Held {
    value: HeldValue,
    _table: Arc<TableView>,
}

/// Who this process is, from the environment.
pub fn identity_from_env() -> Option<(String, u32)> {
    let get = |a: &str, b: &str| std::env::var(a).or_else(|_| std::env::var(b)).ok();
    let ns = get(env::NSPACE, "PMIX_NAMESPACE")?;
    let rank = get(env::RANK, "PMIX_RANK")?.parse().ok()?;
    Some((ns, rank))
}

impl Client {
    /// Attach to the store at `path`, or `$RSHM_STORE`; `me` is the caller (None: from the
    /// environment, if set there).
    pub fn attach(path: Option<&Path>, me: Option<(String, u32)>) -> Result<Client> {
        let reader = match path {
            Some(p) => Reader::attach(p)?,
            None => Reader::attach_from_env()?,
        };
        Ok(Client {
            reader,
            me: me.or_else(identity_from_env),
            pointers: Mutex::new(HashMap::new()),
        })
    }

    /// The attached reader.
    pub fn reader(&self) -> &Reader {
        &self.reader
    }

    /// The caller's rank, when it asks about its own namespace `ns`.
    #[inline]
    fn caller(&self, ns: &str) -> Option<u32> {
        match &self.me {
            Some((n, r)) if gds::same_bytes(n.as_bytes(), ns.as_bytes()) => Some(*r),
            _ => None,
        }
    }

    /// The caller's identity.
    pub fn me(&self) -> Option<(&str, u32)> {
        self.me.as_ref().map(|(n, r)| (n.as_str(), *r))
    }

    /// PMIx_Get of `key` for (`ns`, `rank`) as the store decides it: ch. 6 for reserved keys,
    /// 5.3/5.4 for posted data (then the job data, for non-reserved keys the host registered).
    #[inline(always)]
    pub fn get<'p>(
        &'p self,
        pin: &'p Pin<'_>,
        ns: &str,
        rank: u32,
        key: &str,
        req: &GetRequest,
    ) -> Result<(ValueRef<'p>, &'p Arc<TableView>)> {
        // Most gets: a reserved key with no qualifier that the job table answers as it stands
        // (`jobdata::get_plain`). Kept small and inlined into the C entry points, so the value
        // reaches the caller's pmix_value_t without a trip through memory.
        if keys::is_reserved(key) && req.qualifiers.is_plain() {
            if let Ok(t) = self.reader.table_arc(pin, ns, part::DATA) {
                let caller = self.caller(ns);
                if let Some(v) = jobdata::get_plain(t, caller, TargetRank::from_raw(rank), key) {
                    return Ok((v, t));
                }
            }
        }
        self.get_general(pin, ns, rank, key, req)
    }

    /// [`Client::get`] for everything else: the retrieval rules in full, posted data.
    #[inline(never)]
    fn get_general<'p>(
        &'p self,
        pin: &'p Pin<'_>,
        ns: &str,
        rank: u32,
        key: &str,
        req: &GetRequest,
    ) -> Result<(ValueRef<'p>, &'p Arc<TableView>)> {
        let target = TargetRank::from_raw(rank);
        let caller = self.caller(ns);
        let job = self.reader.table_arc(pin, ns, part::DATA);
        let from_job = |job: Result<&'p Arc<TableView>>| {
            let t = job?;
            // The resources table is looked up only for a node value the namespace lacks.
            let res = || {
                self.reader
                    .table(pin, resources::NAMESPACE, part::RESOURCES)
                    .ok()
            };
            let v = jobdata::get_by_rules(t, res, caller, target, key, &req.qualifiers)?;
            // A value from the resources table borrows that mapping; the job table handle is
            // kept for pointer mode, so resources answers are copied there (see `hold`).
            Ok((v, t))
        };
        if keys::is_reserved(key) {
            return from_job(job);
        }
        // A non-reserved key is posted data (5.3), unless the host registered it with the job
        // (a custom key of a registration array, which PMIx answers too): a realm qualifier
        // asks for the job data; otherwise the job data answers what was never posted.
        if !req.qualifiers.is_plain() {
            return from_job(job);
        }
        match self.posted_get(pin, ns, target, key, req, &job) {
            Err(Error::NotFound) => from_job(job),
            r => r,
        }
    }

    /// The posted-data half of [`Client::get`] (5.3, 5.4).
    fn posted_get<'p>(
        &'p self,
        pin: &'p Pin<'_>,
        ns: &str,
        target: TargetRank,
        key: &str,
        req: &GetRequest,
        job: &Result<&'p Arc<TableView>>,
    ) -> Result<(ValueRef<'p>, &'p Arc<TableView>)> {
        let posted = self.reader.table_arc(pin, ns, part::POSTED)?;
        let local = |r: u32| match job {
            Ok(t) => jobdata::is_local(t, r).unwrap_or(false),
            Err(_) => false,
        };
        let is_local = match target {
            TargetRank::Rank(r) => local(r),
            TargetRank::Undef => modex::undef_rank(posted, key).is_some_and(local),
            TargetRank::Wildcard => false,
        };
        let v = modex::get(posted, target, key, is_local, req.data_scope)?;
        Ok((v, posted))
    }

    /// Keep a PMIX_GET_POINTER_VALUES answer alive until [`Client::release_pointers`] or
    /// detach, and return the `pmix_value_t` to hand out. The same stored value asked again
    /// returns the same `pmix_value_t`.
    pub fn hold(
        &self,
        v: &ValueRef<'_>,
        table: &Arc<TableView>,
    ) -> std::result::Result<*mut pmix_value_t, AbiError> {
        // The identity of a stored value: its address in the mapping (unique while mapped, and
        // the entry keeps it mapped). Column scalars have no address: key by table + type +
        // value, which is just as stable.
        let key = match v {
            ValueRef::Archived(a) => *a as *const _ as usize,
            ValueRef::Bytes(b) => b.as_ptr() as usize,
            _ => 0,
        };
        let in_table = key != 0 && table.contains_addr(key);
        // A panic caught while another call held the cache (the map itself stays consistent)
        // must not fail every later pointer-mode Get: take the lock back from the poison.
        let mut map = self.pointers.lock().unwrap_or_else(PoisonError::into_inner);
        if in_table {
            if let Some(h) = map.get_mut(&key) {
                return Ok(h.value.as_mut_ptr());
            }
        }
        // Bytes may borrow the mapping only if it is `table`'s (resources answers are copied).
        let mut value = HeldValue::new(v, in_table)?;
        let ptr = value.as_mut_ptr();
        let held = Held {
            value,
            _table: table.clone(),
        };
        // Unkeyed answers (scalars, copies) get a fresh slot keyed by their own address.
        let slot = if in_table { key } else { ptr as usize };
        map.insert(slot, held);
        Ok(ptr)
    }

    /// Drop every PMIX_GET_POINTER_VALUES answer given so far (their pointers become invalid).
    pub fn release_pointers(&self) -> usize {
        let mut map = self.pointers.lock().unwrap_or_else(PoisonError::into_inner);
        let n = map.len();
        map.clear();
        n
    }
}
