//! Canonical answer text: one of our values printed exactly as pmix-client prints an OpenPMIx
//! value, so answers compare as strings.

use rshm_gds::value::types;
use rshm_gds::Value;

use super::{
    RANK_INVALID, RANK_LOCAL_NODE, RANK_LOCAL_PEERS, RANK_UNDEF, RANK_WILDCARD, STATUS_STRINGS,
    TYPE_NAMES,
};

/// The type name and value text pmix-client would print for `v` had OpenPMIx returned it:
/// `PMIx_Data_type_string()` and common.c's `fmt_value`.
pub fn canonical(v: &Value) -> (String, String) {
    let mut s = String::new();
    fmt_value(&mut s, v);
    (type_name(v.type_code()).to_string(), s)
}

/// `PMIx_Data_type_string()` of OpenPMIx 4.2.2 (initialised library) for a type code.
pub fn type_name(code: u16) -> &'static str {
    TYPE_NAMES
        .iter()
        .find(|(c, _)| *c == code)
        .map_or("UNKNOWN", |(_, n)| n)
}

/// `PMIx_Error_string()` of OpenPMIx 4.2.2 for a status code.
pub fn status_string(code: i32) -> &'static str {
    STATUS_STRINGS
        .iter()
        .find(|(c, _)| *c == code)
        .map_or("ERROR STRING NOT FOUND", |(_, n)| n)
}

fn fmt_value(out: &mut String, v: &Value) {
    use std::fmt::Write;
    match v {
        Value::Undef => out.push('-'),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Byte(x) | Value::Uint8(x) => write!(out, "{x}").unwrap(),
        Value::String(s) => quote_into(out, s.as_bytes()),
        // pmix-client prints a NULL string so.
        Value::NullString => out.push_str("null"),
        Value::Size(x) | Value::Uint64(x) => write!(out, "{x}").unwrap(),
        Value::Pid(x) | Value::Int(x) | Value::Int32(x) => write!(out, "{x}").unwrap(),
        Value::Int8(x) => write!(out, "{x}").unwrap(),
        Value::Int16(x) => write!(out, "{x}").unwrap(),
        Value::Int64(x) => write!(out, "{x}").unwrap(),
        Value::Uint(x) | Value::Uint32(x) => write!(out, "{x}").unwrap(),
        Value::Uint16(x) => write!(out, "{x}").unwrap(),
        Value::Float(x) => out.push_str(&fmt_g(*x as f64, 9)),
        Value::Double(x) => out.push_str(&fmt_g(*x, 17)),
        Value::Status(x) => out.push_str(status_string(*x)),
        Value::ProcRank(r) => fmt_rank(out, *r),
        Value::Proc(p) => {
            out.push_str(&p.nspace);
            out.push(':');
            fmt_rank(out, p.rank);
        }
        Value::Regex(b) => {
            // a plain string regex carries its terminating NUL; common.c drops it
            let b = b.strip_suffix(&[0]).unwrap_or(b);
            quote_into(out, b);
        }
        Value::ByteObject(b) | Value::CompressedString(b) | Value::CompressedBytes(b) => {
            out.push_str("0x");
            for x in b {
                write!(out, "{x:02x}").unwrap();
            }
        }
        Value::DataArray(d) => {
            let info = d.elem_type == types::INFO;
            if !elem_supported(d.elem_type) {
                write!(out, "[<{} x{}>]", type_name(d.elem_type), d.items.len()).unwrap();
                return;
            }
            out.push(if info { '{' } else { '[' });
            for (i, item) in d.items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                fmt_value(out, item);
            }
            out.push(if info { '}' } else { ']' });
        }
        Value::PackedArray(p) => fmt_value(out, &Value::array(p.elem_type, p.items())),
        // What a client's data buffer holds to unpack; the empty one a client gets has no
        // unpack pointer.
        Value::DataBuffer(b) if b.is_empty() => out.push_str("unreadable/0"),
        Value::DataBuffer(b) => {
            out.push_str("0x");
            for x in b {
                write!(out, "{x:02x}").unwrap();
            }
        }
        Value::Info(i) => {
            out.push_str(&i.key);
            out.push('=');
            fmt_value(out, &i.value);
        }
        other => write!(out, "<{}>", type_name(other.type_code())).unwrap(),
    }
}

/// Element types common.c can print inside a data array (its `elem_size` table).
fn elem_supported(t: u16) -> bool {
    use types as t_;
    matches!(
        t,
        t_::BOOL
            | t_::BYTE
            | t_::STRING
            | t_::SIZE
            | t_::PID
            | t_::INT
            | t_::INT8
            | t_::INT16
            | t_::INT32
            | t_::INT64
            | t_::UINT
            | t_::UINT8
            | t_::UINT16
            | t_::UINT32
            | t_::UINT64
            | t_::FLOAT
            | t_::DOUBLE
            | t_::STATUS
            | t_::PROC_RANK
            | t_::PROC
            | t_::BYTE_OBJECT
            | t_::COMPRESSED_STRING
            | t_::COMPRESSED_BYTE_OBJECT
            | t_::REGEX
            | t_::VALUE
            | t_::INFO
            | t_::DATA_ARRAY
    )
}

fn fmt_rank(out: &mut String, r: u32) {
    match r {
        RANK_UNDEF => out.push_str("UNDEF"),
        RANK_WILDCARD => out.push_str("WILDCARD"),
        RANK_LOCAL_NODE => out.push_str("LOCAL_NODE"),
        RANK_INVALID => out.push_str("INVALID"),
        RANK_LOCAL_PEERS => out.push_str("LOCAL_PEERS"),
        r => out.push_str(&r.to_string()),
    }
}

/// `fmt_bytes_quoted`: `"..."`, `\" \\ \n \t \r \0`, other non-printables (C `isprint`, "C"
/// locale: 0x20..=0x7e) as `\xNN`.
pub fn quote(bytes: &[u8]) -> String {
    let mut s = String::new();
    quote_into(&mut s, bytes);
    s
}

fn quote_into(out: &mut String, bytes: &[u8]) {
    out.push('"');
    for &c in bytes {
        match c {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            0 => out.push_str("\\0"),
            0x20..=0x7e => out.push(c as char),
            _ => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out.push('"');
}

/// C's `printf("%.<prec>g", x)`.
pub fn fmt_g(x: f64, prec: usize) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.into();
    }
    let p = prec.max(1);
    // the exponent after rounding to p significant digits
    let sci = format!("{:.*e}", p - 1, x);
    let (mant, exp) = sci.split_once('e').expect("exponent");
    let exp: i32 = exp.parse().expect("exponent");
    if exp < -4 || exp >= p as i32 {
        let mant = trim_zeros(mant);
        format!("{mant}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        trim_zeros(&format!("{x:.decimals$}")).to_string()
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}
