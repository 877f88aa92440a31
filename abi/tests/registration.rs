//! A registration read in place from its C array (`reg_infos`, what the server shim does) gives
//! the same segment as the same array converted first (`read_infos`) and as the Rust infos.

use abi::c::{c_info, destruct_value, read_infos, reg_infos};
use abi::types::pmix_info_t;
use gds::jobdata::{self, synthetic};
use gds::{Info, Value};

fn to_c(infos: &[Info]) -> Vec<pmix_info_t> {
    infos.iter().map(|i| c_info(i).unwrap()).collect()
}

fn same_segment(infos: &[Info]) {
    let host = Some(synthetic::host(0));
    let want = jobdata::build(host.as_deref(), infos)
        .unwrap()
        .0
        .encode(1)
        .unwrap();
    let mut c = to_c(infos);
    // SAFETY: `c` is a live array of infos written by `c_info`, unchanged meanwhile.
    let converted = unsafe { read_infos(c.as_ptr(), c.len()) }.unwrap();
    let got = jobdata::build(host.as_deref(), &converted).unwrap().0;
    assert!(got.encode(1).unwrap() == want, "converted");
    // SAFETY: as above.
    let view = unsafe { reg_infos(c.as_ptr(), c.len()) }.unwrap();
    let got = jobdata::build(host.as_deref(), view).unwrap().0;
    assert!(got.encode(1).unwrap() == want, "in place");
    for i in &mut c {
        destruct_value(&mut i.value);
    }
}

#[test]
fn in_place_registration_gives_the_same_segment() {
    same_segment(&synthetic::registration(300, 16));
    // Proc arrays only (the size comes from them), inside a job array, with a hostname that is
    // not its node's, a non-column key and a regex node map.
    let proc = |r: u32, host: &str| {
        Info::array(
            "pmix.pdata",
            vec![
                Info::new("pmix.rank", Value::ProcRank(r)),
                Info::new("pmix.hname", Value::String(host.into())),
                Info::new("pmix.locstr", Value::String(format!("L{r}"))),
                Info::new("pmix.lrank", Value::Uint16(r as u16)),
            ],
        )
    };
    same_segment(&[
        Info::new("pmix.nmap", Value::Regex(b"pmix[node[5:0-1]]\0".to_vec())),
        proc(0, "node00000"),
        Info::array("pmix.job.arr", vec![proc(1, "elsewhere")]),
        proc(2, "node00001"),
    ]);
}
