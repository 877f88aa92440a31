//! A registration array read in place ([`CInfo`], [`reg_infos`]) and its validation
//! ([`check_infos`]), for `PMIx_server_register_nspace` without converting a million infos.

use core::ffi::c_char;
use core::mem::size_of;
use core::ptr;

use rshm_gds::value::types as t;
use rshm_gds::Value;

use super::read::read_value;
use super::strings::{c_str, fixed_str};
use super::{bad, c_slice, MAX_DEPTH};
use crate::types::*;
use crate::AbiError;

/// A `pmix_info_t` of a caller's registration array, read in place by the registration
/// ([`rshm_gds::jobdata::RegInfo`]): keys, strings and array elements are borrowed and scalars read
/// as they are stored, so a million proc arrays cost no conversion into [`Info`](rshm_gds::Info) trees. Every
/// accessor checks what it follows (NULL, sizes, NUL, UTF-8, nesting) whether or not the
/// element was validated; [`RegInfo::check`](rshm_gds::jobdata::RegInfo::check) validates one element
/// as [`read_infos`](super::read_infos) would. Only [`reg_infos`] makes one (the field is private).
#[repr(transparent)]
pub struct CInfo(pmix_info_t);

// SAFETY: a CInfo is only ever reached through the `&[CInfo]` of `reg_infos`, whose caller
// promises the array and everything it points to stay unchanged while the view lives; every
// accessor only reads. Shared reads of memory nobody writes are sound from any thread, which is
// what the registration's read-ahead threads do.
unsafe impl Sync for CInfo {}

/// A registration array (`PMIx_server_register_nspace`) as a view the registration walks in
/// place. Only the array itself is checked here (NULL with a length): each element is checked
/// by the walk that reads it ([`CInfo`]'s accessors check what they follow, and the
/// registration reads every element or [`RegInfo::check`](rshm_gds::jobdata::RegInfo::check)s it),
/// so a million top-level infos are read once, not twice. Nothing is allocated. On a failed
/// registration, [`check_infos`] gives the status [`read_infos`](super::read_infos) would have.
///
/// # Safety
/// As [`read_infos`](super::read_infos), and the array (with everything it points to) outlives `'a` unchanged.
pub unsafe fn reg_infos<'a>(p: *const pmix_info_t, n: usize) -> Result<&'a [CInfo], AbiError> {
    // SAFETY: forwarded caller promise.
    let infos = unsafe { c_slice(p, n) }?;
    // SAFETY: CInfo is a transparent wrapper of pmix_info_t (same size, alignment and layout);
    // the lifetime is the caller's promise.
    Ok(unsafe { core::slice::from_raw_parts(infos.as_ptr().cast::<CInfo>(), infos.len()) })
}

/// Validate an info array as [`read_infos`](super::read_infos) does (same checks, same errors), converting
/// nothing.
///
/// # Safety
/// As [`read_infos`](super::read_infos).
pub unsafe fn check_infos(p: *const pmix_info_t, n: usize) -> Result<(), AbiError> {
    // SAFETY: forwarded caller promise.
    for info in unsafe { c_slice(p, n) }? {
        // SAFETY: the element is readable (caller).
        unsafe { check_info(info, 0, false) }?;
    }
    Ok(())
}

/// Validate an info (its key; its value at `depth`, as [`read_value`] counts it).
///
/// # Safety
/// `info`'s value obeys its type's layout (caller's promise, as for [`read_value`]).
unsafe fn check_info(info: &pmix_info_t, depth: usize, in_array: bool) -> Result<(), AbiError> {
    let key = fixed_str(&info.key)?;
    if in_array && (key.is_empty() || key.len() > rshm_gds::layout::MAX_KEY_LEN) {
        return Err(bad(format!("info key of {} bytes (1..=511)", key.len())));
    }
    let v = &info.value;
    // SAFETY: the union member read is the one `type_` names (caller's promise).
    unsafe {
        let data = ptr::addr_of!(v.data).cast::<u8>();
        match v.type_ {
            t::DATA_ARRAY => {
                let da = ptr::read(data.cast::<*const pmix_data_array_t>());
                if da.is_null() {
                    return Err(bad(format!("NULL pointer in a value of type {}", v.type_)));
                }
                if (*da).type_ != t::INFO {
                    return read_value(v, depth).map(drop);
                }
                if depth > MAX_DEPTH {
                    return Err(bad("values nested too deeply (a cycle?)"));
                }
                let da = &*da;
                if da.size > 0 && da.array.is_null() {
                    return Err(bad("data array with a size and no elements"));
                }
                for item in c_slice(da.array.cast::<pmix_info_t>().cast_const(), da.size)? {
                    if depth + 1 > MAX_DEPTH {
                        return Err(bad("values nested too deeply (a cycle?)"));
                    }
                    check_info(item, depth + 2, true)?;
                }
                Ok(())
            }
            // Strings are checked where they lie (no copy); a NULL one is a value
            // (`Value::NullString`).
            t::STRING => match ptr::read(data.cast::<*const c_char>()) {
                s if s.is_null() => Ok(()),
                s => c_str(s, 1 << 30).map(drop),
            },
            _ => read_value(v, depth).map(drop),
        }
    }
}

fn store_error(e: AbiError) -> rshm_gds::Error {
    match e {
        AbiError::Store(e) => e,
        other => rshm_gds::Error::InvalidArgument(other.to_string()),
    }
}

impl CInfo {
    /// The value's inline union bytes.
    fn data(&self) -> *const u8 {
        ptr::addr_of!(self.0.value.data).cast::<u8>()
    }

    /// The byte object of a byte-object-like value.
    fn bytes(&self) -> Option<&[u8]> {
        if !matches!(self.0.value.type_, t::REGEX | t::BYTE_OBJECT) {
            return None;
        }
        // SAFETY: the value is a byte object (its type says so): its bytes are readable for its
        // size (caller's promise), unless it is empty; NULL with a size is refused.
        unsafe {
            let bo = ptr::read(self.data().cast::<pmix_byte_object_t>());
            if bo.size == 0 {
                return Some(&[]);
            }
            if bo.bytes.is_null() || bo.size > isize::MAX as usize {
                return None;
            }
            Some(core::slice::from_raw_parts(bo.bytes.cast::<u8>(), bo.size))
        }
    }
}

/// Ask for what a walk reads of `info`: its key's first line and its value's (which may
/// straddle two lines).
fn prefetch_info(info: *const pmix_info_t) {
    let e = info.cast::<u8>();
    rshm_gds::prefetch(e);
    rshm_gds::prefetch(e.wrapping_add(core::mem::offset_of!(pmix_info_t, value)));
    rshm_gds::prefetch(e.wrapping_add(size_of::<pmix_info_t>() - 1));
}

impl rshm_gds::jobdata::RegInfo for CInfo {
    fn prefetch(&self, ahead: rshm_gds::jobdata::Ahead) {
        use rshm_gds::jobdata::Ahead;
        if ahead == Ahead::Key {
            rshm_gds::prefetch(&self.0);
            return;
        }
        if ahead == Ahead::Info {
            prefetch_info(&self.0);
            return;
        }
        if self.0.value.type_ != t::DATA_ARRAY {
            return;
        }
        // SAFETY: a data array value (its type says so): its pointer is NULL or points to a
        // readable pmix_data_array_t (caller's promise). Only the addresses of the elements are
        // computed (with wrapping arithmetic), never dereferenced.
        unsafe {
            let da = ptr::read(self.data().cast::<*const pmix_data_array_t>());
            if da.is_null() {
                return;
            }
            if ahead == Ahead::Array {
                rshm_gds::prefetch(da);
                return;
            }
            if (*da).type_ != t::INFO {
                return;
            }
            let base = (*da).array.cast::<pmix_info_t>().cast_const();
            for i in 0..(*da).size.min(16) {
                prefetch_info(base.wrapping_add(i));
            }
        }
    }

    type Elems<'a> = core::slice::Iter<'a, CInfo>;

    fn key(&self) -> &str {
        // A malformed key reads as "" (which no key matches and the store refuses); `check`
        // says why.
        fixed_str(&self.0.key).unwrap_or("")
    }

    fn column(&self, kind: rshm_gds::layout::ColumnKind) -> Option<u32> {
        use rshm_gds::layout::ColumnKind as K;
        let data = self.data();
        // SAFETY: the value's type says which union member it is; an inline scalar of that
        // type is read from the union's first bytes (as `read_value` reads it).
        let v = unsafe {
            match (kind, self.0.value.type_) {
                (K::Uint16, t::UINT16) => match ptr::read(data.cast::<u16>()) {
                    u16::MAX => return None,
                    v => v as u32,
                },
                (K::Uint32, t::UINT32) | (K::ProcRank, t::PROC_RANK) => {
                    ptr::read(data.cast::<u32>())
                }
                _ => return None,
            }
        };
        (v != u32::MAX).then_some(v)
    }

    fn check(&self) -> rshm_gds::Result<()> {
        // SAFETY: the element is readable (the promise `reg_infos` was given); depth 2 is that
        // of a top-level array's elements, the ones the registration checks this way.
        unsafe { check_info(&self.0, 2, true) }.map_err(store_error)
    }

    fn infos(&self) -> Option<Self::Elems<'_>> {
        if self.0.value.type_ != t::DATA_ARRAY {
            return None;
        }
        // SAFETY: a data array value (its type says so) whose pointer, when non-NULL, points to a
        // pmix_data_array_t, and whose elements, when PMIX_INFO, are `size` readable infos
        // (caller's promise); NULL pointers and oversized arrays are refused.
        unsafe {
            let da = ptr::read(self.data().cast::<*const pmix_data_array_t>());
            if da.is_null() || (*da).type_ != t::INFO {
                return None;
            }
            let infos = c_slice((*da).array.cast::<pmix_info_t>().cast_const(), (*da).size).ok()?;
            // CInfo is a transparent wrapper of pmix_info_t.
            Some(core::slice::from_raw_parts(infos.as_ptr().cast::<CInfo>(), infos.len()).iter())
        }
    }

    fn string(&self) -> Option<&str> {
        if self.0.value.type_ != t::STRING {
            return None;
        }
        // SAFETY: a PMIX_STRING value: NULL or a NUL-terminated string (caller's promise);
        // `c_str` refuses NULL and non-UTF-8.
        unsafe { c_str(ptr::read(self.data().cast::<*const c_char>()), 1 << 30) }.ok()
    }

    fn text(&self) -> Option<&str> {
        match self.bytes() {
            Some(b) => rshm_gds::jobdata::register::text_of_bytes(b),
            None => self.string(),
        }
    }

    fn number(&self) -> Option<u32> {
        match self.0.value.type_ {
            t::UINT32
            | t::UINT
            | t::PROC_RANK
            | t::UINT16
            | t::UINT8
            | t::UINT64
            | t::SIZE
            | t::INT
            | t::INT32
            | t::INT64
            | t::INT16 => {
                // SAFETY: an inline scalar (no pointer is followed).
                let v = unsafe { read_value(&self.0.value, 0) }.ok()?;
                rshm_gds::jobdata::register::number(&v)
            }
            _ => None,
        }
    }

    fn value(&self) -> rshm_gds::Result<std::borrow::Cow<'_, Value>> {
        // SAFETY: the element is readable (the promise `reg_infos` was given); `read_value`
        // checks what it follows and bounds nesting.
        unsafe { read_value(&self.0.value, 0) }
            .map(std::borrow::Cow::Owned)
            .map_err(store_error)
    }
}
