//! The preloaded PMIx_Get against libpmix itself: tools/pmix-host runs the same job twice over
//! Debian's real libpmix 4.2.2 (`PMIX_MCA_gds=hash`), once plain and once with the host also
//! registering the job through server-shim (`--rshm`) and every client started with
//! `LD_PRELOAD=librshm_client_preload.so`. The real clients ask the whole query corpus (every realm
//! rule, posted cards, absent keys); each answer must equal libpmix's own, except the
//! documented differences of gds/tests/support/differences.rs (where the standard's text shows
//! OpenPMIx wrong; docs/jobdata.md), and each client must have been answered from the store.
//! The same holds with the store written by the gds component instead (`PMIX_MCA_gds=rshm,hash`,
//! no `--rshm`): the deployment docs/openpmix.md recommends for fast Gets; and with the store
//! written by the server preload (`LD_PRELOAD=librshm_server_preload.so` on the unmodified host,
//! no `--rshm`): the path for server libraries the component does not reach.

#[path = "../../../gds/tests/support/pmixhost/mod.rs"]
mod pmixhost;

#[path = "../../../gds/tests/support/differences.rs"]
mod differences;

#[path = "support/build.rs"]
mod build;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use build::{component_dir, libraries, libraries_and_client, server_preload};
use differences::{FULL, MINIMAL, NODE_IDENTITY};

/// libpmix's own answer to a Get its server has to wait for (a remote rank's posted key) is
/// TIMEOUT or NOT-FOUND depending on timing, in both runs alike (the preload passes those on):
/// as in the conformance test, host-side statuses count as NOT-FOUND.
fn normalize(a: &pmixhost::Answer) -> (&str, &str, &str) {
    match a.status.as_str() {
        "NOT-SUPPORTED" | "TIMEOUT" | "NOT-FOUND" => ("NOT-FOUND", "-", "-"),
        s => (s, &a.type_name, &a.value),
    }
}

/// Who writes the store the preloaded clients read.
#[derive(Clone, Copy, PartialEq)]
enum Writer {
    /// tools/pmix-host registers through server-shim beside libpmix (`--rshm`).
    ServerShim,
    /// libpmix's gds component (`pmix_mca_gds_rshm.so`, `PMIX_MCA_gds=rshm,hash`).
    Component,
    /// `librshm_server_preload.so` preloaded into the host, which registers through libpmix
    /// alone.
    ServerPreload,
}

fn check(job: &str, known: &[(&str, differences::Why)]) {
    check_with(job, known, Writer::ServerShim);
}

fn check_with(job: &str, known: &[(&str, differences::Why)], writer: Writer) {
    let (server, preload) = libraries();
    let component = (writer == Writer::Component).then(component_dir);
    let stats = tempfile::tempdir().expect("tempdir");
    let known: BTreeSet<&str> = known
        .iter()
        .map(|(id, _)| *id)
        .chain(NODE_IDENTITY.iter().copied())
        .collect();
    let mut answered_total = 0u64;
    for corpus in ["examples/corpus-2node.txt", "examples/corpus-realms.txt"] {
        let (_, plain) = pmixhost::run_job(job, corpus, &[("PMIX_MCA_gds", "hash")]);
        let server_s = server.display().to_string();
        let preload_s = preload.display().to_string();
        let stats_s = stats.path().display().to_string();
        let mut env = vec![
            ("PMIX_MCA_gds", "hash"),
            ("LD_PRELOAD", preload_s.as_str()),
            ("RSHM_PRELOAD_STATS", stats_s.as_str()),
        ];
        let mut args = vec!["--rshm", server_s.as_str()];
        let component_s = component.as_ref().map(|d| d.display().to_string());
        if let Some(dir) = &component_s {
            env[0] = ("PMIX_MCA_gds", "rshm,hash");
            env.push(("PMIX_MCA_mca_base_component_path", dir));
            args.clear();
        }
        // Both preloads in the host; its clients inherit them (the server one stays idle there).
        let both = format!("{}:{preload_s}", server_preload().display());
        if writer == Writer::ServerPreload {
            env[1] = ("LD_PRELOAD", both.as_str());
            args.clear();
        }
        let (_, pre) =
            pmixhost::run_job_with_args(job, corpus, &env, &args, Duration::from_secs(60));
        let key = |a: &pmixhost::Answer| (a.id.clone(), a.rank);
        let plain: BTreeMap<_, _> = plain.iter().map(|a| (key(a), a)).collect();
        let pre: BTreeMap<_, _> = pre.iter().map(|a| (key(a), a)).collect();
        assert_eq!(
            plain.keys().collect::<Vec<_>>(),
            pre.keys().collect::<Vec<_>>(),
            "{job} {corpus}: the two runs answered different queries"
        );
        let mut undocumented = Vec::new();
        for (k, a) in &plain {
            let b = pre[k];
            let same = normalize(a) == normalize(b);
            if !same && !known.contains(k.0.as_str()) {
                undocumented.push(format!(
                    "{} rank {}: libpmix {} {} {} / preloaded {} {} {}",
                    k.0, k.1, a.status, a.type_name, a.value, b.status, b.type_name, b.value
                ));
            }
        }
        assert!(
            undocumented.is_empty(),
            "{job} {corpus}: preloaded answers differ from libpmix's: {undocumented:#?}"
        );
        eprintln!(
            "{job} + {corpus}: {} answers equal or documented",
            plain.len()
        );
    }
    // Every client process wrote its counters at exit: each was answered from the store.
    let mut clients = 0;
    for e in std::fs::read_dir(stats.path()).expect("stats dir") {
        let text = std::fs::read_to_string(e.expect("entry").path()).expect("stats");
        let answered: u64 = text
            .lines()
            .find_map(|l| l.strip_prefix("answered "))
            .and_then(|n| n.parse().ok())
            .expect("answered line");
        assert!(
            answered > 0,
            "a client was never answered from the store: {text}"
        );
        answered_total += answered;
        clients += 1;
    }
    assert!(clients >= 8, "only {clients} preloaded clients reported");
    eprintln!("{job}: {clients} preloaded clients, {answered_total} Gets answered from rshm");
}

#[test]
fn preloaded_get_equals_libpmix_full_registration() {
    check("examples/job-2node.txt", FULL);
}

#[test]
fn preloaded_get_equals_libpmix_minimal_registration() {
    check("examples/job-2node-minimal.txt", MINIMAL);
}

#[test]
fn preloaded_get_over_the_gds_component_equals_libpmix_full_registration() {
    check_with("examples/job-2node.txt", FULL, Writer::Component);
}

#[test]
fn preloaded_get_over_the_gds_component_equals_libpmix_minimal_registration() {
    check_with("examples/job-2node-minimal.txt", MINIMAL, Writer::Component);
}

#[test]
fn preloaded_get_over_the_server_preload_equals_libpmix_full_registration() {
    check_with("examples/job-2node.txt", FULL, Writer::ServerPreload);
}

#[test]
fn preloaded_get_over_the_server_preload_equals_libpmix_minimal_registration() {
    check_with(
        "examples/job-2node-minimal.txt",
        MINIMAL,
        Writer::ServerPreload,
    );
}

/// The direct client and the preload over one store follow one answer policy (docs/jobdata.md
/// "Answer policy"): wherever the direct client (`pmix-client -d librshm_client.so`, no libpmix
/// in the client) gets the store's value, the preloaded client gets that value too, including
/// the standard's node identity (`* PMIX_HOSTNAME`, `* PMIX_NODEID`) and a rank's app and node
/// values, where gds/hash answers NOT-FOUND. (The gds component consults the same policy but
/// takes only the Gets where OpenPMIx 4.2.2's own store agrees: component/tests/openpmix.rs
/// holds its answers equal to hash's.)
#[test]
fn direct_and_preloaded_clients_get_the_same_store_answers() {
    let job = "examples/job-2node.txt";
    let corpus = "examples/corpus-realms.txt";
    let (server, preload, client) = libraries_and_client();
    let (server_s, preload_s) = (server.display().to_string(), preload.display().to_string());
    let tool = pmixhost::build();
    let direct_cmd = format!(
        "{} -d {} {}",
        tool.join("pmix-client").display(),
        client.display(),
        pmixhost::tool_dir().join(corpus).display()
    );
    let limit = Duration::from_secs(90);
    let (_, direct) = pmixhost::run_job_with_args(
        job,
        corpus,
        &[("PMIX_MCA_gds", "hash")],
        &["--rshm", &server_s, "--client-cmd", &direct_cmd],
        limit,
    );
    let (_, pre) = pmixhost::run_job_with_args(
        job,
        corpus,
        &[("PMIX_MCA_gds", "hash"), ("LD_PRELOAD", &preload_s)],
        &["--rshm", &server_s],
        limit,
    );
    let by_key = |v: &[pmixhost::Answer]| -> BTreeMap<(String, u32), pmixhost::Answer> {
        v.iter()
            .map(|a| ((a.id.clone(), a.rank), a.clone()))
            .collect()
    };
    let pre = by_key(&pre);
    let queries = pmixhost::read_corpus(corpus);
    // PMIX_APP_ARGV is the client command, which differs between the runs by construction.
    let argv: BTreeSet<&str> = queries
        .iter()
        .filter(|q| q.key == "pmix.app.argv")
        .map(|q| q.id.as_str())
        .collect();
    let mut differ = Vec::new();
    let mut compared = 0;
    for a in direct
        .iter()
        .filter(|a| a.status == "SUCCESS" && !argv.contains(a.id.as_str()))
    {
        let k = (a.id.clone(), a.rank);
        let want = normalize(a);
        let got = pre.get(&k).map(normalize);
        if got != Some(want) {
            differ.push(format!(
                "{} rank {}: direct {want:?}, preloaded {got:?}",
                k.0, k.1
            ));
        }
        compared += 1;
    }
    assert!(compared > 100, "only {compared} store answers");
    assert!(
        differ.is_empty(),
        "the direct and preloaded clients answer differently: {differ:#?}"
    );
    eprintln!("{compared} store answers: direct and preloaded clients agree");
}
