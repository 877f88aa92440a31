//! The library's state between PMI2_Init and PMI2_Finalize: who this process is, its job's
//! size, the attached store (when the server announced one), and where each read was answered.

#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

use rshm_client::Client;
use rshm_gds::jobdata::Decision;
use rshm_gds::{Value, ValueRef};

use crate::codes::*;
use crate::ffi::pmix::{self, PVal, Reach};

/// An initialized library.
pub struct State {
    pub ns: String,
    pub rank: u32,
    pub size: u32,
    pub appnum: i32,
    pub spawned: bool,
    /// The store of the server's rshm gds component, when it announced one and it attaches.
    pub store: Option<Client>,
    /// This node's ranks, sorted (read once, at first use).
    pub local: OnceLock<Vec<u32>>,
    /// The process mapping (read or built once, at first use).
    pub mapping: OnceLock<Option<String>>,
    /// A singleton (no process manager to connect to): its own KVS puts and node attributes,
    /// by PMIx key; None under a PMIx server.
    pub singleton: Option<Mutex<HashMap<String, String>>>,
    /// The other jobs whose KVS this process may read: those it spawned or connected to.
    pub jobs: Mutex<HashSet<String>>,
    /// Reads answered by the store, and by libpmix.
    pub from_store: AtomicU64,
    pub from_pmix: AtomicU64,
}

static STATE: RwLock<Option<Arc<State>>> = RwLock::new(None);

/// Set by PMI2_Finalize: libpmix cannot be initialized again in the same process (its
/// connection to the server is gone: a second PMIx_Init succeeds, and the fence after it
/// fails), so a PMI2_Init after PMI2_Finalize is refused.
static FINALIZED: AtomicBool = AtomicBool::new(false);

/// The initialized state, or PMI2_ERR_INIT.
pub fn current() -> Result<Arc<State>> {
    STATE
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
        .ok_or_else(|| Pmi2Error::new(PMI2_ERR_INIT, "PMI2_Init has not been called"))
}

pub fn initialized() -> bool {
    STATE
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .is_some()
}

/// Whether a PMIx server started this process (its environment names one).
fn under_pmix_server() -> bool {
    std::env::vars_os().any(|(k, _)| {
        let k = k.to_string_lossy();
        k == "PMIX_NAMESPACE" || k.starts_with("PMIX_SERVER_URI")
    })
}

/// PMI2_Init: PMIx_Init, then attach the store announced in `$RSHM_STORE` (if any) and read the
/// job's size, this process's app number and whether it was spawned. A process no PMIx server
/// started is a singleton (the API's "singleton init"): rank 0 of a job of 1, appnum 0.
pub fn init() -> Result<Arc<State>> {
    let mut slot = STATE.write().unwrap_or_else(PoisonError::into_inner);
    if slot.is_some() {
        return Err(Pmi2Error::new(PMI2_ERR_INIT, "PMI2_Init called twice"));
    }
    if FINALIZED.load(Ordering::Acquire) {
        return Err(Pmi2Error::new(
            PMI2_ERR_INIT,
            "PMI2_Init after PMI2_Finalize (PMIx cannot be initialized again)",
        ));
    }
    if !under_pmix_server() {
        let s = Arc::new(State {
            ns: format!("singleton-{}", std::process::id()),
            rank: 0,
            size: 1,
            appnum: 0,
            spawned: false,
            store: None,
            local: OnceLock::new(),
            mapping: OnceLock::new(),
            singleton: Some(Mutex::new(HashMap::new())),
            jobs: Mutex::new(HashSet::new()),
            from_store: AtomicU64::new(0),
            from_pmix: AtomicU64::new(0),
        });
        *slot = Some(s.clone());
        return Ok(s);
    }
    let (ns, rank) = pmix::init()?;
    let store = std::env::var_os(rshm_abi::env::STORE)
        .and_then(|_| Client::attach(None, Some((ns.clone(), rank))).ok());
    let mut s = State {
        ns,
        rank,
        size: 0,
        appnum: -1,
        spawned: false,
        store,
        local: OnceLock::new(),
        mapping: OnceLock::new(),
        singleton: None,
        jobs: Mutex::new(HashSet::new()),
        from_store: AtomicU64::new(0),
        from_pmix: AtomicU64::new(0),
    };
    let ns = s.ns.clone();
    let num = |t: &str| t.parse::<i64>().ok();
    s.size = s
        .read(&ns, pmix::RANK_WILDCARD, "pmix.job.size", Reach::Wait, num)?
        .flatten()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| Pmi2Error::new(PMI2_ERR_OTHER, "PMIx gives no job size"))?;
    s.appnum = s
        .read(&ns, rank, "pmix.appnum", Reach::Wait, num)?
        .flatten()
        .and_then(|n| i32::try_from(n).ok())
        .unwrap_or(-1);
    s.spawned = s
        .read(&ns, rank, "pmix.spawned", Reach::Wait, |t| t == "true")?
        .unwrap_or(false);
    let s = Arc::new(s);
    *slot = Some(s.clone());
    Ok(s)
}

/// PMI2_Finalize: forget the state (the store is unmapped when the last call using it ends),
/// write the counters to `$RSHM_PMI2_STATS/<pid>` if asked, PMIx_Finalize.
pub fn finalize() -> Result<()> {
    let s = STATE
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
        .ok_or_else(|| Pmi2Error::new(PMI2_ERR_INIT, "PMI2_Init has not been called"))?;
    FINALIZED.store(true, Ordering::Release);
    if let Some(dir) = std::env::var_os("RSHM_PMI2_STATS") {
        let path = std::path::Path::new(&dir).join(std::process::id().to_string());
        let _ = std::fs::write(
            path,
            format!(
                "rank {} attached {} store {} pmix {}\n",
                s.rank,
                s.store.is_some(),
                s.from_store.load(Ordering::Relaxed),
                s.from_pmix.load(Ordering::Relaxed)
            ),
        );
    }
    if s.singleton.is_some() {
        return Ok(());
    }
    drop(s);
    pmix::finalize()
}

/// A stored value as PMI-2 text: strings as they are, numbers in decimal, bools true/false.
fn stored_text<'a>(v: &ValueRef<'a>) -> Option<Cow<'a, str>> {
    if let Some(s) = v.as_str() {
        return Some(Cow::Borrowed(s));
    }
    Some(Cow::Owned(match v.to_value() {
        Value::Bool(b) => b.to_string(),
        Value::Byte(n) | Value::Uint8(n) => n.to_string(),
        Value::Uint16(n) => n.to_string(),
        Value::Uint(n) | Value::Uint32(n) => n.to_string(),
        Value::Uint64(n) | Value::Size(n) => n.to_string(),
        Value::Int(n) | Value::Int32(n) | Value::Pid(n) => n.to_string(),
        Value::Int8(n) => n.to_string(),
        Value::Int16(n) => n.to_string(),
        Value::Int64(n) => n.to_string(),
        Value::ProcRank(n) => n.to_string(),
        _ => return None,
    }))
}

fn pmix_text(v: &PVal) -> Option<Cow<'_, str>> {
    Some(match v {
        PVal::Str(s) => Cow::Borrowed(s.as_str()),
        PVal::Int(n) => Cow::Owned(n.to_string()),
        PVal::Uint(n) => Cow::Owned(n.to_string()),
        PVal::Bool(b) => Cow::Owned(b.to_string()),
        PVal::Other(_) => return None,
    })
}

/// Where a read was answered.
enum From {
    Store,
    Pmix,
}

impl State {
    fn count(&self, from: From) {
        let c = match from {
            From::Store => &self.from_store,
            From::Pmix => &self.from_pmix,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// The store's answer to PMIx_Get of (`ns`, `rank`)'s `key` as text, handed to `f`:
    /// Some(answer), or None when the store leaves the Get to libpmix.
    pub fn read_store<T>(
        &self,
        ns: &str,
        rank: u32,
        key: &str,
        f: impl FnOnce(&str) -> T,
    ) -> Option<Option<T>> {
        let c = self.store.as_ref()?;
        let pin = c.reader().pin();
        match c.decide(&pin, ns, rank, key, &rshm_abi::get::NO_DIRECTIVES) {
            Decision::Answer(v, _) => {
                let t = stored_text(&v)?;
                self.count(From::Store);
                Some(Some(f(&t)))
            }
            Decision::NotFound => {
                self.count(From::Store);
                Some(None)
            }
            Decision::Pass(_) => None,
        }
    }

    /// PMIx_Get of (`ns`, `rank`)'s `key` as text, handed to `f`: from the store when it
    /// answers, else from libpmix (as far as `reach` says). None: not found.
    pub fn read<T>(
        &self,
        ns: &str,
        rank: u32,
        key: &str,
        reach: Reach,
        f: impl FnOnce(&str) -> T,
    ) -> Result<Option<T>> {
        if let Some(own) = &self.singleton {
            return Ok(self.singleton_read(own, ns, rank, key).map(|t| f(&t)));
        }
        let mut f = Some(f);
        if let Some(answer) = self.read_store(ns, rank, key, |t| (f.take().expect("once"))(t)) {
            return Ok(answer);
        }
        self.count(From::Pmix);
        let v = pmix::get(ns, rank, key, reach)?;
        let f = f.take().expect("not called by the store");
        Ok(v.as_ref().and_then(pmix_text).map(|t| f(&t)))
    }

    /// A singleton's answer: its own puts, and the job of one process.
    fn singleton_read(
        &self,
        own: &Mutex<HashMap<String, String>>,
        ns: &str,
        rank: u32,
        key: &str,
    ) -> Option<String> {
        // Rank 0, or any (wildcard, undef).
        if ns != self.ns || (rank != 0 && rank < pmix::RANK_WILDCARD) {
            return None;
        }
        match key {
            "pmix.job.size" | "pmix.univ.size" | "pmix.local.size" => Some("1".into()),
            "pmix.lpeers" | "pmix.appnum" | "pmix.nodeid" => Some("0".into()),
            "pmix.spawned" => Some("false".into()),
            k if rshm_gds::jobdata::keys::is_reserved(k) => None,
            k => own
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(k)
                .cloned(),
        }
    }

    /// A singleton keeps what it puts (there is no one else to see it); None: not a singleton.
    pub fn singleton_put(&self, key: &str, value: &str) -> Option<()> {
        let own = self.singleton.as_ref()?;
        own.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.to_owned(), value.to_owned());
        Some(())
    }

    /// The error of a call that needs a process manager, for a singleton.
    pub fn needs_manager(&self, what: &str) -> Result<()> {
        match self.singleton {
            Some(_) => Err(Pmi2Error::new(
                PMI2_ERR_OTHER,
                format!("{what}: a singleton has no process manager"),
            )),
            None => Ok(()),
        }
    }

    /// A meta value of this job's table in the store (never a PMIx answer).
    pub fn read_meta(&self, key: &str) -> Option<String> {
        let c = self.store.as_ref()?;
        let pin = c.reader().pin();
        let v = c
            .reader()
            .get(
                &pin,
                &self.ns,
                rshm_gds::part::DATA,
                rshm_gds::Realm::Meta,
                key,
            )
            .ok()?;
        let t = v.as_str()?.to_owned();
        self.count(From::Store);
        Some(t)
    }
}
