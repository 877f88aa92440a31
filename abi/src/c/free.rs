//! Releasing what [`write`](super::write) allocated: the frees `PMIx_Value_destruct`
//! performs, for values the shims own.

use core::ffi::{c_char, c_void};
use core::ptr;

use rshm_gds::value::types as t;

use super::{boxed_in_value, cpuset, elem_size};
use crate::types::*;

/// Release what [`write_value`](super::write_value) allocated inside `*v` (not `v` itself); leaves it UNDEF.
/// The same frees `PMIx_Value_destruct` performs, for values the shims own.
///
/// Safe code cannot call it (it would free whatever address a mirror's public field holds):
/// ```compile_fail,E0133
/// let mut v = rshm_abi::c::zeroed_value();
/// rshm_abi::c::destruct_value(&mut v);
/// ```
///
/// # Safety
/// `*v` was written by [`write_value`](super::write_value) / [`write_stored`](super::write_stored)
/// (or is zeroed) and not destructed since: the union member of its type is the live one and
/// every pointer in it came from malloc/calloc (or is NULL) and is owned by `*v` alone.
pub unsafe fn destruct_value(v: &mut pmix_value_t) {
    let ty = v.type_;
    // SAFETY: the caller's promise: the union member of `ty` is the live one and every pointer
    // in it came from malloc/calloc or is NULL.
    unsafe {
        if boxed_in_value(ty) {
            let inner = v.data.ptr.cast::<u8>();
            if !inner.is_null() {
                destruct_elem(ty, inner);
                libc::free(inner.cast());
            }
        } else {
            destruct_elem(ty, ptr::addr_of_mut!(v.data).cast::<u8>());
        }
    }
    // All zero, not a one-member union literal (which leaves the other bytes undefined).
    *v = super::zeroed_value();
}

/// Free a NULL-terminated array of malloc'd strings (NULL: nothing).
///
/// # Safety
/// `argv` is NULL or as `c_argv` wrote it.
unsafe fn free_argv(argv: *mut *mut c_char) {
    if argv.is_null() {
        return;
    }
    // SAFETY: the array ends at its first NULL slot; each string and the array are malloc'd.
    unsafe {
        let mut i = 0;
        while !(*argv.add(i)).is_null() {
            libc::free((*argv.add(i)).cast());
            i += 1;
        }
        libc::free(argv.cast());
    }
}

/// Destruct `n` infos at `infos` and free the array (NULL: nothing).
///
/// # Safety
/// As `c_infos` wrote them.
unsafe fn free_infos(infos: *mut pmix_info_t, n: usize) {
    if infos.is_null() {
        return;
    }
    // SAFETY: `n` infos were started, each owning what write_info allocated.
    unsafe {
        for i in 0..n {
            destruct_value(&mut (*infos.add(i)).value);
        }
        libc::free(infos.cast());
    }
}

/// # Safety
/// `p` is an element of `ty` written by `write_elem` (or zeroed).
unsafe fn destruct_elem(ty: u16, p: *mut u8) {
    // SAFETY: see the function's contract; free(NULL) is a no-op.
    unsafe {
        let free = |q: *mut c_void| libc::free(q);
        match ty {
            t::STRING => free(ptr::read(p.cast::<*mut c_char>()).cast()),
            t::BYTE_OBJECT | t::COMPRESSED_STRING | t::REGEX | t::COMPRESSED_BYTE_OBJECT => {
                free(ptr::read(p.cast::<pmix_byte_object_t>()).bytes.cast())
            }
            t::INFO => destruct_value(&mut (*p.cast::<pmix_info_t>()).value),
            t::VALUE => destruct_value(&mut *p.cast::<pmix_value_t>()),
            t::PROC_INFO => {
                let pi = &*p.cast::<pmix_proc_info_t>();
                free(pi.hostname.cast());
                free(pi.executable_name.cast());
            }
            t::DATA_ARRAY => {
                let da = &*p.cast::<pmix_data_array_t>();
                if let Some(size) = elem_size(da.type_) {
                    for i in 0..da.size {
                        destruct_elem(da.type_, da.array.cast::<u8>().add(i * size));
                    }
                }
                free(da.array);
            }
            t::ENVAR => {
                let e = &*p.cast::<pmix_envar_t>();
                free(e.envar.cast());
                free(e.value.cast());
            }
            t::COORD => free((*p.cast::<pmix_coord_t>()).coord.cast()),
            t::PROC_CPUSET => {
                let c = &*p.cast::<pmix_cpuset_t>();
                free(c.source.cast());
                cpuset::free(c.bitmap);
            }
            t::GEOMETRY => {
                let g = &*p.cast::<pmix_geometry_t>();
                free(g.uuid.cast());
                free(g.osname.cast());
                for i in 0..g.ncoords {
                    free((*g.coordinates.add(i)).coord.cast());
                }
                free(g.coordinates.cast());
            }
            t::DEVICE_DIST => {
                let d = &*p.cast::<pmix_device_distance_t>();
                free(d.uuid.cast());
                free(d.osname.cast());
            }
            t::DATA_BUFFER => free((*p.cast::<pmix_data_buffer_t>()).base_ptr.cast()),
            t::REGATTR => {
                let r = &*p.cast::<pmix_regattr_t>();
                free(r.name.cast());
                free_argv(r.description);
            }
            t::APP => {
                let a = &*p.cast::<pmix_app_t>();
                free(a.cmd.cast());
                free(a.cwd.cast());
                free_argv(a.argv);
                free_argv(a.env);
                free_infos(a.info, a.ninfo);
            }
            t::PDATA => destruct_value(&mut (*p.cast::<pmix_pdata_t>()).value),
            t::QUERY => {
                let q = &*p.cast::<pmix_query_t>();
                free_argv(q.keys);
                free_infos(q.qualifiers, q.nqual);
            }
            t::ENDPOINT => {
                let e = &*p.cast::<pmix_endpoint_t>();
                free(e.uuid.cast());
                free(e.osname.cast());
                free(e.endpt.bytes.cast());
            }
            _ => {}
        }
    }
}

/// Free a `pmix_value_t` from [`alloc_stored`](super::alloc_stored) and what it holds (the shims' own release).
///
/// # Safety
/// `p` is NULL or came from [`alloc_stored`](super::alloc_stored) and is not used again.
pub unsafe fn free_value(p: *mut pmix_value_t) {
    if p.is_null() {
        return;
    }
    // SAFETY: caller contract.
    unsafe {
        destruct_value(&mut *p);
        libc::free(p.cast());
    }
}
