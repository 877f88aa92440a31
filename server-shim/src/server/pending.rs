//! Posted values staged for one publication: what a server receives one value at a time (an
//! OpenPMIx gds module's `store` is called per key of a commit) but publishes as one generation
//! ([`Server::flush`]), so that a commit of K keys costs one root and one table write, not K.

use std::collections::HashSet;

use rshm_gds::modex::{FenceBatch, PostedParts, Scope, Staged as Change};
use rshm_gds::{Error, Result};

use super::{PostedData, PostedValue, Server, Withdrawn};

/// Values staged for one flush, each put into its namespace's fence batch when staged (its
/// bytes archived once, into the batch's arena: no value kept apart until the flush), and the
/// identity of each (what a failed flush withdraws). The buffers are kept across flushes.
#[derive(Default)]
pub(super) struct Pending {
    /// The staged namespaces, in the order they were first staged.
    namespaces: Vec<String>,
    /// One batch per namespace of `namespaces`.
    batches: Vec<FenceBatch>,
    /// Every staged value, in the order staged.
    items: Vec<Item>,
    /// The staged keys, one after another (`Item::key` ranges).
    keys: String,
    /// Whether some value was refused (staged as the withdrawal of its key).
    any_refused: bool,
    /// Emptied batches, their buffers kept for the next flushes.
    spare: Vec<FenceBatch>,
}

/// One staged value: its namespace (index in `namespaces`), rank, key (range in `keys`) and
/// whether the store refused it.
struct Item {
    ns: usize,
    rank: u32,
    key: (usize, usize),
    refused: bool,
}

impl Pending {
    /// The index of `ns`, added (with an empty batch) if it is new.
    fn namespace(&mut self, ns: &str) -> usize {
        if let Some(last) = self.items.last() {
            if self.namespaces[last.ns] == ns {
                return last.ns;
            }
        }
        match self.namespaces.iter().position(|n| n == ns) {
            Some(i) => i,
            None => {
                self.namespaces.push(ns.to_owned());
                self.batches.push(self.spare.pop().unwrap_or_default());
                self.namespaces.len() - 1
            }
        }
    }

    fn push(&mut self, ns: usize, rank: u32, key: &str, refused: bool) -> bool {
        let at = self.keys.len();
        self.keys.push_str(key);
        self.items.push(Item {
            ns,
            rank,
            key: (at, self.keys.len()),
            refused,
        });
        self.any_refused |= refused;
        self.items.len() == 1
    }

    fn id(&self, i: &Item) -> PostedKey<'_> {
        (&self.namespaces[i.ns], i.rank, &self.keys[i.key.0..i.key.1])
    }

    /// Forget everything staged, keeping the buffers.
    fn clear(&mut self) {
        self.namespaces.clear();
        for mut b in self.batches.drain(..) {
            b.clear();
            self.spare.push(b);
        }
        self.items.clear();
        self.keys.clear();
        self.any_refused = false;
    }

    /// Forget what is staged for `ns`.
    fn drop_namespace(&mut self, ns: &str) {
        let Some(n) = self.namespaces.iter().position(|x| x == ns) else {
            return;
        };
        self.namespaces.remove(n);
        self.batches.remove(n);
        self.items.retain(|i| i.ns != n);
        for i in &mut self.items {
            if i.ns > n {
                i.ns -= 1;
            }
        }
        self.any_refused = self.items.iter().any(|i| i.refused);
    }
}

/// What [`Server::flush`] published.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flushed {
    /// Staged values taken (published or refused).
    pub values: usize,
    /// Values left out because the store refused a value of their key (a type it does not
    /// hold, a reserved key, a special rank): those keys were withdrawn in the same generation,
    /// so readers ask the next store in line.
    pub refused: usize,
}

/// A flush that could not publish its values (a full filesystem).
#[derive(Debug)]
pub struct Unpublished {
    pub error: Error,
    /// What was withdrawn instead so that no older value is read: every staged key
    /// ([`Withdrawn::Key`]), or the whole posted tables of their namespaces
    /// ([`Withdrawn::Namespace`]), or, neither publishable, the store's posted data for good
    /// ([`Withdrawn::Store`]); `None` when not even that worked, and readers may
    /// then still find older values of the staged keys.
    pub withdrawn: Option<Withdrawn>,
}

/// (namespace, rank, key) of a staged value.
type PostedKey<'a> = (&'a str, u32, &'a str);

impl Server {
    /// Stage a committed value for the next [`Server::flush`]. Returns whether it is the only
    /// staged value (the caller schedules a flush then).
    pub fn stage(&mut self, v: PostedValue) -> bool {
        self.stage_ref(
            &v.nspace,
            v.rank,
            v.scope,
            &v.key,
            PostedData::Value(&v.value),
        )
    }

    /// [`Server::stage`] of a borrowed value: archived (or, a byte object, copied) into the
    /// staged batch now. A value the batch refuses (a reserved key, a bad scope or key, a type
    /// the store cannot archive) is staged as the withdrawal of its key.
    pub fn stage_ref(
        &mut self,
        ns: &str,
        rank: u32,
        scope: u8,
        key: &str,
        data: PostedData<'_>,
    ) -> bool {
        let p = &mut self.pending;
        let n = p.namespace(ns);
        let batch = &mut p.batches[n];
        let put = Scope::from_raw(scope).and_then(|scope| match data {
            PostedData::Value(v) => batch.put(rank, scope, key, v),
            PostedData::Bytes(b) => batch.put_bytes(rank, scope, key, b),
        });
        p.push(n, rank, key, put.is_err())
    }

    /// Stage the withdrawal of `key` of (`ns`, `rank`): a newer value the store cannot hold (so
    /// readers stop finding the older one). Returns as [`Server::stage`].
    pub fn stage_refused(&mut self, ns: &str, rank: u32, key: &str) -> bool {
        let n = self.pending.namespace(ns);
        self.pending.push(n, rank, key, true)
    }

    /// Whether values are staged, and by a process other than (`ns`, `rank`): a new commit
    /// begins, and the staged one can be flushed on its own.
    pub fn staged_by_other(&self, ns: &str, rank: u32) -> bool {
        let p = &self.pending;
        p.items
            .last()
            .is_some_and(|i| p.namespaces[i.ns] != ns || i.rank != rank)
    }

    /// How many values are staged.
    pub fn staged(&self) -> usize {
        self.pending.items.len()
    }

    /// Publish every staged value as one generation (none if nothing changes), in the order
    /// staged (latest wins). A value the store refuses withdraws its key in that generation
    /// instead. If the generation cannot be published, every staged key is withdrawn (one
    /// generation; failing that, the posted tables of their namespaces): clients then read
    /// those keys from the next store in line, never an older value from this one.
    pub fn flush(&mut self) -> std::result::Result<Flushed, Unpublished> {
        if self.pending.items.is_empty() {
            return Ok(Flushed::default());
        }
        let mut p = std::mem::take(&mut self.pending);
        let result = self.publish_staged(&mut p).map_err(|error| {
            let withdrawn = match self.withdraw_staged(&p) {
                Ok(w) => Some(w),
                // Nothing could be published: no reader may keep answering older values.
                Err(_) => self
                    .withdraw_posted_for_good()
                    .ok()
                    .map(|()| Withdrawn::Store),
            };
            Unpublished { withdrawn, error }
        });
        p.clear();
        self.pending = p;
        result
    }

    /// Publish pending values before another change of posted data, so that changes reach
    /// readers in the order they were made. A failure is handled as [`Server::flush`] handles
    /// it (callers that report it flush first themselves).
    pub(super) fn flush_first(&mut self) {
        if !self.pending.items.is_empty() {
            let _ = self.flush();
        }
    }

    /// Forget what is staged for `ns` (deregistered: its posted data goes anyway).
    pub(super) fn drop_staged(&mut self, ns: &str) {
        self.pending.drop_namespace(ns);
    }

    fn publish_staged(&mut self, p: &mut Pending) -> Result<Flushed> {
        self.check_posted_taken()?;
        if let Some(flushed) = self.publish_staged_small(p)? {
            return Ok(flushed);
        }
        let mut batches = std::mem::take(&mut p.batches);
        let p = &*p;
        let mut refused: HashSet<PostedKey<'_>> = HashSet::new();
        let mut nrefused = 0;
        if p.any_refused {
            refused.extend(p.items.iter().filter(|i| i.refused).map(|i| p.id(i)));
            nrefused = p
                .items
                .iter()
                .filter(|i| refused.contains(&p.id(i)))
                .count();
            // A refused put may leave its key in the batch, and an earlier value of a refused
            // key may be batched: batch again without the refused keys (the withdrawal stands
            // for every value of the key staged here; the next store in line has the latest).
            for (n, batch) in batches.iter_mut().enumerate() {
                let ns = p.namespaces[n].as_str();
                *batch = std::mem::take(batch)
                    .without(|rank, key| refused.contains(&(ns, rank, key)))?;
            }
        }
        let mut next: Vec<(&str, Change)> = Vec::with_capacity(batches.len());
        for (ns, batch) in p.namespaces.iter().map(String::as_str).zip(batches) {
            let fresh = PostedParts::new();
            let parts = self.posted.get(ns).unwrap_or(&fresh);
            let w = &mut self.writer;
            let mut change = parts.stage(batch, w, ns)?;
            for (_, rank, key) in refused.iter().filter(|(n, _, _)| *n == ns) {
                // A special rank posted nothing to withdraw.
                let _ = parts.withdraw_in(&mut change, *rank, key, w, ns);
            }
            if !change.is_empty() {
                next.push((ns, change));
            }
        }
        if !next.is_empty() {
            self.publish_changes(next)?;
        }
        Ok(Flushed {
            values: p.items.len(),
            refused: nrefused,
        })
    }

    /// Publish a commit of one rank of one namespace, with nothing refused, whose table goes
    /// straight from its batch into the pack ([`PostedParts::stage_small`]): `None` when the
    /// staged values are not such a commit.
    fn publish_staged_small(&mut self, p: &Pending) -> Result<Option<Flushed>> {
        let ([ns], [batch], false) = (&p.namespaces[..], &p.batches[..], p.any_refused) else {
            return Ok(None);
        };
        let Some(parts) = self.posted.get(ns.as_str()) else {
            return Ok(None);
        };
        let Some(commit) = parts.stage_small_batch(batch)? else {
            return Ok(None);
        };
        self.publish_small(ns, commit)?;
        Ok(Some(Flushed {
            values: p.items.len(),
            refused: 0,
        }))
    }

    /// Withdraw every staged key in one generation; failing that, the posted tables of their
    /// namespaces (a commit writing only a root).
    fn withdraw_staged(&mut self, p: &Pending) -> Result<Withdrawn> {
        let namespaces: Vec<&str> = p.namespaces.iter().map(String::as_str).collect();
        let mut next: Vec<(&str, Change)> = Vec::new();
        for (n, ns) in namespaces.iter().enumerate() {
            let Some(parts) = self.posted.get(*ns) else {
                continue;
            };
            let mut change = Change::default();
            for i in p.items.iter().filter(|i| i.ns == n) {
                let _ = parts.withdraw_in(&mut change, i.rank, p.id(i).2, &mut self.writer, ns);
            }
            if !change.is_empty() {
                next.push((ns, change));
            }
        }
        if next.is_empty() {
            return Ok(Withdrawn::Key);
        }
        if self.publish_changes(next).is_ok() {
            return Ok(Withdrawn::Key);
        }
        let mut tx = self.writer.begin();
        let mut removed = Vec::new();
        for ns in namespaces {
            if let Some(parts) = self.posted.get(ns) {
                parts.remove_all(&mut tx, ns)?;
                removed.push(ns);
            }
        }
        tx.commit()?;
        for ns in removed {
            self.posted.remove(ns);
        }
        Ok(Withdrawn::Namespace)
    }
}
