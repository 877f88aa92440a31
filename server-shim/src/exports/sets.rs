//! Process sets and groups (`rshm_server_define_pset` .. `rshm_server_group_leave`): each call
//! publishes one generation (docs/psets-groups.md).

use core::ffi::c_char;

use rshm_abi::c::{c_slice, c_str, proc_ref, read_infos};
use rshm_abi::types::{pmix_byte_object_t, pmix_info_t, pmix_proc_t, pmix_status_t, NSPACE_BUF};
use rshm_abi::{ffi_status, AbiError};

use super::{handle, lock, rshm_server_t};

/// `PMIx_server_define_process_set` (17.2.19): define process set `name` with `members` (in
/// their order; a `PMIX_RANK_WILDCARD` member is its whole namespace) and publish it as one
/// generation. A name defined again is replaced. `name` is 1..=255 bytes (`PMIX_MAX_NSLEN`),
/// without `,`, white space or control characters, not starting with `rshm.`, and not a
/// registered namespace's; members are processes (ordinary ranks or `PMIX_RANK_WILDCARD`), each
/// once, at most 2^20 (docs/psets-groups.md, "Names and members"). Anything else is
/// `PMIX_ERR_BAD_PARAM` and changes nothing.
///
/// # Safety
/// `s` a handle; `name` NUL-terminated; `members` NULL (with `nmembers` 0) or `nmembers` valid
/// `pmix_proc_t`.
#[no_mangle]
pub unsafe extern "C" fn rshm_server_define_pset(
    s: *mut rshm_server_t,
    name: *const c_char,
    members: *const pmix_proc_t,
    nmembers: usize,
) -> pmix_status_t {
    ffi_status(|| {
        // SAFETY: caller contract.
        let (h, name, procs) = unsafe {
            (
                handle(s)?,
                c_str(name, NSPACE_BUF - 1)?,
                c_slice(members, nmembers)?,
            )
        };
        if procs.len() > rshm_gds::psets::MAX_MEMBERS {
            return Err(AbiError::BadParam(format!(
                "{} members, more than a set may have ({})",
                procs.len(),
                rshm_gds::psets::MAX_MEMBERS
            )));
        }
        let members = procs
            .iter()
            // SAFETY: an element of the caller's array, valid (caller contract).
            .map(|p| unsafe { proc_ref(p) })
            .collect::<Result<Vec<_>, _>>()?;
        lock(h).define_pset(name, &members)?;
        Ok(())
    })
}

/// One process set of `rshm_server_define_psets`.
#[repr(C)]
pub struct rshm_pset_t {
    /// NUL-terminated, 1..=255 bytes.
    pub name: *const c_char,
    pub members: *const pmix_proc_t,
    pub nmembers: usize,
}

/// `rshm_server_define_pset` for `n` sets at once (at most 2^20), in their order, published as
/// one generation: one call costs the sets it defines, not those already defined. All or
/// nothing.
///
/// # Safety
/// `s` a handle; `sets` NULL (with `n` 0) or `n` valid `rshm_pset_t`, each as
/// `rshm_server_define_pset`'s arguments.
#[no_mangle]
pub unsafe extern "C" fn rshm_server_define_psets(
    s: *mut rshm_server_t,
    sets: *const rshm_pset_t,
    n: usize,
) -> pmix_status_t {
    ffi_status(|| {
        // SAFETY: caller contract.
        let (h, sets) = unsafe { (handle(s)?, c_slice(sets, n)?) };
        crate::server::psets::check_sets_per_call(sets.len())?;
        let mut all = Vec::with_capacity(sets.len());
        for p in sets {
            if p.nmembers > rshm_gds::psets::MAX_MEMBERS {
                return Err(AbiError::BadParam(format!(
                    "a set of {} members, more than a set may have ({})",
                    p.nmembers,
                    rshm_gds::psets::MAX_MEMBERS
                )));
            }
            // SAFETY: each set's name and members valid (caller contract).
            let (name, members) = unsafe {
                (
                    c_str(p.name, NSPACE_BUF - 1)?,
                    procs_of(p.members, p.nmembers)?,
                )
            };
            all.push((name, members));
        }
        lock(h).define_psets(&all)?;
        Ok(())
    })
}

/// `PMIx_server_delete_process_set` (17.2.20): delete process set `name` and publish; an unknown
/// name is `PMIX_ERR_NOT_FOUND` (nothing published).
///
/// # Safety
/// `s` a handle; `name` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn rshm_server_delete_pset(
    s: *mut rshm_server_t,
    name: *const c_char,
) -> pmix_status_t {
    ffi_status(|| {
        // SAFETY: caller contract.
        let (h, name) = unsafe { (handle(s)?, c_str(name, NSPACE_BUF - 1)?) };
        lock(h).delete_pset(name)?;
        Ok(())
    })
}

/// The bytes of a C byte object; `None` for an empty one (NULL or size 0).
///
/// # Safety
/// `bo.bytes` holds `bo.size` readable bytes when not NULL.
unsafe fn bytes_of<'a>(bo: &pmix_byte_object_t) -> Result<Option<&'a [u8]>, AbiError> {
    if bo.bytes.is_null() || bo.size == 0 {
        return Ok(None);
    }
    // SAFETY: caller contract.
    unsafe { c_slice(bo.bytes.cast::<u8>(), bo.size) }.map(Some)
}

/// # Safety
/// `members` NULL (with `n` 0) or `n` valid `pmix_proc_t`.
unsafe fn procs_of<'a>(
    members: *const pmix_proc_t,
    n: usize,
) -> Result<Vec<(&'a str, u32)>, AbiError> {
    // SAFETY: caller contract.
    let procs = unsafe { c_slice(members, n) }?;
    procs
        .iter()
        // SAFETY: an element of the caller's array, valid (caller contract).
        .map(|p| unsafe { proc_ref(p) })
        .collect()
}

/// The result of `PMIx_Group_construct` (12.2.1) for group `grp`, published as one generation:
/// `members` in group-rank order (the first is group rank 0), `context_id` (NULL: none
/// assigned), the group's `info` (answered to `{grp, PMIX_RANK_WILDCARD}`), and `endpoints`:
/// NULL (with `nendpoints` 0) or one byte object per member in the same order (an empty one:
/// none), each answered as `PMIX_GROUP_ENDPT_DATA` of `{grp, group rank}`. A Get addressed to
/// `{grp, rank}` of any other key reads the member's own `{nspace, rank}` (12.2). A group
/// constructed again is replaced; a refused call changes nothing.
///
/// # Safety
/// `s` a handle; `grp` NUL-terminated; `members` `nmembers` valid `pmix_proc_t`; `context_id`
/// NULL or valid; `info` NULL or `ninfo` valid infos; `endpoints` NULL or `nendpoints` valid
/// byte objects.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn rshm_server_group_construct(
    s: *mut rshm_server_t,
    grp: *const c_char,
    members: *const pmix_proc_t,
    nmembers: usize,
    context_id: *const usize,
    info: *const pmix_info_t,
    ninfo: usize,
    endpoints: *const pmix_byte_object_t,
    nendpoints: usize,
) -> pmix_status_t {
    ffi_status(|| {
        // SAFETY: caller contract.
        let (h, grp, members, info, eps) = unsafe {
            (
                handle(s)?,
                c_str(grp, NSPACE_BUF - 1)?,
                procs_of(members, nmembers)?,
                read_infos(info, ninfo)?,
                c_slice(endpoints, nendpoints)?,
            )
        };
        let endpoints = eps
            .iter()
            // SAFETY: each a valid byte object (caller contract).
            .map(|bo| unsafe { bytes_of(bo) }.map(|b| b.map(<[u8]>::to_vec)))
            .collect::<Result<Vec<_>, _>>()?;
        let group = rshm_gds::psets::groups::Group {
            members: members.iter().map(|(n, r)| ((*n).to_owned(), *r)).collect(),
            // SAFETY: NULL or a valid size_t (caller contract).
            context_id: unsafe { context_id.as_ref() }.map(|&c| c as u64),
            info,
            endpoints,
        };
        lock(h).construct_group(grp, group)?;
        Ok(())
    })
}

/// `PMIx_Group_destruct` (12.2.3): the group leaves the store in one generation;
/// `PMIX_ERR_NOT_FOUND` for an unknown group.
///
/// # Safety
/// `s` a handle; `grp` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn rshm_server_group_destruct(
    s: *mut rshm_server_t,
    grp: *const c_char,
) -> pmix_status_t {
    ffi_status(|| {
        // SAFETY: caller contract.
        let (h, grp) = unsafe { (handle(s)?, c_str(grp, NSPACE_BUF - 1)?) };
        lock(h).destruct_group(grp)?;
        Ok(())
    })
}

/// `PMIx_Group_join` accepted (12.2.7): `member` becomes the group's next rank, with its
/// endpoint data (NULL: none). One generation.
///
/// # Safety
/// `s` a handle; `grp` NUL-terminated; `member` a valid proc; `endpoint` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn rshm_server_group_join(
    s: *mut rshm_server_t,
    grp: *const c_char,
    member: *const pmix_proc_t,
    endpoint: *const pmix_byte_object_t,
) -> pmix_status_t {
    ffi_status(|| {
        // SAFETY: caller contract.
        let (h, grp, member) =
            unsafe { (handle(s)?, c_str(grp, NSPACE_BUF - 1)?, proc_ref(member)?) };
        // SAFETY: NULL or a valid byte object (caller contract).
        let ep = match unsafe { endpoint.as_ref() } {
            // SAFETY: a valid byte object (caller contract).
            Some(bo) => unsafe { bytes_of(bo) }?,
            None => None,
        };
        lock(h).join_group(grp, member, ep)?;
        Ok(())
    })
}

/// `PMIx_Group_leave` (12.2.9): `member` leaves; the members after it move down one group rank
/// (the last one leaving destructs the group). One generation; `PMIX_ERR_NOT_FOUND` for an
/// unknown group or member.
///
/// # Safety
/// `s` a handle; `grp` NUL-terminated; `member` a valid proc.
#[no_mangle]
pub unsafe extern "C" fn rshm_server_group_leave(
    s: *mut rshm_server_t,
    grp: *const c_char,
    member: *const pmix_proc_t,
) -> pmix_status_t {
    ffi_status(|| {
        // SAFETY: caller contract.
        let (h, grp, member) =
            unsafe { (handle(s)?, c_str(grp, NSPACE_BUF - 1)?, proc_ref(member)?) };
        lock(h).leave_group(grp, member)?;
        Ok(())
    })
}
