//! The API's limits on what a caller passes (pmi2.h): keys and names fit `PMI2_MAX_KEYLEN`,
//! values `PMI2_MAX_VALLEN`, all UTF-8 (the API's character set). A call that fails a check
//! changes nothing.

#![forbid(unsafe_code)]

use crate::codes::*;

/// A key (KVS key, attribute name, service name): 1 to 63 bytes of UTF-8.
pub fn key(k: &[u8]) -> Result<&str> {
    if k.is_empty() {
        return Err(Pmi2Error::new(PMI2_ERR_INVALID_KEY, "empty key"));
    }
    if k.len() >= MAX_KEYLEN {
        return Err(Pmi2Error::new(
            PMI2_ERR_INVALID_KEY_LENGTH,
            format!("key of {} bytes (at most {})", k.len(), MAX_KEYLEN - 1),
        ));
    }
    std::str::from_utf8(k).map_err(|_| Pmi2Error::new(PMI2_ERR_INVALID_KEY, "key not UTF-8"))
}

/// A value (KVS value, node attribute, port): up to `max - 1` bytes of UTF-8 (`max` counts the
/// terminating NUL: `PMI2_MAX_VALLEN` or `PMI2_MAX_ATTRVALUE`).
pub fn value(v: &[u8], max: usize) -> Result<&str> {
    if v.len() >= max {
        return Err(Pmi2Error::new(
            PMI2_ERR_INVALID_VAL_LENGTH,
            format!("value of {} bytes (at most {})", v.len(), max - 1),
        ));
    }
    std::str::from_utf8(v).map_err(|_| Pmi2Error::new(PMI2_ERR_INVALID_VAL, "value not UTF-8"))
}

/// A job id (a PMIx namespace): 1 to 255 bytes of UTF-8.
pub fn job_id(j: &[u8]) -> Result<&str> {
    if j.is_empty() || j.len() >= rshm_abi::types::NSPACE_BUF {
        return Err(Pmi2Error::new(
            PMI2_ERR_INVALID_ARG,
            format!(
                "job id of {} bytes (1 to {})",
                j.len(),
                rshm_abi::types::NSPACE_BUF - 1
            ),
        ));
    }
    std::str::from_utf8(j).map_err(|_| Pmi2Error::new(PMI2_ERR_INVALID_ARG, "job id not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_fit_the_buffer() {
        assert_eq!(key(&[b'k'; 63]).map(str::len), Ok(63));
        assert_eq!(
            key(&[b'k'; 64]).unwrap_err().code,
            PMI2_ERR_INVALID_KEY_LENGTH
        );
        assert_eq!(key(b"").unwrap_err().code, PMI2_ERR_INVALID_KEY);
        assert_eq!(key(b"\xff").unwrap_err().code, PMI2_ERR_INVALID_KEY);
        assert_eq!(key("clé".as_bytes()), Ok("clé"));
    }

    #[test]
    fn values_fit_the_buffer() {
        assert_eq!(value(&[b'v'; 1023], MAX_VALLEN).map(str::len), Ok(1023));
        assert_eq!(
            value(&[b'v'; 1024], MAX_VALLEN).unwrap_err().code,
            PMI2_ERR_INVALID_VAL_LENGTH
        );
        assert_eq!(value(b"", MAX_VALLEN), Ok(""));
        assert_eq!(
            value(b"\xc3", MAX_VALLEN).unwrap_err().code,
            PMI2_ERR_INVALID_VAL
        );
    }
}
