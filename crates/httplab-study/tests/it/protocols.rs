//! A workload's `protocol` end to end: a tiny study with an `h2` workload
//! (next to an `h1` one, so each peer serves both from one configuration)
//! against every installed peer that speaks HTTP/2 — nginx, Apache event,
//! lighttpd, h2o, Caddy — in cleartext (h2c by prior knowledge) and over TLS
//! (h2 by ALPN). Every run of theirs completes with HTTP/2 replies (the run's
//! `http2` block); Apache prefork, which cannot speak HTTP/2, is listed with
//! its reason. An `h3` workload runs against Caddy over TLS, the peers
//! without QUIC listed with their reason. A missing peer fails under CI=true
//! and is a visible skip otherwise.

use crate::common;

use common::ci;
use httplab_model as m;
use httplab_study::runner::{self, Options};
use httplab_study::spec;

/// The turn of every test here: they run side by side, beside no other
/// module's servers; the packet-loss test takes the machine alone, as its
/// loss on lo would reach every other test's loopback traffic.
fn shared_lo() -> httplab_skip::serial::Turn {
    httplab_skip::serial::shared("protocols")
}

const FAST: &str = "[protocol]\nwarmup_s = 0.1\nwindow_s = 0.3\nmin_repetitions = 2\nmax_repetitions = 2\nseed = 11\n";

/// Peers that speak HTTP/2 here, by the study's server entry.
const H2_PEERS: &[(&str, &str)] = &[
    ("nginx", "kind = \"nginx\"\nname = \"nginx\""),
    (
        "apache event",
        "kind = \"apache\"\nname = \"apache event\"\nmpm = \"event\"\nworkers = 1\nthreads_per_child = 8",
    ),
    ("lighttpd", "kind = \"lighttpd\"\nname = \"lighttpd\""),
    ("h2o", "kind = \"h2o\"\nname = \"h2o\""),
    ("caddy", "kind = \"caddy\"\nname = \"caddy\"\nworkers = 1"),
];

/// The peers whose program is installed (the others skipped, or a failure under CI).
fn installed(entries: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut out = Vec::new();
    for &(name, toml) in entries {
        let text = format!(
            "name = \"probe\"\n[[servers]]\n{toml}\n[[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/x\"\n"
        );
        let study = spec::parse(&text, "probe.toml").unwrap();
        let kind = study.servers[0].kind;
        let found = httplab_study::servers::peer_binary(kind)
            .is_some_and(|b| b.paths.iter().any(|p| std::path::Path::new(p).is_file()));
        if found {
            out.push((name, toml));
        } else {
            assert!(
                !ci(),
                "{name} is not installed (CI=true: .ci/run installs it)"
            );
            httplab_skip::skipped(&format!("{name}: not installed"));
        }
    }
    out
}

fn study_text(tls: bool, peers: &[(&str, &str)], httplab: bool) -> String {
    let mut t = format!(
        "name = \"h2-tiny\"\ntls = {tls}\n{FAST}\n[corpus]\nfiles = [{{ path = \"a.txt\", size = 87 }}, {{ path = \"b.bin\", size = 20000 }}]\n"
    );
    for (_, toml) in peers {
        t.push_str(&format!("[[servers]]\n{toml}\n"));
    }
    if httplab {
        t.push_str("[[servers]]\nkind = \"httplab\"\nworkers = 1\n");
    }
    t.push_str(
        "[[servers]]\nkind = \"apache\"\nname = \"apache prefork\"\nmpm = \"prefork\"\nworkers = 2\n\
         [[workloads]]\nname = \"h2\"\nkind = \"users\"\ntarget = \"/b.bin\"\nusers = 2\nprotocol = \"h2\"\n\
         [[workloads]]\nname = \"h1\"\nkind = \"users\"\ntarget = \"/a.txt\"\nusers = 2\n",
    );
    t
}

fn check(res: &m::StudyResult, peers: &[(&str, &str)], tls: bool) {
    for (name, _) in peers {
        let mine: Vec<&m::StudyRun> = res.runs.iter().filter(|r| r.server == *name).collect();
        assert!(!mine.is_empty(), "{name}: no runs");
        for r in mine {
            assert_eq!(
                r.status, "ok",
                "{name} {}: {} ({})",
                r.workload, r.status, r.reason
            );
            let run = r.run.as_ref().expect("a run result");
            assert!(run.totals.replies > 0, "{name} {}", r.workload);
            assert_eq!(
                run.errors.total, 0,
                "{name} {}: {:?}",
                r.workload, run.errors
            );
            match r.workload.as_str() {
                "h2" => {
                    let h = run
                        .http2
                        .as_ref()
                        .unwrap_or_else(|| panic!("{name}: an h2 run has an http2 block"));
                    assert_eq!(h.cleartext, !tls, "{name}");
                    assert!(h.streams_completed > 0, "{name}: {h:?}");
                    assert_eq!(h.streams_failed, 0, "{name}: {h:?}");
                    assert_eq!(h.max_concurrent_streams, 1, "{name}");
                    assert_eq!(
                        run.config.facts.study.client_ceiling,
                        Some(m::ClientCeiling::Unknown(m::HttpProtocol::H2)),
                        "{name}: the unknown client ceiling is said"
                    );
                }
                _ => assert!(run.http2.is_none(), "{name}: an h1 run is HTTP/1.1"),
            }
        }
    }
    // Apache prefork: measured over HTTP/1.1, listed as not speaking h2.
    let prefork: Vec<&m::StudyRun> = res
        .runs
        .iter()
        .filter(|r| r.server == "apache prefork")
        .collect();
    let apache_here = httplab_study::servers::peer_binary(spec::ServerKind::Apache)
        .is_some_and(|b| b.paths.iter().any(|p| std::path::Path::new(p).is_file()));
    for r in prefork {
        match (r.workload.as_str(), apache_here) {
            ("h2", true) => {
                assert_eq!(r.status, "unsupported", "{}", r.reason);
                assert!(
                    r.reason
                        .starts_with("does not speak h2: Apache's prefork MPM"),
                    "{}",
                    r.reason
                );
            }
            ("h1", true) => assert_eq!(r.status, "ok", "{}", r.reason),
            _ => {}
        }
    }
    // The h2 workload's comparisons leave the prefork server out (as a
    // server that is not installed: no values, never compared).
    for v in res.verdicts.iter().filter(|v| v.workload == "h2") {
        let prefork = Some("apache prefork");
        assert!(
            v.winner.as_deref() != prefork
                && v.leader.as_deref() != prefork
                && v.runner_up.as_deref() != prefork,
            "prefork in an h2 comparison: {v:?}"
        );
        assert!(v.n.get("apache prefork").map_or(true, |n| *n == 0), "{v:?}");
    }
}

fn run(tls: bool) {
    let _lo = shared_lo();
    let peers = installed(H2_PEERS);
    if peers.is_empty() {
        return;
    }
    // httplab serve when its binary is built: its event model speaks h2
    // too (`--http2 on`), so it runs every workload.
    let exe = runner::find_httplab_exe();
    let text = study_text(tls, &peers, exe.is_some());
    let s = spec::parse(&text, "h2.toml").unwrap_or_else(|e| panic!("{e:#}"));
    let plan = runner::describe_plan(&s, &runner::plan(&s, false, None));
    assert!(plan.contains("over HTTP/2"), "{plan}");
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        work_dir: Some(dir.path().to_path_buf()),
        budget_s: Some(0.0),
        httplab_exe: exe.clone(),
        ..Options::default()
    };
    let res = runner::run_study(&s, &opts).unwrap();
    check(&res, &peers, tls);
    if exe.is_some() {
        for r in res.runs.iter().filter(|r| r.server == "httplab event") {
            assert_eq!(r.status, "ok", "{}: {}", r.workload, r.reason);
            let run = r.run.as_ref().expect("a run result");
            assert_eq!(run.errors.total, 0, "{}: {:?}", r.workload, run.errors);
            if r.workload == "h2" {
                let h2 = run.http2.as_ref().expect("an h2 run has an http2 block");
                assert!(h2.streams_completed > 0 && h2.streams_failed == 0, "{h2:?}");
            }
        }
    }
    let html = httplab_study::report::html(&res, Some(&s), false);
    let how = if tls {
        "Over HTTP/2 (h2 by ALPN over TLS)"
    } else {
        "Over HTTP/2 (h2c by prior knowledge)"
    };
    assert!(html.contains(how), "the h2 workload says how it was spoken");
    assert!(
        html.contains("Left out: ")
            && html.contains("apache prefork (does not speak h2: Apache's prefork MPM"),
        "the report lists who does not speak h2"
    );
}

#[test]
fn h2_workload_against_peers_in_cleartext() {
    run(false);
}

#[test]
fn h2_workload_against_peers_over_tls() {
    run(true);
}

/// Peers that do not speak HTTP/3 here, and the words of their reason.
const NOT_H3: &[(&str, &str, &str)] = &[
    ("nginx", "kind = \"nginx\"\nname = \"nginx\"", "no QUIC"),
    ("h2o", "kind = \"h2o\"\nname = \"h2o\"", "no QUIC"),
    (
        "lighttpd",
        "kind = \"lighttpd\"\nname = \"lighttpd\"",
        "no HTTP/3",
    ),
];

/// The HTTP/3 speakers of the h3 study: Caddy and ngtcp2's example server.
const H3_PEERS: &[(&str, &str)] = &[
    ("caddy", "kind = \"caddy\"\nname = \"caddy\"\nworkers = 1"),
    ("ngtcp2", "kind = \"ngtcp2\"\nname = \"ngtcp2\""),
];

fn h3_study_text(h3: &[(&str, &str)], others: &[(&str, &str)], httplab: bool) -> String {
    let mut t = format!(
        "name = \"h3-tiny\"\ntls = true\n{FAST}\n[corpus]\nfiles = [{{ path = \"a.txt\", size = 87 }}, {{ path = \"b.bin\", size = 20000 }}]\n"
    );
    for (_, toml) in h3.iter().chain(others) {
        t.push_str(&format!("[[servers]]\n{toml}\n"));
    }
    if httplab {
        t.push_str("[[servers]]\nkind = \"httplab\"\nworkers = 1\n");
    }
    t.push_str(
        "[[workloads]]\nname = \"h3\"\nkind = \"users\"\ntarget = \"/b.bin\"\nusers = 2\nprotocol = \"h3\"\n\
         [[workloads]]\nname = \"h1\"\nkind = \"users\"\ntarget = \"/a.txt\"\nusers = 2\n",
    );
    t
}

/// An h3 workload over TLS: Caddy's, ngtcp2's and httplab serve's runs
/// complete over HTTP/3 (the run's `http3` block, replies, the unknown
/// client ceiling said; ngtcp2, which has no TCP listener, found ready by
/// an HTTP/3 GET); nginx, h2o and lighttpd are left out as not speaking h3,
/// and ngtcp2 is left out of the h1 workload as speaking only HTTP/3.
#[test]
fn h3_workload_against_caddy_and_ngtcp2() {
    let _lo = shared_lo();
    let h3 = installed(H3_PEERS);
    if h3.is_empty() {
        return;
    }
    let others: Vec<(&str, &str)> = NOT_H3.iter().map(|(n, t, _)| (*n, *t)).collect();
    let others = installed(&others);
    let exe = runner::find_httplab_exe();
    let s = spec::parse(&h3_study_text(&h3, &others, exe.is_some()), "h3.toml")
        .unwrap_or_else(|e| panic!("{e:#}"));
    let plan = runner::describe_plan(&s, &runner::plan(&s, false, None));
    assert!(plan.contains("over HTTP/3"), "{plan}");
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        work_dir: Some(dir.path().to_path_buf()),
        budget_s: Some(0.0),
        httplab_exe: exe.clone(),
        ..Options::default()
    };
    let res = runner::run_study(&s, &opts).unwrap();
    let mut speakers: Vec<&str> = h3.iter().map(|(n, _)| *n).collect();
    if exe.is_some() {
        speakers.push("httplab event");
    }
    for name in speakers {
        let mine: Vec<&m::StudyRun> = res
            .runs
            .iter()
            .filter(|r| r.server == name && r.workload == "h3")
            .collect();
        assert!(!mine.is_empty(), "{name}: no runs");
        for r in mine {
            assert_eq!(r.status, "ok", "{name}: {} ({})", r.status, r.reason);
            let run = r.run.as_ref().expect("a run result");
            assert!(run.totals.replies > 0, "{name}: no replies");
            assert_eq!(run.errors.total, 0, "{name}: {:?}", run.errors);
            assert!(run.http2.is_none());
            let h = run.http3.as_ref().expect("an h3 run has an http3 block");
            assert!(h.streams_completed > 0, "{h:?}");
            assert_eq!(h.streams_failed, 0, "{h:?}");
            assert_eq!(h.max_concurrent_streams, 1);
            assert_eq!(
                run.config.facts.study.client_ceiling,
                Some(m::ClientCeiling::Unknown(m::HttpProtocol::H3))
            );
        }
    }
    if h3.iter().any(|(n, _)| *n == "ngtcp2") {
        for r in res
            .runs
            .iter()
            .filter(|r| r.server == "ngtcp2" && r.workload == "h1")
        {
            assert_eq!(r.status, "unsupported", "{}", r.reason);
            assert!(r.reason.contains("speaks only HTTP/3"), "{}", r.reason);
        }
    }
    let expect: Vec<(&str, &str)> = others
        .iter()
        .filter_map(|(n, _)| NOT_H3.iter().find(|x| x.0 == *n).map(|x| (x.0, x.2)))
        .collect();
    for (name, says) in expect {
        let rows: Vec<&m::StudyRun> = res
            .runs
            .iter()
            .filter(|r| r.server == name && r.workload == "h3")
            .collect();
        assert!(!rows.is_empty(), "{name}: listed");
        for r in rows {
            assert!(
                r.status == "unsupported"
                    && r.reason.starts_with("does not speak h3: ")
                    && r.reason.contains(says),
                "{name}: {}",
                r.reason
            );
        }
        assert!(
            plan.contains(&format!("{name} does not speak h3: ")),
            "{name}: {plan}"
        );
    }
    let html = httplab_study::report::html(&res, Some(&s), false);
    assert!(
        html.contains("Over HTTP/3 (h3 over QUIC)"),
        "the report says how"
    );
}

/// A page under 1 % packet loss (`loss_pct`) over h1 and h3 on Caddy: where
/// root and nftables or netem allow, the runs complete and record the loss
/// and how; elsewhere every row is skipped with the reason. Either way lo is
/// left without a netem qdisc and without the study's nftables table.
#[test]
fn packet_loss_is_injected_or_skipped_and_always_removed() {
    let _lo = httplab_skip::serial::alone();
    if installed(&[("caddy", "kind = \"caddy\"")]).is_empty() {
        return;
    }
    // Windows long enough that a lost SYN (1 s to its retransmission) or a
    // QUIC probe timeout cannot leave a run without replies.
    let protocol = "[protocol]\nwarmup_s = 0.3\nwindow_s = 2\nmin_repetitions = 2\nmax_repetitions = 2\nseed = 11\n";
    let text = format!(
        "name = \"loss-tiny\"\ntls = true\n{protocol}\n[corpus]\npages = [{{ name = \"page\", objects = 20, object_size = \"4KB\" }}]\n\
         [[servers]]\nkind = \"caddy\"\nname = \"caddy\"\nworkers = 1\n\
         [[workloads]]\nname = \"h1-loss\"\nkind = \"users\"\ntarget = \"page:page\"\nusers = 4\nnum_calls = 21\nloss_pct = 1\n\
         [[workloads]]\nname = \"h3-loss\"\nkind = \"users\"\ntarget = \"page:page\"\nusers = 4\nnum_calls = 21\nloss_pct = 1\nprotocol = \"h3\"\n"
    );
    let s = spec::parse(&text, "loss.toml").unwrap_or_else(|e| panic!("{e:#}"));
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        work_dir: Some(dir.path().to_path_buf()),
        budget_s: Some(0.0),
        ..Options::default()
    };
    let res = runner::run_study(&s, &opts).unwrap();
    assert!(!res.runs.is_empty());
    let skipped: Vec<&m::StudyRun> = res.runs.iter().filter(|r| r.status != "ok").collect();
    if skipped.is_empty() {
        for r in &res.runs {
            let run = r.run.as_ref().expect("a run result");
            assert!(run.totals.replies > 0, "{}", r.workload);
            let loss = &run.config.facts.study.packet_loss;
            assert_eq!(loss.as_ref().map(|l| l.pct), Some(1.0), "{}", r.workload);
            assert_eq!(run.http3.is_some(), r.workload == "h3-loss");
            let how = loss.as_ref().and_then(|l| l.method.as_ref());
            assert!(how.is_some(), "{how:?}");
        }
    } else {
        let why: Vec<String> = skipped
            .iter()
            .map(|r| format!("{} {}: {} {}", r.workload, r.repetition, r.status, r.reason))
            .collect();
        assert_eq!(skipped.len(), res.runs.len(), "all or none: {why:#?}");
        for r in &skipped {
            assert_eq!(r.status, "skipped", "{}", r.reason);
            assert!(
                r.reason.starts_with("packet loss not injected"),
                "{}",
                r.reason
            );
        }
        httplab_skip::skipped(&format!("netem: {}", skipped[0].reason));
    }
    if let Ok(out) = std::process::Command::new("tc")
        .args(["qdisc", "show", "dev", "lo"])
        .output()
    {
        let shown = String::from_utf8_lossy(&out.stdout);
        assert!(!shown.contains("netem"), "lo left with netem: {shown}");
    }
    if let Ok(out) = std::process::Command::new("nft")
        .args(["list", "tables"])
        .output()
    {
        let shown = String::from_utf8_lossy(&out.stdout);
        let mine = format!("httplab_loss_{}", std::process::id());
        assert!(!shown.contains(&mine), "nftables table left: {shown}");
    }
}
