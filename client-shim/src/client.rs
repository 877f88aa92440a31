//! The client's side of PMIx_Get over an attached store: who is asking (the caller's own rank),
//! the answer policy's decision (`rshm_gds::jobdata::policy`: which table answers, what a miss
//! means), and the values PMIX_GET_POINTER_VALUES hands out.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use rshm_abi::c::HeldValue;
use rshm_abi::get::GetRequest;
use rshm_abi::types::pmix_value_t;
use rshm_abi::AbiError;
use rshm_gds::jobdata::{self, Decision, Pass};
use rshm_gds::{Error, Pin, Reader, Result, TableView, ValueRef};

/// The environment a client needs to attach (setup_fork), named once in `abi`.
pub use rshm_abi::env;

/// An attached client: the store, and who this process is.
pub struct Client {
    reader: Reader,
    me: Option<(String, u32)>,
    /// Where job tables are read: part DATA, or this process's NUMA replica of them
    /// ([`crate::locality::numa_part`], chosen once at attach).
    data_part: u32,
    /// PMIX_GET_POINTER_VALUES answers, by the hash of what was asked ([`Asked`]): a lookup
    /// by borrowed strings, where a map keyed by owned ones would allocate on every Get.
    pointers: Mutex<HashMap<u64, Vec<Held>>>,
}

/// What a Get asked: namespace, rank, key.
pub type Asked<'a> = (&'a str, u32, &'a str);

/// A PMIX_GET_POINTER_VALUES answer: what was asked, the `pmix_value_t` the caller was given,
/// which stored value it is, and the table whose mapping its byte pointers may borrow.
struct Held {
    ns: Box<str>,
    rank: u32,
    key: Box<str>,
    /// The stored value's address in `table`'s mapping; 0 for a value with none (a column
    /// scalar, a copy), which `scalar` then identifies.
    addr: usize,
    scalar: Option<rshm_gds::Value>,
    value: HeldValue,
    table: Arc<TableView>,
}

impl Held {
    fn is(&self, (ns, rank, key): Asked<'_>) -> bool {
        self.rank == rank && *self.ns == *ns && *self.key == *key
    }
}

fn asked_hash((ns, rank, key): Asked<'_>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (ns, rank, key).hash(&mut h);
    h.finish()
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
            data_part: crate::locality::numa_part(&reader),
            reader,
            me: me.or_else(identity_from_env),
            pointers: Mutex::new(HashMap::new()),
        })
    }

    /// The part job tables are read from (`rshm_gds::part::DATA`, or `DATA_REPLICAS + domain`).
    pub fn data_part(&self) -> u32 {
        self.data_part
    }

    /// The attached reader.
    pub fn reader(&self) -> &Reader {
        &self.reader
    }

    /// The caller's rank, when it asks about its own namespace `ns`.
    #[inline]
    fn caller(&self, ns: &str) -> Option<u32> {
        match &self.me {
            Some((n, r)) if rshm_gds::same_bytes(n.as_bytes(), ns.as_bytes()) => Some(*r),
            _ => None,
        }
    }

    /// The caller's identity.
    pub fn me(&self) -> Option<(&str, u32)> {
        self.me.as_ref().map(|(n, r)| (n.as_str(), *r))
    }

    /// PMIx_Get of `key` for (`ns`, `rank`) (a raw `pmix_rank_t`) as the answer policy decides
    /// it (`rshm_gds::jobdata::policy`, docs/jobdata.md "Answer policy"): the store's value,
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
        jobdata::decide_in(
            &self.reader,
            pin,
            self.data_part,
            self.caller(ns),
            ns,
            rank,
            key,
            &req.directives,
        )
    }

    /// Keep a PMIX_GET_POINTER_VALUES answer to `asked` alive, and return the `pmix_value_t` to
    /// hand out. The standard keeps such a value valid until it is replaced (5.3): the same
    /// stored value asked again returns the same `pmix_value_t`; a different one (the store moved
    /// on, other directives) replaces the one held for that namespace, rank and key, whose
    /// pointer becomes invalid. So a process holds one value (and at most one table mapping)
    /// per key it asks, however many Gets and generations; [`Client::release_pointers`] and
    /// detach drop them all.
    pub fn hold(
        &self,
        asked: Asked<'_>,
        v: &ValueRef<'_>,
        table: &Arc<TableView>,
    ) -> std::result::Result<*mut pmix_value_t, AbiError> {
        // The identity of a stored value: its address in the mapping (unique while mapped, and
        // the held table keeps it mapped). Column scalars have no address: the table and the
        // value itself identify them.
        let addr = match v {
            ValueRef::Archived(a) => *a as *const _ as usize,
            ValueRef::Bytes(b) => b.as_ptr() as usize,
            _ => 0,
        };
        let in_table = addr != 0 && table.contains_addr(addr);
        let addr = if in_table { addr } else { 0 };
        let scalar = (addr == 0).then(|| v.to_value());
        // A panic caught while another call held the cache (the map itself stays consistent)
        // must not fail every later pointer-mode Get: take the lock back from the poison.
        let mut map = self.pointers.lock().unwrap_or_else(PoisonError::into_inner);
        let bucket = map.entry(asked_hash(asked)).or_default();
        let slot = bucket.iter().position(|h| h.is(asked));
        if let Some(h) = slot.map(|i| &mut bucket[i]) {
            if h.addr == addr && Arc::ptr_eq(&h.table, table) && h.scalar == scalar {
                return Ok(h.value.as_mut_ptr());
            }
        }
        // Bytes may borrow the mapping only if it is `table`'s (resources answers are copied).
        let mut value = HeldValue::new(v, in_table)?;
        let ptr = value.as_mut_ptr();
        let held = Held {
            ns: asked.0.into(),
            rank: asked.1,
            key: asked.2.into(),
            addr,
            scalar,
            value,
            table: table.clone(),
        };
        match slot {
            Some(i) => bucket[i] = held,
            None => bucket.push(held),
        }
        Ok(ptr)
    }

    /// Drop every PMIX_GET_POINTER_VALUES answer given so far (their pointers become invalid).
    pub fn release_pointers(&self) -> usize {
        let mut map = self.pointers.lock().unwrap_or_else(PoisonError::into_inner);
        let n = map.values().map(Vec::len).sum();
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
        None => {
            let mut named = Vec::new();
            if req.mode == rshm_abi::get::Mode::Pointer {
                named.push(
                    "PMIX_GET_POINTER_VALUES (this key's answer is built, not read in place: \
                     ask for it in copy or static mode)"
                        .to_owned(),
                );
            }
            if req.directives.refresh {
                named.push("PMIX_GET_REFRESH_CACHE".to_owned());
            }
            named.extend(req.unknown.iter().map(|k| format!("{k} (unknown)")));
            AbiError::NotSupported(format!(
                "directive(s) only a PMIx host library can honour: {}",
                named.join(", ")
            ))
        }
    }
}
