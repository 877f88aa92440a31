//! PMIx_Get's `info` array read into what the store needs: the directives the answer policy
//! decides on (`rshm_gds::jobdata::policy`: realm qualifiers, data scope, refresh, unknown required
//! directives) and the return mode.

#![forbid(unsafe_code)]

use rshm_gds::jobdata::Directives;
use rshm_gds::modex::Scope;
use rshm_gds::Value;

use crate::c::fixed_str;
use crate::types::{keys::*, pmix_info_t, PMIX_INFO_REQD};
use crate::AbiError;

/// How PMIx_Get returns its value (5.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// A `malloc`ed `pmix_value_t`; the caller releases it (`PMIX_VALUE_RELEASE`).
    #[default]
    Copy,
    /// `PMIX_GET_STATIC_VALUES`: written into the caller's `pmix_value_t`.
    Static,
    /// `PMIX_GET_POINTER_VALUES`: a `pmix_value_t` owned by the client library.
    Pointer,
}

/// A parsed PMIx_Get request's directives.
#[derive(Clone, Debug, Default)]
pub struct GetRequest {
    /// What the answer policy decides on.
    pub directives: Directives,
    pub mode: Mode,
    /// Directives the store does not know (PMIX_WAIT, vendor keys...), for messages; the
    /// policy sees only whether one was required (`Directives::unknown_required`).
    pub unknown: Vec<String>,
}

/// The request of a PMIx_Get with no directives (`ninfo` 0): shared, so the hot path builds
/// and drops nothing.
pub static NO_DIRECTIVES: GetRequest = GetRequest {
    directives: Directives::NONE,
    mode: Mode::Copy,
    unknown: Vec::new(),
};

fn flag(v: &Value) -> Result<bool, AbiError> {
    match v {
        Value::Bool(b) => Ok(*b),
        // PMIx treats a boolean attribute given without a value as true.
        Value::Undef => Ok(true),
        _ => Err(AbiError::BadParam(format!(
            "boolean directive of type {}",
            v.type_code()
        ))),
    }
}

fn uint(v: &Value) -> Result<u32, AbiError> {
    let u = match *v {
        Value::Uint32(u) | Value::Uint(u) | Value::ProcRank(u) => Some(u),
        Value::Uint16(u) => Some(u as u32),
        Value::Uint8(u) => Some(u as u32),
        Value::Int(i) | Value::Int32(i) => u32::try_from(i).ok(),
        Value::Uint64(u) | Value::Size(u) => u32::try_from(u).ok(),
        _ => None,
    };
    u.ok_or_else(|| AbiError::BadParam(format!("integer directive of type {}", v.type_code())))
}

/// Read PMIx_Get's directives from the caller's info array (`unsafe`: it follows the values'
/// pointers; see its `# Safety`).
pub use crate::c::read::parse_get as parse;

/// Read PMIx_Get's directives, each value read by `info_value` (which [`parse`] gives: the C
/// reader of `info.value`). The keys are read here (a fixed buffer, checked).
pub(crate) fn parse_with(
    infos: &[pmix_info_t],
    info_value: impl Fn(&pmix_info_t) -> Result<Value, AbiError>,
) -> Result<GetRequest, AbiError> {
    let mut r = GetRequest::default();
    for info in infos {
        let key = fixed_str(&info.key)?;
        let d = &mut r.directives;
        let q = &mut d.qualifiers;
        match key {
            PMIX_OPTIONAL => q.optional = flag(&info_value(info)?)?,
            PMIX_IMMEDIATE => q.immediate = flag(&info_value(info)?)?,
            PMIX_SESSION_INFO => q.session_info = flag(&info_value(info)?)?,
            PMIX_JOB_INFO => q.job_info = flag(&info_value(info)?)?,
            PMIX_APP_INFO => q.app_info = flag(&info_value(info)?)?,
            PMIX_NODE_INFO => q.node_info = flag(&info_value(info)?)?,
            PMIX_PROC_INFO => q.proc_info = flag(&info_value(info)?)?,
            PMIX_SESSION_ID => q.session_id = Some(uint(&info_value(info)?)?),
            PMIX_APPNUM => q.appnum = Some(uint(&info_value(info)?)?),
            PMIX_NODEID => q.nodeid = Some(uint(&info_value(info)?)?),
            PMIX_HOSTNAME => match info_value(info)? {
                Value::String(s) => q.hostname = Some(s),
                v => {
                    return Err(AbiError::BadParam(format!(
                        "PMIX_HOSTNAME of type {}",
                        v.type_code()
                    )))
                }
            },
            PMIX_DATA_SCOPE => {
                let raw = match info_value(info)? {
                    Value::Scope(s) | Value::Uint8(s) => s,
                    v => {
                        return Err(AbiError::BadParam(format!(
                            "PMIX_DATA_SCOPE of type {}",
                            v.type_code()
                        )))
                    }
                };
                d.scope = Some(Scope::from_raw(raw).map_err(AbiError::Store)?);
            }
            PMIX_GET_STATIC_VALUES => {
                if flag(&info_value(info)?)? {
                    r.mode = Mode::Static;
                }
            }
            PMIX_GET_POINTER_VALUES => {
                if flag(&info_value(info)?)? {
                    r.mode = Mode::Pointer;
                }
            }
            PMIX_GET_REFRESH_CACHE => d.refresh = flag(&info_value(info)?)?,
            // A bound on waiting: the store never waits, so it changes nothing (the value is
            // not even read; a host library given the call reads it).
            PMIX_TIMEOUT => {}
            other => {
                r.unknown.push(other.to_owned());
                d.unknown_required |= info.flags & PMIX_INFO_REQD != 0;
            }
        }
    }
    Ok(r)
}
