//! The verbosity of each front end (client preload, server preload, PMI-2 library): one integer
//! level per front end, named the way OpenPMIx names a component's level
//! (`PMIX_MCA_gds_rshm_verbose`) under rshm's own prefix, as these are not MCA components:
//! `RSHM_MCA_client_preload_verbose`, `RSHM_MCA_server_preload_verbose`,
//! `RSHM_MCA_pmi2_verbose`. The older on/off variables are deprecated aliases of level 1.
//! docs/deploy.md "Diagnostics" lists the levels.

/// The level set in `$name`: an integer (a negative one is 0), `none` 0, other text 1. Unset or
/// empty: 1 if `$deprecated` is set (to anything, as it was read), else 0.
pub fn level(name: &str, deprecated: &str) -> u32 {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => parse(&v),
        _ => u32::from(std::env::var_os(deprecated).is_some()),
    }
}

fn parse(v: &str) -> u32 {
    let v = v.trim();
    if v.eq_ignore_ascii_case("none") {
        return 0;
    }
    match v.parse::<i64>() {
        Ok(n) => n.clamp(0, i64::from(u32::MAX)) as u32,
        Err(_) => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_is_an_integer_none_is_zero_other_text_one() {
        assert_eq!(parse("0"), 0);
        assert_eq!(parse(" 2 "), 2);
        assert_eq!(parse("-1"), 0);
        assert_eq!(parse("none"), 0);
        assert_eq!(parse("yes"), 1);
    }

    /// Names unique to this test: the process environment is shared by the crate's tests.
    #[test]
    fn the_new_name_wins_and_the_deprecated_one_is_level_one() {
        let (new, old) = ("RSHM_MCA_abitest_verbose", "RSHM_ABITEST_VERBOSE");
        assert_eq!(level(new, old), 0);
        std::env::set_var(old, "");
        assert_eq!(
            level(new, old),
            1,
            "the deprecated variable set, even empty"
        );
        std::env::set_var(new, "3");
        assert_eq!(level(new, old), 3);
        std::env::set_var(new, "0");
        assert_eq!(
            level(new, old),
            0,
            "the new name set to 0 silences the old one"
        );
        std::env::remove_var(new);
        std::env::remove_var(old);
    }
}
