//! Studies over TLS and sharded studies:
//! - a small TLS study end to end against `httplab serve --tls-*`;
//! - `httplab load` over TLS (`https://` with the study's certificate as CA,
//!   and httperf's `--ssl`) against nginx, h2o, Apache and lighttpd, each
//!   started through the study's own server code with the study's
//!   certificate (a missing peer fails under CI=true, is skipped otherwise);
//! - `--client I/N` in a study: recorded, the schedule split, the shards'
//!   run files merge to the whole.

use crate::common;

use std::path::Path;

use common::{ci, httplab_serving};
use httplab_model as m;
use httplab_study::runner::{self, Options};
use httplab_study::{corpus, servers, shard, spec, tls};

const FAST: &str = "[protocol]\nwarmup_s = 0.1\nwindow_s = 0.3\nmin_repetitions = 2\nmax_repetitions = 2\nseed = 7\n";

fn parse(text: &str) -> spec::StudyFile {
    spec::parse(text, "t.toml").unwrap_or_else(|e| panic!("{e:#}"))
}

#[test]
fn tls_study_end_to_end_against_httplab() {
    let _turn = httplab_skip::serial::shared("tls");
    let Some(exe) = httplab_serving("--tls-cert") else {
        return;
    };
    let text = format!(
        "name = \"tls-tiny\"\ntls = true\n{FAST}\n[corpus]\nfiles = [{{ path = \"a.txt\", size = 87 }}, {{ path = \"b.bin\", size = 20000 }}]\n\
         [[servers]]\nkind = \"httplab\"\nmodel = \"event\"\nworkers = 1\n\
         [[workloads]]\nname = \"full\"\nkind = \"users\"\ntarget = \"/a.txt\"\nusers = 2\nnum_calls = 1\ntls_resume = false\n\
         [[workloads]]\nname = \"resumed\"\nkind = \"load\"\ntarget = \"/b.bin\"\nrate = 50\nnum_conns = 10\nmeasure = \"count\"\n\
         [[workloads]]\nname = \"keep-alive\"\nkind = \"users\"\ntarget = \"/b.bin\"\nusers = 2\n"
    );
    let s = parse(&text);
    assert!(s.tls);
    assert_eq!(s.workloads[0].tls_resume, Some(false));
    let plan = runner::describe_plan(&s, &runner::plan(&s, false, None));
    assert!(plan.contains("a full handshake per connection"), "{plan}");
    let opts = Options {
        httplab_exe: Some(exe),
        ..Options::default()
    };
    let res = runner::run_study(&s, &opts).unwrap();
    assert_eq!(res.runs.len(), 6);
    let facts = &res.environment.facts.study;
    assert!(facts
        .tls
        .as_ref()
        .is_some_and(|t| t.contains("self-signed")));
    let seen = &facts.tls_of["httplab event"];
    assert!(seen.starts_with("TLSv1_"), "{seen}");
    assert!(
        facts
            .tls_seen
            .as_ref()
            .is_some_and(|t| t.contains("TLSv1_")),
        "{facts:?}"
    );
    for r in &res.runs {
        assert_eq!(r.status, "ok", "{}: {}", r.workload, r.reason);
        let run = r.run.as_ref().unwrap();
        assert_eq!(run.errors.total, 0, "{}: {:?}", r.workload, run.errors);
        assert_eq!(run.accuracy.mismatches, 0, "{}", r.workload);
        assert!(run.totals.replies > 0, "{}", r.workload);
        let t = run.tls.as_ref().expect("RunResult.tls over TLS");
        assert!(t.verified, "the study's certificate is verified");
        assert_eq!(t.failures, 0, "{}: {:?}", r.workload, t.first_error);
        match r.workload.as_str() {
            "full" => {
                assert!(!t.resumption);
                assert_eq!(t.resumed, 0);
                // A connection per request: a full handshake per reply (the
                // window's share; connections straddling its edges differ by
                // at most one per user).
                assert!(
                    t.full + 2 >= run.totals.replies,
                    "{t:?} vs {}",
                    run.totals.replies
                );
            }
            "resumed" => {
                assert!(t.resumption);
                assert!(t.resumed > 0, "sessions resume: {t:?}");
            }
            _ => {
                assert!(t.resumption);
                assert!(run.totals.replies > t.handshakes, "keep-alive: {t:?}");
            }
        }
        assert!(run.config.command_line.iter().any(|a| a == "--cacert"));
    }
}

/// Starts one peer over TLS through the study's own server code.
struct Peer {
    _dir: tempfile::TempDir,
    running: servers::Running,
    cert: std::path::PathBuf,
    root: std::path::PathBuf,
}

fn start_tls_peer(server_toml: &str) -> Option<Peer> {
    let text = format!(
        "name = \"peer\"\ntls = true\n[corpus]\nfiles = [{{ path = \"a.txt\", size = 87 }}, {{ path = \"b.bin\", size = 70000 }}]\n\
         [[servers]]\n{server_toml}\n[[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/a.txt\"\n"
    );
    let study = parse(&text);
    let inst = spec::expand_servers(&study).remove(0);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let idx = corpus::generate(&study.corpus, &root).unwrap();
    let cert = tls::generate(&dir.path().join("tls")).unwrap();
    let ctx = servers::Context {
        root: root.clone(),
        work: dir.path().join("work"),
        httplab_exe: None,
        probe_path: idx.probe_path(),
        tls: Some(cert.clone()),
        http2: false,
        http3: false,
    };
    let port = servers::free_port().unwrap();
    let plan = match servers::plan(&inst, &ctx, port) {
        Ok(p) => p,
        Err(u) => {
            let why = u.reason();
            assert!(
                !ci(),
                "{}: {why} (CI=true: .ci/run should have installed it)",
                inst.name
            );
            httplab_skip::skipped(&format!("{}: {why}", inst.name));
            return None;
        }
    };
    assert!(plan.tls_ca.is_some());
    let cores = servers::allowed_cores();
    let running = servers::start(&plan, &ctx.work, &cores[..1], Vec::new())
        .unwrap_or_else(|e| panic!("{} did not start over TLS: {e:#}", inst.name));
    assert!(
        running
            .tls_seen
            .as_deref()
            .is_some_and(|s| s.starts_with("TLSv1_")),
        "{}: the readiness probe saw no TLS: {:?}",
        inst.name,
        running.tls_seen
    );
    Some(Peer {
        _dir: dir,
        running,
        cert: cert.cert,
        root,
    })
}

fn load(args: &[String]) -> m::RunResult {
    let spec = httplab_load::parse_args(args).unwrap_or_else(|e| panic!("{args:?}: {e:#}"));
    httplab_load::run(&spec, false).unwrap_or_else(|e| panic!("{args:?}: {e:#}"))
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// `https://` verifying the study's certificate, and httperf's `--ssl`
/// (not verified): every reply complete and intact, `RunResult.tls` filled.
fn check_load_over_tls(name: &str, server_toml: &str) {
    let Some(mut peer) = start_tls_peer(server_toml) else {
        return;
    };
    let addr = peer.running.addr;
    let root = peer.root.to_string_lossy().into_owned();
    let cert = peer.cert.to_string_lossy().into_owned();
    let url = format!("https://{addr}/b.bin");
    let https = load(&s(&[
        &url,
        "--cacert",
        &cert,
        "--num-conns",
        "10",
        "--num-calls",
        "3",
        "--verify-root",
        &root,
        "--timeout",
        "10",
        "--no-progress",
    ]));
    let port = addr.port().to_string();
    let ssl = load(&s(&[
        "--ssl",
        "--server",
        "127.0.0.1",
        "--port",
        &port,
        "--uri",
        "/a.txt",
        "--num-conns",
        "10",
        "--verify-root",
        &root,
        "--timeout",
        "10",
        "--no-progress",
    ]));
    peer.running.stop();
    for (what, run, replies, verified) in
        [("https://", &https, 30, true), ("--ssl", &ssl, 10, false)]
    {
        assert_eq!(run.errors.total, 0, "{name} {what}: {:?}", run.errors);
        assert_eq!(run.totals.replies, replies, "{name} {what}: every reply");
        assert_eq!(run.accuracy.mismatches, 0, "{name} {what}: bodies intact");
        let t = run
            .tls
            .as_ref()
            .unwrap_or_else(|| panic!("{name} {what}: no RunResult.tls"));
        assert_eq!(t.verified, verified, "{name} {what}");
        assert_eq!(
            t.handshakes, 10,
            "{name} {what}: one handshake per connection: {t:?}"
        );
        assert_eq!(t.full + t.resumed, t.handshakes, "{name} {what}");
        // Resumption is on by default and every peer's configuration keeps
        // sessions (tickets, and a session cache where the server has one).
        assert!(
            t.resumption && t.resumed > 0,
            "{name} {what}: no session resumed: {t:?}"
        );
        assert_eq!(t.failures, 0, "{name} {what}: {:?}", t.first_error);
        assert!(
            !t.versions.is_empty() && !t.cipher_suites.is_empty(),
            "{name} {what}: {t:?}"
        );
        eprintln!(
            "{name} {what}: {} full, {} resumed, {:?} {:?}",
            t.full, t.resumed, t.versions, t.cipher_suites
        );
    }
}

#[test]
fn load_over_tls_against_nginx() {
    let _turn = httplab_skip::serial::shared("tls");
    check_load_over_tls("nginx", "kind = \"nginx\"");
}

#[test]
fn load_over_tls_against_h2o() {
    let _turn = httplab_skip::serial::shared("tls");
    check_load_over_tls("h2o", "kind = \"h2o\"");
}

#[test]
fn load_over_tls_against_caddy() {
    let _turn = httplab_skip::serial::shared("tls");
    check_load_over_tls("caddy", "kind = \"caddy\"");
}

#[test]
fn load_over_tls_against_apache() {
    let _turn = httplab_skip::serial::shared("tls");
    check_load_over_tls("apache event", "kind = \"apache\"\nmpm = \"event\"");
}

#[test]
fn load_over_tls_against_lighttpd() {
    let _turn = httplab_skip::serial::shared("tls");
    check_load_over_tls("lighttpd", "kind = \"lighttpd\"");
}

#[test]
fn peer_without_tls_module_is_unavailable_with_reason() {
    let _turn = httplab_skip::serial::shared("tls");
    let u = servers::Unavailable::NoTls {
        module: "lighttpd's mod_openssl".into(),
        package: "lighttpd-mod-openssl".into(),
    };
    assert_eq!(
        u.reason(),
        "cannot serve HTTPS here: lighttpd's mod_openssl is missing (Debian package: lighttpd-mod-openssl)"
    );
}

#[test]
fn command_servers_get_the_certificate() {
    let _turn = httplab_skip::serial::shared("tls");
    let text = "name = \"c\"\ntls = true\n[[servers]]\nname = \"x\"\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"serve {scheme} {cert} {key} {port}\"]\n\
                [[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/x\"\n";
    let study = parse(text);
    let inst = spec::expand_servers(&study).remove(0);
    let ctx = servers::Context {
        root: "/r".into(),
        work: "/w".into(),
        httplab_exe: None,
        probe_path: "/".into(),
        tls: Some(tls::CertFiles {
            cert: "/w/cert.pem".into(),
            key: "/w/key.pem".into(),
        }),
        http2: false,
        http3: false,
    };
    let p = servers::plan(&inst, &ctx, 8443).unwrap();
    assert_eq!(p.argv[2], "serve https /w/cert.pem /w/key.pem 8443");
    assert_eq!(p.tls_ca.as_deref(), Some(Path::new("/w/cert.pem")));
}

/// `--client I/N` in a study: each shard records its shard and per-run ids
/// shared by both, runs its part of every schedule, and the two shards'
/// run files merge into the whole schedule.
#[test]
fn sharded_study_records_and_splits_the_schedule() {
    let _turn = httplab_skip::serial::shared("tls");
    let text = format!(
        "name = \"sharded\"\n{FAST}\n[corpus]\nfiles = [{{ path = \"a.txt\", size = 87 }}]\n{}\
         [[workloads]]\nname = \"open\"\nkind = \"load\"\ntarget = \"/a.txt\"\nrate = 100\nnum_conns = 10\nmeasure = \"count\"\nwarmup_s = 0\n\
         [[workloads]]\nname = \"closed\"\nkind = \"users\"\ntarget = \"/a.txt\"\nusers = 4\n",
        common::helper_server_toml("helper", None)
    );
    let base = parse(&text);
    let run_id = shard::derive_run_id(&base, 2);
    let mut results = Vec::new();
    for index in 0..2 {
        let sh = shard::Shard {
            index,
            count: 2,
            run_id: run_id.clone(),
        };
        let mut st = base.clone();
        shard::prepare(&mut st, &sh).unwrap();
        let opts = Options {
            shard: Some(sh.clone()),
            ..Options::default()
        };
        let res = runner::run_study(&st, &opts).unwrap();
        let facts = &res.environment.facts.study;
        assert_eq!(
            facts.shard.map(|s| s.to_string()),
            Some(format!("{index}/2"))
        );
        assert_eq!(facts.run_id.as_ref(), Some(&run_id));
        // Fixed protocol: 2 workloads × 2 rounds on both shards.
        let rows: Vec<_> = res
            .runs
            .iter()
            .map(|r| (&r.workload, r.repetition, &r.status, &r.reason))
            .collect();
        assert_eq!(res.runs.len(), 4, "{rows:?}");
        let out = tempfile::tempdir().unwrap();
        let n = httplab_study::write_run_files(&res, &sh, out.path()).unwrap();
        assert_eq!(n, 4);
        results.push((res, out));
    }
    for r0 in &results[0].0.runs {
        let r1 = results[1]
            .0
            .runs
            .iter()
            .find(|r| r.workload == r0.workload && r.repetition == r0.repetition)
            .unwrap();
        let (a, b) = (r0.run.as_ref().unwrap(), r1.run.as_ref().unwrap());
        assert_eq!(r0.status, "ok", "{}", r0.reason);
        assert_eq!(r1.status, "ok", "{}", r1.reason);
        let shard_of = |r: &m::RunResult| r.config.facts.client_shard.map(|s| s.to_string());
        assert_eq!(shard_of(a).as_deref(), Some("0/2"));
        assert_eq!(shard_of(b).as_deref(), Some("1/2"));
        let id = a.config.facts.run_id.clone().unwrap_or_default();
        assert_eq!(
            Some(&id),
            b.config.facts.run_id.as_ref(),
            "one run id per run"
        );
        assert!(id.starts_with(&format!("{run_id}:")), "{id}");
        if r0.workload == "open" {
            // 10 connections at 100/s, split exactly: 5 + 5.
            assert_eq!(a.totals.connections + b.totals.connections, 10);
            assert_eq!(a.totals.connections, 5);
            assert_eq!(a.totals.replies + b.totals.replies, 10);
        } else {
            // 4 users, u mod 2: 2 each.
            assert!(a.totals.replies > 0 && b.totals.replies > 0);
        }
    }
    // The shards' files of one run merge into the whole.
    let name0 = shard::run_file_name(
        &results[0]
            .0
            .runs
            .iter()
            .find(|r| r.workload == "open")
            .unwrap()
            .clone(),
        &shard::Shard {
            index: 0,
            count: 2,
            run_id: run_id.clone(),
        },
    );
    let name1 = name0.replace(".shard-0.json", ".shard-1.json");
    let inputs: Vec<(String, m::Document)> = [(&results[0].1, &name0), (&results[1].1, &name1)]
        .iter()
        .map(|(dir, name)| {
            let text = std::fs::read_to_string(dir.path().join("runs").join(name)).unwrap();
            let run: m::RunResult = serde_json::from_str(&text).unwrap();
            (name.to_string(), m::Document::Run(Box::new(run)))
        })
        .collect();
    let merged = httplab_merge::merge_documents(inputs, &httplab_merge::Options::default(), None)
        .unwrap_or_else(|e| panic!("{e}"));
    let m::Document::Run(run) = merged.result else {
        panic!("a run")
    };
    assert_eq!(run.totals.connections, 10);
    assert_eq!(run.totals.replies, 10);
}
