//! The same seeded run twice gives the same result document in every field
//! that does not measure time: counts, sizes, configuration, the chosen
//! paths and think times, statuses. Fields that measure time (latencies,
//! durations, rates achieved, CPU, intervals, timestamps, lag) and the
//! host's description are removed before comparing; everything else must
//! be byte-identical.

use crate::common;

use common::{Mode, TestServer};
use serde_json::Value;

/// Keys whose value is a measurement of time (or of this host), at any
/// depth. A key that starts with `ms_` or ends in `_ms`, `_s`, `_us` or
/// `_ns` (and the like) measures time too.
const TIMED: &[&str] = &[
    "latency",
    "series",
    "started_at",
    "cpu",
    "host",
    "self_check",
    "calibration",
    // How many connections happened to be open or connecting at once
    // depends on how fast the server answered.
    "max_concurrent_connections",
    "max_connect_burst",
];

/// Measurements of time under a key that elsewhere names configuration.
const TIMED_PATHS: &[&str] = &[".reply.rate"];

fn timed(key: &str) -> bool {
    TIMED.contains(&key)
        || key.starts_with("ms_")
        || ["_ms", "_s", "_us", "_ns", "_per_s", "_rate", "_pct"]
            .iter()
            .any(|end| key.ends_with(end))
}

fn strip(v: &mut Value, at: &str) {
    match v {
        Value::Object(m) => {
            m.retain(|k, _| !timed(k) && !TIMED_PATHS.contains(&format!("{at}.{k}").as_str()));
            for (k, x) in m.iter_mut() {
                strip(x, &format!("{at}.{k}"));
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| strip(x, at)),
        _ => {}
    }
}

fn paths(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => m
            .iter()
            .for_each(|(k, x)| paths(x, format!("{at}.{k}"), out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| paths(x, format!("{at}[{i}]"), out)),
        x => out.push(format!("{at} = {x}")),
    }
}

fn run_json(args: &str) -> Value {
    let spec = httplab_load::parse_args(args.split_whitespace()).expect("parse args");
    let r = httplab_load::run(&spec, false).expect("run");
    let mut v = serde_json::to_value(&r).expect("serialise");
    strip(&mut v, "");
    v
}

fn same_twice(args: &str) {
    let a = run_json(args);
    let b = run_json(args);
    // What is compared still holds the run's counts.
    assert!(
        a["totals"]["replies"].as_u64().is_some_and(|n| n > 0),
        "{a}"
    );
    assert!(a["config"]["command_line"].is_array(), "{a}");
    if a != b {
        let (mut pa, mut pb) = (Vec::new(), Vec::new());
        paths(&a, String::new(), &mut pa);
        paths(&b, String::new(), &mut pb);
        let differ: Vec<String> = pa
            .iter()
            .zip(&pb)
            .filter(|(x, y)| x != y)
            .map(|(x, y)| format!("{x}  vs  {y}"))
            .collect();
        panic!(
            "two runs of `{args}` differ ({} vs {} leaves):\n{}",
            pa.len(),
            pb.len(),
            differ.join("\n")
        );
    }
}

#[test]
fn seeded_open_loop_with_random_arrivals_and_paths() {
    let s = TestServer::start(Mode::Ok(vec![b'x'; 300]));
    let dir = tempfile::tempdir().expect("tmp");
    let list = dir.path().join("paths");
    std::fs::write(&list, "/a\n/b\n/c\n/d\n").expect("write list");
    same_twice(&format!(
        "--server 127.0.0.1 --port {} --rate 400 --period e0.0025 --num-conns 40 --num-calls 3 \
         --uri-list {} --seed 7 --timeout 5",
        s.port(),
        list.display()
    ));
}

#[test]
fn seeded_closed_loop_users() {
    let s = TestServer::start(Mode::Ok(vec![b'y'; 100]));
    same_twice(&format!(
        "--server 127.0.0.1 --port {} --users 4 --requests-per-user 5 --think 1ms \
         --seed 11 --timeout 5",
        s.port()
    ));
}
