//! Posted values staged for one publication: what a server receives one value at a time (an
//! OpenPMIx gds module's `store` is called per key of a commit) but publishes as one generation
//! ([`Server::flush`]), so that a commit of K keys costs one root and one table write, not K.

use std::collections::HashSet;

use gds::modex::{FenceBatch, PostedParts, Scope, Staged as Change};
use gds::{Error, Result, Value};

use super::{PostedValue, Server, Withdrawn};

/// One staged change of posted data.
pub(super) struct Staged {
    nspace: String,
    rank: u32,
    scope: u8,
    key: String,
    /// `None`: a value the store cannot hold; its key is withdrawn at the flush.
    value: Option<Value>,
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

impl Staged {
    fn id(&self) -> PostedKey<'_> {
        (&self.nspace, self.rank, &self.key)
    }
}

impl Server {
    /// Stage a committed value for the next [`Server::flush`]. Returns whether it is the only
    /// staged value (the caller schedules a flush then).
    pub fn stage(&mut self, v: PostedValue) -> bool {
        self.pending.push(Staged {
            nspace: v.nspace,
            rank: v.rank,
            scope: v.scope,
            key: v.key,
            value: Some(v.value),
        });
        self.pending.len() == 1
    }

    /// Stage the withdrawal of `key` of (`ns`, `rank`): a newer value the store cannot hold (so
    /// readers stop finding the older one). Returns as [`Server::stage`].
    pub fn stage_refused(&mut self, ns: &str, rank: u32, key: &str) -> bool {
        self.pending.push(Staged {
            nspace: ns.to_owned(),
            rank,
            scope: Scope::Global as u8,
            key: key.to_owned(),
            value: None,
        });
        self.pending.len() == 1
    }

    /// Whether values are staged, and by a process other than (`ns`, `rank`): a new commit
    /// begins, and the staged one can be flushed on its own.
    pub fn staged_by_other(&self, ns: &str, rank: u32) -> bool {
        self.pending
            .last()
            .is_some_and(|p| p.nspace != ns || p.rank != rank)
    }

    /// How many values are staged.
    pub fn staged(&self) -> usize {
        self.pending.len()
    }

    /// Publish every staged value as one generation (none if nothing changes), in the order
    /// staged (latest wins). A value the store refuses withdraws its key in that generation
    /// instead. If the generation cannot be published, every staged key is withdrawn (one
    /// generation; failing that, the posted tables of their namespaces): clients then read
    /// those keys from the next store in line, never an older value from this one.
    pub fn flush(&mut self) -> std::result::Result<Flushed, Unpublished> {
        let items = std::mem::take(&mut self.pending);
        if items.is_empty() {
            return Ok(Flushed::default());
        }
        self.publish_staged(&items).map_err(|error| {
            let withdrawn = match self.withdraw_staged(&items) {
                Ok(w) => Some(w),
                // Nothing could be published: no reader may keep answering older values.
                Err(_) => self
                    .withdraw_posted_for_good()
                    .ok()
                    .map(|()| Withdrawn::Store),
            };
            Unpublished { withdrawn, error }
        })
    }

    /// Publish pending values before another change of posted data, so that changes reach
    /// readers in the order they were made. A failure is handled as [`Server::flush`] handles
    /// it (callers that report it flush first themselves).
    pub(super) fn flush_first(&mut self) {
        if !self.pending.is_empty() {
            let _ = self.flush();
        }
    }

    /// Forget what is staged for `ns` (deregistered: its posted data goes anyway).
    pub(super) fn drop_staged(&mut self, ns: &str) {
        self.pending.retain(|p| p.nspace != ns);
    }

    fn publish_staged(&mut self, items: &[Staged]) -> Result<Flushed> {
        self.check_posted_taken()?;
        let (mut batches, refused) = batches(items, &HashSet::new());
        // A refused put may leave its key in the batch, and an earlier value of a refused key
        // may be batched: batch again without the refused keys (the withdrawal stands for every
        // value of the key staged here; the next store in line has the latest).
        if items
            .iter()
            .any(|i| i.value.is_some() && refused.contains(&i.id()))
        {
            batches = self::batches(items, &refused).0;
        }
        let nrefused = items.iter().filter(|i| refused.contains(&i.id())).count();
        let mut next: Vec<(&str, Change)> = Vec::with_capacity(batches.len());
        for (ns, batch) in batches {
            let fresh = PostedParts::new();
            let parts = self.posted.get(ns).unwrap_or(&fresh);
            let mut change = parts.stage(batch)?;
            for (_, rank, key) in refused.iter().filter(|(n, _, _)| *n == ns) {
                // A special rank posted nothing to withdraw.
                let _ = parts.withdraw_in(&mut change, *rank, key);
            }
            if !change.is_empty() {
                next.push((ns, change));
            }
        }
        if !next.is_empty() {
            self.publish_changes(next)?;
        }
        Ok(Flushed {
            values: items.len(),
            refused: nrefused,
        })
    }

    /// Withdraw every staged key in one generation; failing that, the posted tables of their
    /// namespaces (a commit writing only a root).
    fn withdraw_staged(&mut self, items: &[Staged]) -> Result<Withdrawn> {
        let namespaces = in_order(items.iter().map(|i| i.nspace.as_str()));
        let mut next: Vec<(&str, Change)> = Vec::new();
        for ns in &namespaces {
            let Some(parts) = self.posted.get(*ns) else {
                continue;
            };
            let mut change = Change::default();
            for i in items.iter().filter(|i| i.nspace == *ns) {
                let _ = parts.withdraw_in(&mut change, i.rank, &i.key);
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

/// One fence batch per namespace (in the order namespaces first appear) of the staged values
/// the store takes, leaving out the keys in `skip`; and the keys of the values it refuses.
fn batches<'a>(
    items: &'a [Staged],
    skip: &HashSet<PostedKey<'a>>,
) -> (Vec<(&'a str, FenceBatch)>, HashSet<PostedKey<'a>>) {
    let mut out: Vec<(&str, FenceBatch)> = in_order(items.iter().map(|i| i.nspace.as_str()))
        .into_iter()
        .map(|ns| (ns, FenceBatch::new()))
        .collect();
    let mut refused = HashSet::new();
    for i in items {
        if skip.contains(&i.id()) {
            continue;
        }
        let Some(value) = &i.value else {
            refused.insert(i.id());
            continue;
        };
        let Some((_, batch)) = out.iter_mut().find(|(ns, _)| *ns == i.nspace) else {
            continue;
        };
        let put = Scope::from_raw(i.scope).and_then(|s| batch.put(i.rank, s, &i.key, value));
        if put.is_err() {
            refused.insert(i.id());
        }
    }
    (out, refused)
}

/// The distinct names, in the order they first appear.
fn in_order<'a>(names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for n in names {
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}
