//! What a PMIx_Get asks of job data: the target rank, the key, and the qualifiers of ch. 6.1
//! (realm flags and realm selectors). The C shims fill this from `pmix_proc_t` and
//! `pmix_info_t` arrays; tests build it directly.

#![forbid(unsafe_code)]

/// `PMIX_RANK_WILDCARD` as a `pmix_rank_t`.
pub const RANK_WILDCARD: u32 = u32::MAX - 1;
/// `PMIX_RANK_UNDEF` as a `pmix_rank_t`.
pub const RANK_UNDEF: u32 = u32::MAX;
/// `PMIX_RANK_VALID` (standard 3.2.3, `UINT32_MAX - 50`): a process's rank is below it; the
/// values from here up are special (wildcard, undef, local node, local peers, invalid...).
pub const RANK_VALID: u32 = u32::MAX - 50;

/// The rank of the `proc` argument of PMIx_Get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetRank {
    /// A process of the namespace.
    Rank(u32),
    /// `PMIX_RANK_WILDCARD`: the job itself (6.1.2).
    Wildcard,
    /// `PMIX_RANK_UNDEF`: any process (globally unique non-reserved keys, 5.3).
    Undef,
}

impl TargetRank {
    /// From a raw `pmix_rank_t`.
    #[inline]
    pub fn from_raw(rank: u32) -> TargetRank {
        match rank {
            RANK_WILDCARD => TargetRank::Wildcard,
            RANK_UNDEF => TargetRank::Undef,
            r => TargetRank::Rank(r),
        }
    }
}

impl Qualifiers {
    /// Whether no realm qualifier or selector is given (PMIX_OPTIONAL / PMIX_IMMEDIATE change
    /// nothing in the store).
    #[inline]
    pub fn is_plain(&self) -> bool {
        !(self.session_info || self.job_info || self.app_info || self.node_info || self.proc_info)
            && self.session_id.is_none()
            && self.appnum.is_none()
            && self.hostname.is_none()
            && self.nodeid.is_none()
    }

    /// No qualifier at all (what `Default` gives), usable in a `static`.
    pub const NONE: Qualifiers = Qualifiers {
        session_info: false,
        job_info: false,
        app_info: false,
        node_info: false,
        proc_info: false,
        session_id: None,
        appnum: None,
        hostname: None,
        nodeid: None,
        immediate: false,
        optional: false,
    };
}

/// The qualifiers of a PMIx_Get that job-data retrieval looks at (6.1, 6.2; 5.4 for the last two).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Qualifiers {
    /// `PMIX_SESSION_INFO` ("pmix.ssn.info").
    pub session_info: bool,
    /// `PMIX_JOB_INFO` ("pmix.job.info").
    pub job_info: bool,
    /// `PMIX_APP_INFO` ("pmix.app.info").
    pub app_info: bool,
    /// `PMIX_NODE_INFO` ("pmix.node.info").
    pub node_info: bool,
    /// `PMIX_PROC_INFO` ("pmix.proc.info").
    pub proc_info: bool,
    /// `PMIX_SESSION_ID` ("pmix.session.id") given as a qualifier.
    pub session_id: Option<u32>,
    /// `PMIX_APPNUM` ("pmix.appnum") given as a qualifier.
    pub appnum: Option<u32>,
    /// `PMIX_HOSTNAME` ("pmix.hname") given as a qualifier.
    pub hostname: Option<String>,
    /// `PMIX_NODEID` ("pmix.nodeid") given as a qualifier.
    pub nodeid: Option<u32>,
    /// `PMIX_IMMEDIATE` ("pmix.immediate").
    pub immediate: bool,
    /// `PMIX_OPTIONAL` ("pmix.optional").
    pub optional: bool,
}

#[cfg(test)]
mod tests {
    use super::Qualifiers;

    #[test]
    fn none_is_default() {
        assert_eq!(Qualifiers::NONE, Qualifiers::default());
    }
}
