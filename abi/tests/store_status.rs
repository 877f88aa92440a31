//! The status a C caller sees for each store condition (docs/ffi.md's table): a removed store
//! is unreachable, an absent name is not found, a store of another format is an init failure,
//! and a damaged one is a plain error.

use rshm_abi::types::status::*;
use rshm_abi::{store_status, AbiError};
use rshm_gds::Error;

#[test]
fn each_store_condition_has_its_status() {
    let cases = [
        (Error::StoreRemoved, PMIX_ERR_UNREACH),
        (Error::NotFound, PMIX_ERR_NOT_FOUND),
        (Error::ExistsOutsideScope, PMIX_ERR_EXISTS_OUTSIDE_SCOPE),
        (Error::PermissionDenied, PMIX_ERR_NO_PERMISSIONS),
        (
            Error::Untrusted("owned by uid 1000".into()),
            PMIX_ERR_NO_PERMISSIONS,
        ),
        (Error::OutOfSpace, PMIX_ERR_OUT_OF_RESOURCE),
        (Error::ByteOrder, PMIX_ERR_INIT),
        (Error::BadMagic, PMIX_ERR_INIT),
        (Error::NotReady, PMIX_ERR_INIT),
        (
            Error::Version {
                major: 99,
                minor: 0,
                value_format: 1,
            },
            PMIX_ERR_INIT,
        ),
        (
            Error::Corrupt("a table named by the current root is missing"),
            PMIX_ERROR,
        ),
    ];
    for (e, want) in cases {
        let what = e.to_string();
        assert_eq!(store_status(&e), want, "{what}");
        assert_eq!(AbiError::Store(e).status(), want, "{what}");
    }
}
