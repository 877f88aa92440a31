//! The PMI-2 calls over an initialized [`State`]: the KVS, node and job attributes, name
//! publishing and jobs. Reads go to the store first ([`State::read`]); what must reach the
//! server (puts, fences, publishing, spawning, connecting) goes to libpmix.

#![forbid(unsafe_code)]

use std::time::Duration;

use rshm_gds::jobdata::anlmap;
use rshm_gds::modex::Scope;

use crate::codes::*;
use crate::ffi::pmix::{self, App, Reach, RANK_UNDEF, RANK_WILDCARD};
use crate::state::State;

/// The PMIx key of node attribute `name` (PMI2_Info_PutNodeAttr): not a reserved key (those
/// start with "pmix"), and apart from KVS keys.
fn node_key(name: &str) -> String {
    format!("pmi2.node.{name}")
}

/// Whether a KVS key is in a reserved key space: PMIx's (`pmix*`, its attributes: a put there
/// would be lost behind the server's value) or this library's (`pmi2.*`: node attributes, the
/// ring). Such keys are refused at PMI2_KVS_Put, and no one has put them for PMI2_KVS_Get.
pub fn reserved_kvs_key(key: &str) -> bool {
    rshm_gds::jobdata::keys::is_reserved(key) || key.starts_with("pmi2.")
}

/// The KVS key of this library's ring exchange (PMIX_Ring).
const RING_KEY: &str = "pmi2.ring";

/// What a text read found: the text, or that there is none.
pub type Found = Option<String>;

impl State {
    /// The namespace a jobId names: NULL (None) or empty is this job.
    fn job<'a>(&'a self, job: Option<&'a str>) -> &'a str {
        match job {
            Some(j) if !j.is_empty() => j,
            _ => &self.ns,
        }
    }

    pub fn kvs_put(&self, key: &str, value: &str) -> Result<()> {
        if reserved_kvs_key(key) {
            return Err(Pmi2Error::new(
                PMI2_ERR_INVALID_KEY,
                format!("key {key:?} is reserved (pmix*: PMIx's keys; pmi2.*: this library's)"),
            ));
        }
        match self.singleton_put(key, value) {
            Some(()) => Ok(()),
            None => pmix::put_commit(Scope::Global, key, value),
        }
    }

    pub fn kvs_fence(&self) -> Result<()> {
        match self.singleton {
            Some(_) => Ok(()),
            None => pmix::commit_fence(),
        }
    }

    /// PMI2_KVS_Get: `f` gets the value. `job`: this job, or one this process spawned or
    /// connected to (any other is PMI2_ERR_INVALID_ARG at once, as is a `src` outside the
    /// job). `src` PMI2_ID_NULL: whichever process put `key` (the store's index of posted keys,
    /// PMIX_RANK_UNDEF; without a store, the ranks in order). Values are read as the fence
    /// left them, from the store or else from libpmix and its server without waiting for the
    /// key to appear (PMIX_IMMEDIATE): a key nobody put is None at once.
    pub fn kvs_get<T>(
        &self,
        job: Option<&str>,
        src: i32,
        key: &str,
        f: impl FnOnce(&str) -> T,
    ) -> Result<Option<T>> {
        let ns = self.job(job);
        let own = ns == self.ns;
        if !own
            && !self
                .jobs
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .contains(ns)
        {
            return Err(Pmi2Error::new(
                PMI2_ERR_INVALID_ARG,
                format!("job {ns:?} is not this job, nor one it spawned or connected to"),
            ));
        }
        if src < ID_NULL {
            return Err(Pmi2Error::new(
                PMI2_ERR_INVALID_ARG,
                format!("src_pmi_id {src}"),
            ));
        }
        let (size, reach) = match own {
            true => (self.size, Reach::Immediate),
            false => (
                self.read(ns, RANK_WILDCARD, "pmix.job.size", Reach::Wait, |t| {
                    t.parse::<u32>().ok()
                })?
                .flatten()
                .unwrap_or(0),
                Reach::Immediate,
            ),
        };
        if src >= 0 && src as u32 >= size {
            return Err(Pmi2Error::new(
                PMI2_ERR_INVALID_ARG,
                format!("src_pmi_id {src} outside job {ns:?} of {size}"),
            ));
        }
        if reserved_kvs_key(key) {
            return Ok(None);
        }
        if src >= 0 {
            return self.read(ns, src as u32, key, reach, f);
        }
        let mut f = Some(f);
        if let Some(Some(v)) =
            self.read_store(ns, RANK_UNDEF, key, |t| (f.take().expect("once"))(t))
        {
            return Ok(Some(v));
        }
        let f = f.take().expect("not called by the store");
        for r in 0..size {
            if let Some(v) = self.read(ns, r, key, reach, str::to_owned)? {
                return Ok(Some(f(&v)));
            }
        }
        Ok(None)
    }

    /// PMIX_Ring (Slurm's and MPICH's extension): every process of the job passes `value`;
    /// each gets the values of its left (rank - 1) and right (rank + 1) neighbours, the ring
    /// in rank order. A KVS put under this library's key and a fence (which also makes the
    /// caller's own puts visible, as PMI2_KVS_Fence does).
    pub fn ring(&self, value: &str) -> Result<(String, String)> {
        if self.singleton.is_some() {
            return Ok((value.to_owned(), value.to_owned()));
        }
        pmix::put_commit(Scope::Global, RING_KEY, value)?;
        pmix::commit_fence()?;
        let n = self.size;
        let side = |r: u32| -> Result<String> {
            self.read(&self.ns, r, RING_KEY, Reach::Immediate, str::to_owned)?
                .ok_or_else(|| {
                    Pmi2Error::new(PMI2_ERR_OTHER, format!("rank {r} put no ring value"))
                })
        };
        Ok((side((self.rank + n - 1) % n)?, side((self.rank + 1) % n)?))
    }

    /// This node's ranks of this job, sorted (PMIX_LOCAL_PEERS).
    pub fn local_ranks(&self) -> Result<&[u32]> {
        if let Some(v) = self.local.get() {
            return Ok(v);
        }
        let parse = |t: &str| -> Vec<u32> {
            let mut v: Vec<u32> = t.split(',').filter_map(|r| r.trim().parse().ok()).collect();
            v.sort_unstable();
            v
        };
        let v = self
            .read(&self.ns, RANK_WILDCARD, "pmix.lpeers", Reach::Wait, parse)?
            .unwrap_or_else(|| vec![self.rank]);
        Ok(self.local.get_or_init(|| v))
    }

    pub fn put_node_attr(&self, name: &str, value: &str) -> Result<()> {
        let key = node_key(name);
        match self.singleton_put(&key, value) {
            Some(()) => Ok(()),
            None => pmix::put_commit(Scope::Local, &key, value),
        }
    }

    /// PMI2_Info_GetNodeAttr: a value a process of this node put (the lowest rank's, if
    /// several did); `wait`: until one has.
    pub fn get_node_attr(&self, name: &str, wait: bool) -> Result<Found> {
        let key = node_key(name);
        let local = self.local_ranks()?.to_vec();
        let mut pause = Duration::from_micros(100);
        loop {
            for &r in &local {
                if let Some(v) = self.read(&self.ns, r, &key, Reach::Immediate, str::to_owned)? {
                    return Ok(Some(v));
                }
            }
            // A singleton has no peer to wait for.
            if !wait || self.singleton.is_some() {
                return Ok(None);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(10));
        }
    }

    /// PMI2_Info_GetNodeAttrIntArray: `localRanksCount`, `localRanks`, or a node attribute
    /// put as comma-separated integers. `cartCoords` is never set (no Cartesian topology).
    pub fn get_node_attr_ints(&self, name: &str, wait: bool) -> Result<Option<Vec<i64>>> {
        match name {
            "localRanksCount" => Ok(Some(vec![self.local_ranks()?.len() as i64])),
            "localRanks" => Ok(Some(
                self.local_ranks()?.iter().map(|&r| r.into()).collect(),
            )),
            "cartCoords" => Ok(None),
            _ => match self.get_node_attr(name, wait)? {
                Some(t) => ints(&t).map(Some),
                None => Ok(None),
            },
        }
    }

    /// The job's process mapping in the PMI vector notation: what the host registered as
    /// PMIX_ANL_MAP, else what the server stored at registration (`anlmap::META_KEY`), else
    /// built here by the same rule from every rank's node.
    pub fn process_mapping(&self) -> Result<Found> {
        if let Some(m) = self.mapping.get() {
            return Ok(m.clone());
        }
        let registered = self.read(
            &self.ns,
            RANK_WILDCARD,
            "pmix.anlmap",
            Reach::Wait,
            str::to_owned,
        )?;
        let m = match registered {
            Some(m) => Some(m),
            None => match self.read_meta(anlmap::META_KEY) {
                Some(m) => Some(m),
                None => self.build_mapping()?,
            },
        };
        Ok(self.mapping.get_or_init(|| m).clone())
    }

    fn build_mapping(&self) -> Result<Found> {
        let mut nodes = Vec::with_capacity(self.size as usize);
        for r in 0..self.size {
            let n = self
                .read(&self.ns, r, "pmix.nodeid", Reach::Wait, |t| {
                    t.parse::<u32>().ok()
                })?
                .flatten();
            match n {
                Some(n) => nodes.push(n),
                None => return Ok(None),
            }
        }
        // No length cap: the caller asked for the whole map.
        Ok(anlmap::vector(&nodes, usize::MAX))
    }

    /// PMI2_Info_GetJobAttr: `universeSize`, `PMI_process_mapping`, or a PMIx job-realm key by
    /// its own name (`pmix.*`). The topology attributes and `hasNameServ` are never set: PMIx
    /// does not say (publishing works where the server's host supports it: under Open MPI's
    /// mpirun, not under Slurm's PMIx plugin).
    pub fn get_job_attr(&self, name: &str) -> Result<Found> {
        match name {
            "universeSize" => self.read(
                &self.ns,
                RANK_WILDCARD,
                "pmix.univ.size",
                Reach::Wait,
                str::to_owned,
            ),
            "PMI_process_mapping" => self.process_mapping(),
            n if n.starts_with("pmix.") => {
                self.read(&self.ns, RANK_WILDCARD, n, Reach::Wait, str::to_owned)
            }
            _ => Ok(None),
        }
    }

    /// PMI2_Info_GetJobAttrIntArray: `localRanksCount` and `localRanks` (this node's), or a job
    /// attribute that is a comma-separated list of integers.
    pub fn get_job_attr_ints(&self, name: &str) -> Result<Option<Vec<i64>>> {
        match name {
            "localRanksCount" | "localRanks" => self.get_node_attr_ints(name, false),
            _ => match self.get_job_attr(name)? {
                Some(t) => ints(&t).map(Some),
                None => Ok(None),
            },
        }
    }

    pub fn publish(&self, service: &str, port: &str) -> Result<()> {
        self.needs_manager("PMI2_Nameserv_publish")?;
        pmix::publish(service, port)
    }

    pub fn lookup(&self, service: &str) -> Result<Found> {
        self.needs_manager("PMI2_Nameserv_lookup")?;
        pmix::lookup(service)
    }

    pub fn unpublish(&self, service: &str) -> Result<()> {
        self.needs_manager("PMI2_Nameserv_unpublish")?;
        pmix::unpublish(service)
    }

    pub fn spawn(&self, apps: &[App]) -> Result<String> {
        self.needs_manager("PMI2_Job_Spawn")?;
        let ns = pmix::spawn(apps)?;
        self.known_job(&ns, true);
        Ok(ns)
    }

    /// Remember (`known`) or forget another job whose KVS this process may read.
    fn known_job(&self, job: &str, known: bool) {
        let mut jobs = self
            .jobs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match known {
            true => jobs.insert(job.to_owned()),
            false => jobs.remove(job),
        };
    }

    /// PMI2_Job_Connect / Disconnect: nothing to do for this job itself; another job is
    /// connected with PMIx_Connect (collective over both jobs' processes).
    pub fn connect(&self, job: &str, connect: bool) -> Result<()> {
        if job == self.ns {
            return Ok(());
        }
        self.needs_manager("PMI2_Job_Connect")?;
        pmix::connect(&self.ns, job, connect)?;
        self.known_job(job, connect);
        Ok(())
    }
}

/// Comma-separated integers.
fn ints(t: &str) -> Result<Vec<i64>> {
    t.split(',')
        .map(|x| {
            x.trim().parse::<i64>().map_err(|_| {
                Pmi2Error::new(
                    PMI2_ERR_INVALID_VAL,
                    format!("not a list of integers: {t:?}"),
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_lists() {
        assert_eq!(ints("0,1, 2"), Ok(vec![0, 1, 2]));
        assert_eq!(ints("-3"), Ok(vec![-3]));
        assert_eq!(ints("1,x").unwrap_err().code, PMI2_ERR_INVALID_VAL);
    }

    #[test]
    fn node_keys_are_not_pmix_keys_and_not_kvs_keys() {
        assert!(!rshm_gds::jobdata::keys::is_reserved(&node_key("x")));
        assert!(reserved_kvs_key(&node_key("x")));
        assert!(reserved_kvs_key(RING_KEY));
        assert!(reserved_kvs_key("pmix.job.size") && reserved_kvs_key("pmix.hname"));
        assert!(!reserved_kvs_key("pmi2node") && !reserved_kvs_key("key-0"));
    }
}
