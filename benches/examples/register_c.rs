//! Registration through the C ABI, for profiling: the synthetic job as a C `pmix_info_t` array
//! (what `rshm_server_register_nspace` receives), then the table built from it two ways, timed in
//! the same process: converted into `Info` trees first (`read_infos`, the old path) and read in
//! place (`reg_infos`, what the server shim does). Both must give the same segment.
//! `cargo run --release -p rshm-benches --example register_c -- 1000000`; RSHM_IN_PLACE=1 times
//! only the in-place path, RSHM_REPEAT=n repeats, RSHM_TOUCH=1 adds the memory floor,
//! RSHM_EXTRA=1 gives each proc array two keys more (PMIX_REINCARNATION and a locality string,
//! as PRRTE sends), which are stored as entries of the rank.
use std::time::Instant;

use rshm_abi::c::{c_info, destruct_value, read_infos, reg_infos};
use rshm_abi::types::pmix_info_t;

fn main() {
    let ranks: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let host = Some("node00000");
    let mut infos = rshm_benches::registration(ranks, 64);
    if std::env::var_os("RSHM_EXTRA").is_some() {
        add_extras(&mut infos);
    }
    let mut c: Vec<pmix_info_t> = infos.iter().map(|i| c_info(i).unwrap()).collect();
    drop(infos);
    // glibc merges the millions of small chunks just freed at the next large allocation
    // (malloc_consolidate, ~0.5 s at 1M): here, not inside the first timed registration.
    drop(std::hint::black_box(Vec::<u8>::with_capacity(64 << 10)));
    let runs: u32 = std::env::var("RSHM_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1);
    // RSHM_IN_PLACE=1: only the in-place path (for a profiler).
    let in_place_only = std::env::var_os("RSHM_IN_PLACE").is_some();
    // RSHM_TOUCH=1: first read every key and value the build reads, in its order: the memory
    // floor the build is compared with.
    let touch = std::env::var_os("RSHM_TOUCH").is_some();
    for _ in 0..runs {
        if touch {
            let t = Instant::now();
            let sum = touch_walk(&c);
            println!(
                "touch walk (the lines the build reads, nothing else) {:.0} ms ({sum})",
                t.elapsed().as_secs_f64() * 1e3
            );
        }
        let t0 = Instant::now();
        let old = (!in_place_only).then(|| {
            // SAFETY: `c` is a live array of infos written by `c_info`.
            let infos = unsafe { read_infos(c.as_ptr(), c.len()) }.unwrap();
            let t1 = Instant::now();
            let old = rshm_gds::jobdata::build(host, &infos).unwrap().0;
            let t2 = Instant::now();
            drop(infos);
            (old, t1, t2)
        });
        let t3 = Instant::now();
        let (old, t1, t2) = match old {
            Some(o) => o,
            None => (rshm_gds::TableBuilder::new(), t0, t0),
        };
        // SAFETY: as above; `c` outlives the view and is not changed meanwhile.
        let view = unsafe { reg_infos(c.as_ptr(), c.len()) }.unwrap();
        let t4 = Instant::now();
        let (new, s) = rshm_gds::jobdata::build(host, view).unwrap();
        let t5 = Instant::now();
        let bytes = new.encode(1).unwrap();
        let t6 = Instant::now();
        assert!(
            in_place_only || old.encode(1).unwrap() == bytes,
            "the two paths differ"
        );
        let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1e3;
        println!(
            "{} ranks, {} bytes: converted: read_infos {:.0} ms + build {:.0} ms + drop {:.0} ms = {:.0} ms; \
             in place: reg_infos {:.0} ms + build {:.0} ms = {:.0} ms (ratio {:.1}); encode {:.0} ms",
            s.job_size,
            bytes.len(),
            ms(t0, t1),
            ms(t1, t2),
            ms(t2, t3),
            ms(t0, t3),
            ms(t3, t4),
            ms(t4, t5),
            ms(t3, t5),
            ms(t0, t3) / ms(t3, t5),
            ms(t5, t6)
        );
    }
    for i in &mut c {
        // SAFETY: each value was written by `c_info` and is destructed once.
        unsafe { destruct_value(&mut i.value) };
    }
}

/// Read a byte of every key and every value of `c` and of its info arrays (one level down, where
/// the proc arrays are), in array order.
fn touch_walk(c: &[pmix_info_t]) -> u64 {
    let mut sum = 0u64;
    for i in c {
        sum = sum.wrapping_add(i.key[5] as u64);
        if i.value.type_ != rshm_gds::value::types::DATA_ARRAY {
            continue;
        }
        // SAFETY: `c_info` wrote this value as a data array: `darray` points to a live
        // pmix_data_array_t whose `array` holds `size` infos (the proc arrays' elements).
        unsafe {
            let da = i.value.data.darray;
            if (*da).type_ != rshm_gds::value::types::INFO {
                continue;
            }
            let e = (*da).array.cast::<pmix_info_t>();
            for k in 0..(*da).size {
                let x = &*e.add(k);
                sum = sum
                    .wrapping_add(x.key[5] as u64)
                    .wrapping_add(x.value.type_ as u64)
                    .wrapping_add(x.value.data.size as u64);
            }
        }
    }
    sum
}

/// Two keys more in every proc array: PMIX_REINCARNATION and PMIX_LOCALITY_STRING.
fn add_extras(infos: &mut [rshm_gds::Info]) {
    let procs = infos.iter_mut().filter(|i| i.key == "pmix.pdata");
    for (rank, info) in procs.enumerate() {
        let rshm_gds::Value::DataArray(a) = &mut info.value else {
            continue;
        };
        a.items
            .push(rshm_gds::Value::Info(Box::new(rshm_gds::Info::new(
                "pmix.reinc",
                rshm_gds::Value::Uint32(0),
            ))));
        a.items
            .push(rshm_gds::Value::Info(Box::new(rshm_gds::Info::new(
                "pmix.locstr",
                rshm_gds::Value::String(format!(
                    "SK0:L3{}:L2{rank}:L1{rank}:CR{rank}:HT{rank}",
                    rank % 2
                )),
            ))));
    }
}
