//! The only `unsafe` code of the abi crate: reading the caller's `pmix_info_t` /
//! `pmix_value_t` graphs into `gds` values, and writing values out as C structs whose memory
//! comes from `malloc`, so that libpmix's `PMIX_VALUE_RELEASE` / `PMIx_Value_destruct` (which
//! call `free`) release them.
//!
//! Reading trusts nothing it can check: NULL pointers, missing NUL terminators, non-UTF-8
//! strings, unknown type codes, element types that disagree, and nesting deeper than
//! [`MAX_DEPTH`] (a cyclic array) are all `BadParam`. What it cannot check (that a non-NULL
//! pointer points to memory of the stated size) is the caller's promise, as in every C API:
//! every function that follows such a pointer is an `unsafe fn` saying so.
//!
//! One file per job: [`strings`] (C strings and fixed buffers), [`read`] (C values into `gds`
//! values), [`registration`] (a registration array read in place), [`write`](mod@write)
//! (values out as malloc'd C structs), [`free`] (releasing what `write` made), [`cpuset`]
//! (hwloc bitmaps), [`environ`] (a setup_fork environment array).

use core::ffi::c_char;
use core::mem::size_of;

use rshm_gds::value::types as t;

use crate::types::*;
use crate::AbiError;

pub mod cpuset;
pub mod environ;
pub mod free;
pub mod read;
pub mod registration;
pub mod strings;
pub mod write;

pub use environ::setenv_array;
pub use free::{destruct_value, free_value};
pub use read::{
    byte_object_ref, info_slice, info_value, proc_ref, read_infos, read_proc, read_value,
};
pub use registration::{check_infos, reg_infos, CInfo};
pub use strings::{c_str, copy_last_error, copy_to_buf, fixed_str};
pub use write::{
    alloc_infos, alloc_stored, alloc_value, c_info, write_borrowed, write_info, write_proc_array,
    write_stored, write_value, zeroed_value, HeldValue,
};

/// Deepest nesting of data arrays / info arrays accepted from C (a cycle ends here).
pub const MAX_DEPTH: usize = 64;

// The packed width of a `struct timeval` is the mirror's size.
const _: () = assert!(
    matches!(rshm_gds::packed_array::width(t::TIMEVAL), Some(w) if w == size_of::<timeval>())
);

/// The size of one element of a C array of `ty` (`pmix_data_array_t.array`): a fixed-width
/// type's packed width (`rshm_gds::packed_array::width`, gds's table), else the size of its pointer or
/// struct.
pub fn elem_size(ty: u16) -> Option<usize> {
    if let Some(w) = rshm_gds::packed_array::width(ty) {
        return Some(w);
    }
    Some(match ty {
        t::STRING => size_of::<*mut c_char>(),
        t::VALUE => size_of::<pmix_value_t>(),
        t::PROC => size_of::<pmix_proc_t>(),
        t::INFO => size_of::<pmix_info_t>(),
        t::BYTE_OBJECT | t::COMPRESSED_STRING | t::REGEX | t::COMPRESSED_BYTE_OBJECT => {
            size_of::<pmix_byte_object_t>()
        }
        t::PROC_INFO => size_of::<pmix_proc_info_t>(),
        t::DATA_ARRAY => size_of::<pmix_data_array_t>(),
        t::ENVAR => size_of::<pmix_envar_t>(),
        t::COORD => size_of::<pmix_coord_t>(),
        t::PROC_CPUSET => size_of::<pmix_cpuset_t>(),
        t::GEOMETRY => size_of::<pmix_geometry_t>(),
        t::DEVICE_DIST => size_of::<pmix_device_distance_t>(),
        t::ENDPOINT => size_of::<pmix_endpoint_t>(),
        t::PROC_NSPACE => NSPACE_BUF,
        t::REGATTR => size_of::<pmix_regattr_t>(),
        t::DATA_BUFFER => size_of::<pmix_data_buffer_t>(),
        t::APP => size_of::<pmix_app_t>(),
        t::PDATA => size_of::<pmix_pdata_t>(),
        t::QUERY => size_of::<pmix_query_t>(),
        _ => return None,
    })
}

/// Whether the `pmix_value_t` union holds `ty` through a pointer (`data.proc`, `data.pinfo`,
/// ...) rather than inline.
pub(crate) fn boxed_in_value(ty: u16) -> bool {
    matches!(
        ty,
        t::PROC
            | t::PROC_INFO
            | t::DATA_ARRAY
            | t::COORD
            | t::PROC_CPUSET
            | t::GEOMETRY
            | t::DEVICE_DIST
            | t::ENDPOINT
            | t::PROC_NSPACE
            | t::REGATTR
            | t::DATA_BUFFER
    )
}

pub(crate) fn bad(what: impl Into<String>) -> AbiError {
    AbiError::BadParam(what.into())
}

/// A C array argument as a slice: `(NULL, 0)` (or any pointer with 0) is empty; NULL with a
/// length, a misaligned pointer, or a length whose bytes overflow `isize` is `BadParam`, never
/// a slice.
///
/// # Safety
/// Unless refused above, `p` points to `n` readable `T`s that outlive `'a` unchanged.
pub unsafe fn c_slice<'a, T>(p: *const T, n: usize) -> Result<&'a [T], AbiError> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() || n > (isize::MAX as usize) / size_of::<T>().max(1) {
        return Err(bad("NULL or oversized array"));
    }
    if !p.is_aligned() {
        return Err(bad("misaligned array"));
    }
    // SAFETY: the caller promises `n` readable elements at `p`; non-NULL, aligned, and the size
    // fits an isize (checked).
    Ok(unsafe { core::slice::from_raw_parts(p, n) })
}
