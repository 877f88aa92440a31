//! The client's side of PMIx_Get over an attached store: who is asking (the caller's own rank),
//! the answer policy's decision (`gds::jobdata::policy`: which table answers, what a miss
//! means), and the values PMIX_GET_POINTER_VALUES hands out.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use abi::c::HeldValue;
use abi::get::GetRequest;
use abi::types::pmix_value_t;
use abi::AbiError;
use gds::jobdata::{self, Decision, Pass};
use gds::{Error, Pin, Reader, Result, TableView, ValueRef};

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

    /// PMIx_Get of `key` for (`ns`, `rank`) (a raw `pmix_rank_t`) as the answer policy decides
    /// it (`gds::jobdata::policy`, docs/jobdata.md "Answer policy"): the store's value,
    /// NOT_FOUND, or a pass to a host PMIx library. Inlined into the C entry points: the common
    /// Get (a reserved key, no directive) is one job-table lookup, and its value reaches the
    /// caller's pmix_value_t without a trip through memory.
    #[inline(always)]
    pub fn decide<'p>(
        &'p self,
        pin: &'p Pin<'_>,
        ns: &str,
        rank: u32,
        key: &str,
        req: &GetRequest,
    ) -> Decision<'p> {
        jobdata::decide(
            &self.reader,
            pin,
            self.caller(ns),
            ns,
            rank,
            key,
            &req.directives,
        )
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

/// A Get's outcome for a front end: the preload and the component act on the difference between
/// NOT_FOUND and a pass; the direct client turns both into a status ([`Outcome::direct`]).
#[derive(Debug)]
pub enum Outcome {
    /// The store's value was written to the caller's location.
    Answered,
    /// `PMIX_ERR_NOT_FOUND`, settled by the store ([`Decision::NotFound`]).
    NotFound,
    /// For a host PMIx library ([`Decision::Pass`]).
    Pass(Pass),
}

impl Outcome {
    /// The outcome where there is no host library (`rshm_client_get`).
    #[inline]
    pub fn direct(self, req: &GetRequest) -> std::result::Result<(), AbiError> {
        match self {
            Outcome::Answered => Ok(()),
            Outcome::NotFound => Err(AbiError::Store(Error::NotFound)),
            Outcome::Pass(p) => Err(without_host(p, req)),
        }
    }
}

/// The status of a passed Get where there is no host library to pass it to.
#[cold]
pub fn without_host(p: Pass, req: &GetRequest) -> AbiError {
    match p.into_error() {
        Some(e) => AbiError::Store(e),
        None => AbiError::NotSupported(format!(
            "directive(s) only a PMIx host library can honour (refresh: {}, unknown: {:?})",
            req.directives.refresh, req.unknown
        )),
    }
}
