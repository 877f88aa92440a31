use gds::Value;
use rshm_server::server::{PostedValue, Server, ServerOptions};
#[test]
fn storm() {
    for n in [16u32, 64, 128, 256, 512, 1024] {
        let base = tempfile::tempdir_in("/dev/shm").unwrap();
        let mut s = Server::open(ServerOptions {
            base_dir: Some(base.path().into()),
            ..ServerOptions::default()
        })
        .unwrap();
        let t = std::time::Instant::now();
        for rank in 0..n {
            let vals: Vec<PostedValue> = (0..16)
                .map(|k| PostedValue {
                    nspace: "ns".into(),
                    rank,
                    scope: 3,
                    key: format!("mpi.card.{k}"),
                    value: Value::ByteObject(vec![rank as u8; 200]),
                })
                .collect();
            s.store(&vals).unwrap();
        }
        let el = t.elapsed();
        let st = s.stats();
        eprintln!(
            "N={n}: {:?} total, {:?}/commit, pubs {}, bytes {}",
            el,
            el / n,
            st.publications,
            st.bytes_written
        );
    }
}
