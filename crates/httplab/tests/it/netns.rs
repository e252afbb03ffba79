//! A real multi-host run on one machine: network namespaces give one server
//! host and three client hosts on a private bridge. Three `httplab load
//! --client i/3` shards start on one `--start-at` instant from the three
//! client hosts, `httplab merge` merges them, and the merged run must equal
//! the demanded schedule and one unsharded run, with percentiles equal to
//! those of the union of the shards' raw latencies.
//!
//! Needs root and `ip` (iproute2). Under CI (`CI=true`) it fails when it
//! cannot run; elsewhere it skips with the reason. Every namespace it makes
//! (and with them the bridge and the veth pairs) is deleted on the way out,
//! also when an assertion fails. The namespaces have no route to anything
//! outside them.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use hdrhistogram::Histogram;
use httplab_model::{Document, RunResult, STANDARD_PERCENTILES};

/// Connections of the run, calls per connection and the demanded rate.
const CONNS: u64 = 300;
const CALLS: u64 = 2;
const RATE: f64 = 300.0;
/// Every command of the test is bounded by this (coreutils `timeout`).
const CMD_TIMEOUT_S: &str = "60";

/// Skips with a visible reason, or fails under CI.
fn skip(reason: &str) {
    httplab_skip::skip(&format!("the network-namespace test: {reason}"));
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

fn run(cmd: &mut Command) -> Output {
    let o = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        o.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn ip(args: &[&str]) -> Output {
    run(Command::new("ip").args(args))
}

/// The namespaces of the test; dropping it deletes them (and so the veth
/// pairs and the bridge inside them).
struct Hosts {
    prefix: String,
    made: Vec<String>,
}

impl Hosts {
    fn ns(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// Bridge namespace `br` (the switch), server `s` at 10.77.0.1 and
    /// clients `c0`..`c2` at 10.77.0.2..4, each linked to the bridge by a
    /// veth pair. No default route anywhere.
    fn build(&mut self) {
        for n in ["br", "s", "c0", "c1", "c2"] {
            let ns = self.ns(n);
            let _ = Command::new("ip").args(["netns", "del", &ns]).output();
            ip(&["netns", "add", &ns]);
            self.made.push(ns.clone());
            ip(&["-n", &ns, "link", "set", "lo", "up"]);
        }
        let br = self.ns("br");
        ip(&[
            "-n",
            &br,
            "link",
            "add",
            "br0",
            "type",
            "bridge",
            "forward_delay",
            "0",
        ]);
        ip(&["-n", &br, "link", "set", "br0", "up"]);
        for (k, n) in ["s", "c0", "c1", "c2"].iter().enumerate() {
            let host = self.ns(n);
            let port = format!("v{k}");
            ip(&[
                "-n", &br, "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns",
                &host,
            ]);
            ip(&["-n", &br, "link", "set", &port, "master", "br0"]);
            ip(&["-n", &br, "link", "set", &port, "up"]);
            let addr = format!("10.77.0.{}/24", k + 1);
            ip(&["-n", &host, "addr", "add", &addr, "dev", "eth0"]);
            ip(&["-n", &host, "link", "set", "eth0", "up"]);
        }
    }

    /// `httplab ARGS` inside namespace `n`, bounded in time.
    fn httplab(&self, n: &str, args: &[&str]) -> Command {
        let mut c = Command::new("timeout");
        c.args([CMD_TIMEOUT_S, "ip", "netns", "exec", &self.ns(n)])
            .arg(env!("CARGO_BIN_EXE_httplab"))
            .args(args);
        c
    }

    /// `httplab ARGS` inside namespace `n` as the child itself (`ip netns
    /// exec` execs it), so that killing the child kills httplab.
    fn httplab_direct(&self, n: &str, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns(n)])
            .arg(env!("CARGO_BIN_EXE_httplab"))
            .args(args);
        c
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for ns in self.made.iter().rev() {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

/// The server process; killed and reaped on drop.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn read_run(p: &Path) -> RunResult {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    match Document::from_json(&text) {
        Ok(Document::Run(r)) => *r,
        Ok(_) => panic!("{}: not a run", p.display()),
        Err(e) => panic!("{}: {e}", p.display()),
    }
}

fn read_raw(p: &Path) -> Vec<u64> {
    std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .map(|l| l.trim().parse().expect("a latency in µs"))
        .collect()
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[test]
fn three_client_hosts_merge_to_the_one_machine_run() {
    let _turn = httplab_skip::serial::alone();
    if !is_root() {
        return skip("needs root (network namespaces)");
    }
    if Command::new("ip").arg("-V").output().is_err() {
        return skip("`ip` (iproute2) is not installed");
    }
    if Command::new("timeout").arg("--version").output().is_err() {
        return skip("`timeout` (coreutils) is not installed");
    }
    let mut hosts = Hosts {
        prefix: format!("hl{}", std::process::id()),
        made: Vec::new(),
    };
    // Creating a namespace can be refused inside a container.
    let probe = hosts.ns("probe");
    match Command::new("ip").args(["netns", "add", &probe]).output() {
        Ok(o) if o.status.success() => {
            let _ = Command::new("ip").args(["netns", "del", &probe]).output();
        }
        Ok(o) => {
            return skip(&format!(
                "`ip netns add` is not permitted here: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ))
        }
        Err(e) => return skip(&format!("`ip netns add`: {e}")),
    }
    hosts.build();

    let dir = tempfile::tempdir().unwrap();
    let www = dir.path().join("www");
    std::fs::create_dir(&www).unwrap();
    std::fs::write(www.join("index.html"), "x".repeat(1024)).unwrap();

    // The server, on the server host; its first line says where it listens.
    // Port 0: the kernel picks one inside the fresh namespace.
    let mut child = hosts
        .httplab_direct(
            "s",
            &[
                "serve",
                "-r",
                www.to_str().unwrap(),
                "-l",
                "10.77.0.1:0",
                "--workers",
                "1",
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start httplab serve");
    let stdout = child.stdout.take().expect("server stdout");
    let server = Server(child);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("server's first line");
    let url_start = line
        .find("http://")
        .unwrap_or_else(|| panic!("no address in the server's line {line:?}"));
    let base = line[url_start..]
        .split_whitespace()
        .next()
        .unwrap()
        .trim_end_matches('/');
    let url = format!("{base}/index.html");

    let period = format!("e{}", 1.0 / RATE);
    let conns = CONNS.to_string();
    let calls = CALLS.to_string();
    let common = [
        "load",
        url.as_str(),
        "--period",
        &period,
        "--num-conns",
        &conns,
        "--num-calls",
        &calls,
        "--timeout",
        "10",
        "--quiet",
    ];

    // Three shards on three client hosts, one start instant, one run id.
    let start = format!("{:.3}", unix_now() + 3.0);
    let paths = |what: &str| -> Vec<PathBuf> {
        (0..3)
            .map(|i| dir.path().join(format!("{what}-{i}")))
            .collect()
    };
    let (jsons, raws) = (paths("shard.json"), paths("raw.txt"));
    let mut shards = Vec::new();
    for i in 0..3 {
        let client = format!("{i}/3");
        let threads = if i == 1 { "2" } else { "1" };
        let mut args: Vec<&str> = common.to_vec();
        args.extend([
            "--client",
            &client,
            "--start-at",
            &start,
            "--run-id",
            "netns-test",
            "--threads",
            threads,
            "--json",
            jsons[i].to_str().unwrap(),
            "--latency-dump",
            raws[i].to_str().unwrap(),
        ]);
        let c = hosts
            .httplab(&format!("c{i}"), &args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start a shard");
        shards.push(c);
    }
    for (i, c) in shards.into_iter().enumerate() {
        let o = c.wait_with_output().expect("wait for a shard");
        assert!(
            o.status.success(),
            "shard {i}/3 failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    // One unsharded run of the same schedule, from one client host.
    let one_path = dir.path().join("one.json");
    let mut args: Vec<&str> = common.to_vec();
    args.extend(["--json", one_path.to_str().unwrap()]);
    run(&mut hosts.httplab("c0", &args));
    drop(server);

    let merged_path = dir.path().join("merged.json");
    let mut merge = Command::new(env!("CARGO_BIN_EXE_httplab"));
    merge.arg("merge");
    merge.args(&jsons).arg("-o").arg(&merged_path);
    let o = run(&mut merge);
    eprintln!("{}", String::from_utf8_lossy(&o.stderr).trim());

    let parts: Vec<RunResult> = jsons.iter().map(|p| read_run(p)).collect();
    let merged = read_run(&merged_path);
    let one = read_run(&one_path);

    // Every shard says which part it ran, of which run, from where, when.
    for (i, r) in parts.iter().enumerate() {
        let x = &r.config.facts;
        assert_eq!(
            x.client_shard.map(|s| s.to_string()),
            Some(format!("{i}/3"))
        );
        assert_eq!(x.run_id.as_deref(), Some("netns-test"));
        assert!(x.start_at.is_some() && x.host.is_some(), "{x:?}");
        // The whole run's demand, and this shard's part of it (k mod 3 == i).
        assert_eq!(r.config.num_conns, Some(CONNS));
        let mine = (CONNS - i as u64).div_ceil(3);
        assert_eq!(x.shard_sessions, Some(mine));
        assert_eq!(r.totals.connections, mine, "shard {i}");
        assert_eq!(r.errors.total, 0, "shard {i} had errors");
    }

    // Merged totals == the demanded schedule == one unsharded run's totals.
    let demanded = merged.config.num_conns.unwrap() * merged.config.num_calls.unwrap();
    assert_eq!(demanded, CONNS * CALLS);
    for (name, r) in [("merged", &merged), ("unsharded", &one)] {
        assert_eq!(r.totals.connections, CONNS, "{name}");
        assert_eq!(r.totals.requests, demanded, "{name}");
        assert_eq!(r.totals.replies, demanded, "{name}");
        assert_eq!(r.errors.total, 0, "{name}");
    }
    assert_eq!(merged.totals.connections, one.totals.connections);
    assert_eq!(merged.totals.requests, one.totals.requests);
    assert_eq!(merged.totals.replies, one.totals.replies);
    assert_eq!(merged.shards.len(), 3);

    // Merged percentiles == those of the union of the shards' raw latencies.
    let mut union = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
    let mut all: Vec<u64> = Vec::new();
    for (i, p) in raws.iter().enumerate() {
        let raw = read_raw(p);
        assert_eq!(
            raw.len() as u64,
            parts[i].totals.replies,
            "raw of shard {i}"
        );
        all.extend(raw);
    }
    for &v in &all {
        union.saturating_record(v);
    }
    all.sort_unstable();
    let h = merged
        .latency
        .response
        .histogram()
        .expect("merged histogram decodes")
        .expect("merged run has a response histogram");
    assert_eq!(h.len(), all.len() as u64);
    assert_eq!(merged.latency.response.count, all.len() as u64);
    assert_eq!(h.min(), union.min());
    assert_eq!(h.max(), union.max());
    for p in STANDARD_PERCENTILES
        .iter()
        .copied()
        .chain([0.0, 25.0, 75.0, 100.0])
    {
        let q = p / 100.0;
        let (got, want) = (h.value_at_quantile(q), union.value_at_quantile(q));
        assert_eq!(got, want, "p{p}: merged {got} µs, union {want} µs");
        // And the exact sample quantile of the union lies in the same
        // histogram bucket (3 significant digits).
        if p > 0.0 && p < 100.0 {
            let rank = ((q * all.len() as f64).ceil() as usize).clamp(1, all.len()) - 1;
            assert!(
                h.equivalent(all[rank], got),
                "p{p}: exact {} µs vs merged {got} µs",
                all[rank]
            );
        }
        if let Some(ms) = merged.latency.response.at(p) {
            let exp = want as f64 / 1000.0;
            assert!(
                (ms - exp).abs() <= 1e-9 * exp.max(1.0),
                "stored p{p} {ms} ms vs union {exp} ms"
            );
        }
    }
}
