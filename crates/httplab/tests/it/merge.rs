//! `httplab merge` as a user runs it: files in, one file out, clear errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hdrhistogram::Histogram;
use httplab_model::{Document, Latency, RunResult, RUN_SCHEMA};

fn shard(i: u32, n: u32, samples_us: &[u64]) -> RunResult {
    let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
    for &s in samples_us {
        h.record(s).unwrap();
    }
    let mut r = RunResult {
        schema: RUN_SCHEMA.into(),
        started_at: "2026-03-01T12:00:00Z".into(),
        ..Default::default()
    };
    r.config.facts.client_shard = Some(httplab_model::ClientShard { index: i, count: n });
    r.config.facts.run_id = Some("cli-run".into());
    r.reply.sample_interval_s = 1.0;
    r.totals.requests = samples_us.len() as u64;
    r.totals.replies = samples_us.len() as u64;
    r.totals.test_duration_s = 5.0;
    r.latency.response = Latency::from_histogram(&h);
    r
}

fn write(dir: &Path, name: &str, r: &RunResult) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string(r).unwrap()).unwrap();
    p
}

fn merge(args: &[&Path], out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_httplab"))
        .arg("merge")
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .expect("run httplab merge")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn merge_writes_the_output() {
    let d = tempfile::tempdir().unwrap();
    let a = write(d.path(), "a.json", &shard(0, 2, &[1000, 2000, 3000]));
    let b = write(d.path(), "b.json", &shard(1, 2, &[4000, 100_000]));
    let out = d.path().join("all.json");
    // Any order.
    let o = merge(&[&b, &a], &out);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("2 shards"), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    let Document::Run(r) = Document::from_json(&text).unwrap() else {
        panic!("not a run")
    };
    assert_eq!(r.totals.replies, 5);
    assert_eq!(r.latency.response.count, 5);
    assert_eq!(r.latency.response.max_ms, 100.0 + 0.031); // highest equivalent value at 3 digits
    assert_eq!(r.shards.len(), 2);
    // `httplab report` renders it like any run, plus the per-shard table.
    let rep = d.path().join("report");
    let o = Command::new(env!("CARGO_BIN_EXE_httplab"))
        .arg("report")
        .arg(&out)
        .arg("-o")
        .arg(&rep)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(rep.join("index.html")).unwrap();
    assert!(html.contains("Client shards of"), "no shard table");
    assert!(html.contains("Response time percentiles"));
    // Refuses to overwrite an input.
    let o = merge(&[&a, &b], &a);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("also an input"), "{}", stderr(&o));
}

#[test]
fn missing_and_overlapping_shards_fail_clearly() {
    let d = tempfile::tempdir().unwrap();
    let a = write(d.path(), "a.json", &shard(0, 3, &[1000]));
    let b = write(d.path(), "b.json", &shard(1, 3, &[1000]));
    let b2 = write(d.path(), "b2.json", &shard(1, 3, &[2000]));
    let out = d.path().join("all.json");
    let o = merge(&[&a, &b], &out);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("missing shard(s) 2/3"),
        "{}",
        stderr(&o)
    );
    let o = merge(&[&a, &b, &b2], &out);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("shard 1/3 given twice") && e.contains("b2.json"),
        "{e}"
    );
    assert!(!out.exists(), "no output after a refusal");
}

#[test]
fn bad_files_fail_clearly() {
    let d = tempfile::tempdir().unwrap();
    let a = write(d.path(), "a.json", &shard(0, 1, &[1000]));
    let junk = d.path().join("junk.json");
    std::fs::write(&junk, "{ not json").unwrap();
    let out = d.path().join("all.json");
    let o = merge(&[&a, &junk], &out);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("junk.json: not an httplab result"),
        "{}",
        stderr(&o)
    );
    let o = merge(&[&d.path().join("absent.json")], &out);
    assert!(
        stderr(&o).contains("cannot read") && stderr(&o).contains("absent.json"),
        "{}",
        stderr(&o)
    );
    // Usage errors exit 2; --help explains the flags.
    let o = Command::new(env!("CARGO_BIN_EXE_httplab"))
        .args(["merge", "a.json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = Command::new(env!("CARGO_BIN_EXE_httplab"))
        .args(["merge", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&o.stdout);
    for flag in ["--output", "--force", "--max-skew", "--quiet"] {
        assert!(help.contains(flag), "{flag} missing from --help");
    }
    // One shard alone (1/1) is a valid merge.
    let o = merge(&[&a], &out);
    assert!(o.status.success(), "{}", stderr(&o));
}
