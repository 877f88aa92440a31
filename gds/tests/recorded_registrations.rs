//! Registrations recorded from real hosts (tools/pmix-host/examples/recorded/*.reg: Open MPI
//! 4.1.4, Slurm 22.05; recorded by the gds component under `RSHM_RECORD_REGISTRATIONS`) read
//! with the registration-dump parser and built into job data: every one is accepted, with the
//! job size the host registered. (Their answers are compared with OpenPMIx's in
//! component/tests/recorded.rs.)

#[path = "support/pmixhost/mod.rs"]
mod pmixhost;

use rshm_gds::jobdata;
use rshm_gds::Value;

#[test]
fn every_recorded_registration_builds() {
    let dir = pmixhost::tool_dir().join("examples/recorded");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "reg") {
            continue;
        }
        let reg = pmixhost::read_registration(&path);
        let size = reg
            .infos
            .iter()
            .find(|i| i.key == "pmix.job.size")
            .map(|i| match i.value {
                Value::Uint32(s) => s,
                ref v => panic!("{}: PMIX_JOB_SIZE {v:?}", path.display()),
            })
            .unwrap_or_else(|| panic!("{}: no PMIX_JOB_SIZE", path.display()));
        let (_, summary) = jobdata::build(Some(&reg.local_host), &reg.infos)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(summary.job_size, size, "{}", path.display());
        eprintln!(
            "{}: {} ranks, {} nodes, {} local; local node id {:?}",
            path.file_name().unwrap().to_string_lossy(),
            summary.job_size,
            summary.nodes,
            reg.nlocalprocs,
            summary.local_nodeid
        );
        n += 1;
    }
    assert!(
        n >= 5,
        "only {n} recorded registrations in {}",
        dir.display()
    );
}
