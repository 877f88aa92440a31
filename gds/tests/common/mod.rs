//! Shared test fixtures: a value of every storable type, and a private store directory.

#![allow(dead_code)]

use rshm_gds::value::{
    types, Coord, Cpuset, DeviceDistance, Endpoint, Envar, Geometry, Proc, ProcInfo,
};
use rshm_gds::{StoreOptions, Value};

/// One value of every storable `pmix_value_t` type (and nested arrays), with distinct contents.
pub fn every_value() -> Vec<(&'static str, Value)> {
    let proc = Proc {
        nspace: "job-α".into(),
        rank: 7,
    };
    vec![
        ("undef", Value::Undef),
        ("bool", Value::Bool(true)),
        ("byte", Value::Byte(0xab)),
        ("string", Value::String("hello, shared memory".into())),
        ("empty-string", Value::String(String::new())),
        ("null-string", Value::NullString),
        ("size", Value::Size(u64::MAX - 1)),
        ("pid", Value::Pid(4242)),
        ("int", Value::Int(-5)),
        ("int8", Value::Int8(-8)),
        ("int16", Value::Int16(-16)),
        ("int32", Value::Int32(-32)),
        ("int64", Value::Int64(i64::MIN)),
        ("uint", Value::Uint(5)),
        ("uint8", Value::Uint8(8)),
        ("uint16", Value::Uint16(16)),
        ("uint32", Value::Uint32(u32::MAX)),
        ("uint64", Value::Uint64(u64::MAX)),
        ("float", Value::Float(1.5)),
        ("double", Value::Double(-2.25e300)),
        (
            "timeval",
            Value::Timeval {
                sec: 1_700_000_000,
                usec: 999_999,
            },
        ),
        ("time", Value::Time(1_700_000_000)),
        ("status", Value::Status(-46)),
        ("proc", Value::Proc(proc.clone())),
        ("byte-object", Value::ByteObject((0..=255).collect())),
        ("persistence", Value::Persistence(2)),
        ("scope", Value::Scope(3)),
        ("data-range", Value::DataRange(4)),
        ("data-type", Value::DataType(types::STRING)),
        ("proc-state", Value::ProcState(50)),
        (
            "proc-info",
            Value::ProcInfo(ProcInfo {
                proc: proc.clone(),
                hostname: "node001".into(),
                executable: "/usr/bin/a.out".into(),
                pid: 1234,
                exit_code: -1,
                state: 4,
            }),
        ),
        (
            "compressed-string",
            Value::CompressedString(vec![0x78, 0x9c, 1, 2, 3]),
        ),
        ("alloc-directive", Value::AllocDirective(2)),
        ("iof-channel", Value::IofChannel(0x7)),
        (
            "envar",
            Value::Envar(Envar {
                name: "PATH".into(),
                value: "/opt/bin".into(),
                separator: b':',
            }),
        ),
        (
            "coord",
            Value::Coord(Coord {
                view: 1,
                coords: vec![1, 2, 3],
            }),
        ),
        ("regex", Value::Regex(b"pmix[node[3:1-4]]".to_vec())),
        ("job-state", Value::JobState(3)),
        ("link-state", Value::LinkState(1)),
        (
            "cpuset",
            Value::ProcCpuset(Cpuset {
                source: "hwloc".into(),
                bitmap: "0x0000000f".into(),
            }),
        ),
        (
            "geometry",
            Value::Geometry(Geometry {
                fabric: 2,
                uuid: "fab-uuid".into(),
                osname: "ib0".into(),
                coordinates: vec![
                    Coord {
                        view: 0,
                        coords: vec![9],
                    },
                    Coord {
                        view: 1,
                        coords: vec![],
                    },
                ],
            }),
        ),
        (
            "device-distance",
            Value::DeviceDistance(DeviceDistance {
                uuid: "dev-uuid".into(),
                osname: "mlx5_0".into(),
                device_type: 0x20,
                mindist: 10,
                maxdist: 20,
            }),
        ),
        (
            "endpoint",
            Value::Endpoint(Endpoint {
                uuid: "ep".into(),
                osname: "hfi1_0".into(),
                endpt: vec![1, 2],
            }),
        ),
        ("device-type", Value::DeviceType(0x4000)),
        ("locality", Value::Locality(0x0f)),
        ("compressed-bytes", Value::CompressedBytes(vec![9; 33])),
        ("proc-nspace", Value::ProcNspace("job-β".into())),
        ("proc-rank", Value::ProcRank(u32::MAX - 1)),
        ("stor-medium", Value::StorMedium(1)),
        ("stor-access", Value::StorAccess(2)),
        ("stor-persist", Value::StorPersist(3)),
        ("stor-access-type", Value::StorAccessType(4)),
        (
            "string-array",
            Value::array(
                types::STRING,
                vec![Value::String("a".into()), Value::String("b".into())],
            ),
        ),
        ("empty-array", Value::array(types::UINT32, vec![])),
        (
            "value-array",
            Value::array(
                types::VALUE,
                vec![
                    Value::Int(1),
                    Value::String("two".into()),
                    Value::Proc(proc),
                ],
            ),
        ),
        (
            "nested-info-array",
            Value::info_array([
                ("pmix.hname".to_string(), Value::String("node002".into())),
                (
                    "inner".to_string(),
                    Value::info_array([(
                        "deeper".to_string(),
                        Value::array(
                            types::DATA_ARRAY,
                            vec![Value::array(types::INT8, vec![Value::Int8(-1)])],
                        ),
                    )]),
                ),
            ]),
        ),
    ]
}

/// A private base directory for stores, removed on drop.
pub fn base_dir() -> tempfile::TempDir {
    let parent = if std::path::Path::new("/dev/shm").is_dir() {
        "/dev/shm"
    } else {
        "/tmp"
    };
    tempfile::Builder::new()
        .prefix("gds-test-")
        .tempdir_in(parent)
        .expect("temp dir")
}

/// Options for a store in `base` with sweeping off (tests run in parallel).
pub fn opts(base: &std::path::Path) -> StoreOptions {
    StoreOptions {
        base_dir: Some(base.to_path_buf()),
        sweep: false,
        ..StoreOptions::default()
    }
}

/// A field of /proc/self/status in kB (`VmRSS`, `RssAnon`, ...).
pub fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// xorshift64: deterministic, seeded per case.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// A new store in a private directory (the directory goes when the first value is dropped).
pub fn store() -> (tempfile::TempDir, rshm_gds::Writer) {
    let base = base_dir();
    let w = rshm_gds::Writer::create(opts(base.path())).unwrap();
    (base, w)
}

/// Poll `done` every millisecond until it holds or `limit` passes: for a test that needs another
/// thread to have run, however long a loaded machine takes to schedule it. The caller asserts.
pub fn wait_until(limit: std::time::Duration, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + limit;
    while !done() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// A store in a private directory that holds `table` as namespace `ns` (part DATA), and a
/// reader attached to it. Keep all three alive while reading: dropping the writer removes its
/// store, dropping the directory removes everything.
pub fn published(
    ns: &str,
    table: &rshm_gds::TableBuilder,
) -> (tempfile::TempDir, rshm_gds::Writer, rshm_gds::Reader) {
    let base = base_dir();
    let mut w = rshm_gds::Writer::create(opts(base.path())).unwrap();
    let mut tx = w.begin();
    tx.put_table(ns, rshm_gds::part::DATA, table).unwrap();
    tx.commit().unwrap();
    let r = rshm_gds::Reader::attach(w.path()).unwrap();
    (base, w, r)
}
