//! End to end: tiny studies run through the real runner against servers
//! started as separate processes, and their reports.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use httplab_skip::serial::{self, Turn};

use httplab_model as m;
use httplab_study::runner::{self, Event, Options};
use httplab_study::{report, spec};

/// Measuring tests here hold the machine alone, so no other test's load
/// (of this module or another of the binary) shares the cores while they
/// measure: interference that lands on one server's window is what fooled
/// an earlier A/A test.
fn serial() -> Turn {
    serial::alone()
}

/// Short windows and two repetitions: these tests check behaviour, not speed.
const FAST: &str = "[protocol]\nwarmup_s = 0.1\nwindow_s = 0.3\nmin_repetitions = 2\nmax_repetitions = 2\nseed = 7\n";

fn study(servers: &str, workloads: &str) -> spec::StudyFile {
    study_with(FAST, servers, workloads)
}

fn study_with(protocol: &str, servers: &str, workloads: &str) -> spec::StudyFile {
    let text = format!(
        "name = \"tiny\"\ntitle = \"Tiny\"\n{protocol}\n[corpus]\nfiles = [{{ path = \"a.txt\", size = 87 }}, {{ path = \"b.bin\", size = 20000 }}]\n\
         pages = [{{ name = \"p\", objects = 3, object_size = 500, page_size = 600 }}]\n{servers}\n{workloads}\n"
    );
    spec::parse(&text, "tiny.toml").unwrap_or_else(|e| panic!("{e:#}"))
}

/// Two workloads: a page and its objects at 100 connections/s, 4 requests
/// each, counted (40 replies); 2 users for a window.
const TWO_RUNS: &str = "[[workloads]]\nname = \"short-load\"\nkind = \"load\"\ntarget = \"page:p\"\nrate = 100\nnum_conns = 10\nnum_calls = 4\nmeasure = \"count\"\ntimeout_s = 5\nmax_duration_s = 30\n\
    [[workloads]]\nname = \"short-users\"\nkind = \"users\"\ntarget = \"/b.bin\"\nusers = 2\nnum_calls = 5\ntimeout_s = 5\nmax_duration_s = 30\n";

fn ok_runs(res: &m::StudyResult) -> Vec<&m::StudyRun> {
    res.runs.iter().filter(|r| r.status == "ok").collect()
}

#[test]
fn tiny_study_end_to_end_report_has_both_servers() {
    let _serial = serial();
    let servers = format!(
        "{}{}",
        common::helper_server_toml("alpha", None),
        common::helper_server_toml("beta", None)
    );
    let s = study(&servers, TWO_RUNS);
    let opts = Options::default();
    // The plan `--dry-run` prints is the one that runs: every run it
    // counts, on the servers and workloads it names.
    let plan = runner::plan_of(&s, &opts);
    let shown = runner::describe_plan(&s, &plan);
    let res = runner::run_study(&s, &opts).unwrap();
    let (lo, hi) = plan.runs_range();
    assert_eq!(
        (lo, hi),
        (res.runs.len() as u64, res.runs.len() as u64),
        "{shown}"
    );
    for r in &res.runs {
        let wi = s
            .workloads
            .iter()
            .position(|w| w.name == r.workload)
            .expect("a planned workload");
        assert!(
            plan.servers_of(wi).any(|x| x.name == r.server),
            "{} not planned for {}",
            r.server,
            r.workload
        );
        assert!(shown.contains(&format!("  {} (", r.workload)), "{shown}");
    }
    // 2 servers × 2 workloads × 2 rounds.
    assert_eq!(
        res.runs.len(),
        8,
        "{:#?}",
        res.runs
            .iter()
            .map(|r| (&r.server, &r.status, &r.reason))
            .collect::<Vec<_>>()
    );
    for r in &res.runs {
        assert_eq!(r.status, "ok", "{} {}: {}", r.server, r.workload, r.reason);
        let run = r.run.as_ref().unwrap();
        assert_eq!(run.errors.total, 0);
        assert!(run.totals.replies > 0);
        assert_eq!(run.accuracy.mismatches, 0, "body verification failed");
        assert_eq!(run.accuracy.verified, run.totals.replies);
        let cost = run.server.as_ref().expect("server cost attached");
        assert!(cost.peak_rss_bytes > 0 && !cost.samples.is_empty());
        assert!(!cost.cpu_source.is_empty(), "CPU from cgroup or schedstat");
        assert_eq!(
            run.config.facts.study.driver,
            Some(m::LoadDriver::HttplabLoad)
        );
        assert!(!run.config.extra.contains_key("driver"));
    }
    // Every round holds both servers once, at positions 0 and 1.
    for w in ["short-load", "short-users"] {
        for round in 0..2 {
            let mut pos: Vec<u32> = res
                .runs
                .iter()
                .filter(|r| r.workload == w && r.repetition == round)
                .map(|r| r.position)
                .collect();
            pos.sort_unstable();
            assert_eq!(pos, [0, 1], "{w} round {round}");
        }
    }
    // Counted workload: 10 connections × 4 calls after the warm-up.
    let load = res
        .runs
        .iter()
        .find(|r| r.workload == "short-load")
        .unwrap()
        .run
        .as_ref()
        .unwrap();
    assert_eq!(load.totals.replies, 40);
    assert_eq!(load.totals.connections, 10);
    // Statistics: a cell per server and workload with n = 2, a verdict each.
    assert_eq!(res.cells.len(), 4);
    for c in &res.cells {
        assert_eq!(c.n, 2, "{c:?}");
        let e = &c.metrics[&c.metric];
        assert_eq!(e.n, 2);
        assert!(e.ci_low.is_some() && e.ci_high.is_some());
        assert_eq!(c.values[&c.metric].len(), 2);
    }
    // The workload's metric for each workload, and server CPU per request for
    // the fixed-rate one (the server's own accounting).
    assert_eq!(res.verdicts.len(), 3, "{:#?}", res.verdicts);
    let cpu: Vec<&m::StudyVerdict> = res
        .verdicts
        .iter()
        .filter(|v| v.metric == "server_cpu_us_per_req")
        .collect();
    assert_eq!(cpu.len(), 1);
    assert_eq!(
        (cpu[0].workload.as_str(), cpu[0].measured_by),
        ("short-load", Some(httplab_model::MeasuredBy::Server))
    );
    for v in &res.verdicts {
        assert!(v.outcome.is_some() && v.delta == Some(0.05), "{v:?}");
    }
    let p = res.protocol.as_ref().unwrap();
    assert_eq!((p.seed, p.min_repetitions, p.max_repetitions), (7, 2, 2));
    let out = tempfile::tempdir().unwrap();
    report::write_all(&res, Some(&s), out.path(), false).unwrap();
    let html = std::fs::read_to_string(out.path().join("index.html")).unwrap();
    for needle in [
        "alpha",
        "beta",
        "short-load",
        "short-users",
        "Verdicts",
        "95 % CI",
        "Environment",
        "helper 1.0",
        "<svg",
        "--seed 7",
    ] {
        assert!(html.contains(needle), "index.html lacks {needle}");
    }
    let json = std::fs::read_to_string(out.path().join("results.json")).unwrap();
    assert!(json.contains(&format!("\"{}\"", m::STUDY_SCHEMA)));
    match m::Document::from_json(&json).unwrap() {
        m::Document::Study(back) => {
            assert_eq!(back.runs.len(), 8);
            assert_eq!(back.verdicts.len(), 3);
        }
        _ => panic!("results.json is not a study"),
    }
    let csv = std::fs::read_to_string(out.path().join("runs.csv")).unwrap();
    assert_eq!(csv.lines().count(), 9);
    let summary_csv = std::fs::read_to_string(out.path().join("summary.csv")).unwrap();
    assert!(summary_csv.starts_with(
        "workload,step,server,metric,primary,n,mean,median,stddev,ci95_low,ci95_high"
    ));
    assert!(summary_csv.contains("beta"));
    let verdicts_csv = std::fs::read_to_string(out.path().join("verdicts.csv")).unwrap();
    assert_eq!(verdicts_csv.lines().count(), 4);
    for row in report::rows(&res) {
        for mt in [
            spec::Metric::SessionMs,
            spec::Metric::ServerRssMb,
            spec::Metric::ServerCpuUsPerReq,
            spec::Metric::Accuracy,
        ] {
            assert!(row.metrics.contains_key(&mt), "{} lacks {mt:?}", row.server);
        }
        assert_eq!(row.metrics[&spec::Metric::Accuracy], 100.0);
    }
    let summary = report::summary(&res, Some(&s));
    assert_eq!(summary.len(), 3);
    let head = report::headline(&res, Some(&s));
    assert!(head.starts_with("3 comparisons: "), "{head}");
}

#[test]
fn same_seed_same_round_orders() {
    let _serial = serial();
    let servers = format!(
        "{}{}{}",
        common::helper_server_toml("a", None),
        common::helper_server_toml("b", None),
        common::helper_server_toml("c", None)
    );
    let w = "[[workloads]]\nname = \"u\"\nkind = \"users\"\ntarget = \"/a.txt\"\nusers = 1\nwindow_s = 0.1\nwarmup_s = 0\n";
    let s = study(&servers, w);
    let order = |res: &m::StudyResult| -> Vec<(u32, u32, String)> {
        res.runs
            .iter()
            .map(|r| (r.repetition, r.position, r.server.clone()))
            .collect()
    };
    let a = runner::run_study(&s, &Options::default()).unwrap();
    let b = runner::run_study(&s, &Options::default()).unwrap();
    assert_eq!(order(&a), order(&b));
    // The recorded orders are the seed's.
    let names: Vec<String> = vec!["a".into(), "b".into(), "c".into()];
    for round in 0..2u32 {
        let want = httplab_study::rounds::round_order(&names, 7, 0, 0, round);
        let got: Vec<String> = a
            .runs
            .iter()
            .filter(|r| r.repetition == round)
            .map(|r| r.server.clone())
            .collect();
        assert_eq!(got, want, "round {round}");
    }
}

/// The same server listed twice: no winner between the twins.
///
/// False-failure probability, by design: the twins are one program, measured
/// in rounds of random order with no other measuring test beside them
/// (`serial`), at alpha = 0.001 — a false winner needs p < 0.001 and a ratio
/// of at least 1 + δ (5 %), which the simulation tests of httplab-stats bound
/// at 0.1 % of A/A studies. The assertion is on the outcome only.
#[test]
fn a_a_study_names_no_winner() {
    let _serial = serial();
    let servers = format!(
        "{}{}",
        common::helper_server_toml("twin-a", None),
        common::helper_server_toml("twin-b", None)
    );
    let proto = "[protocol]\nwarmup_s = 0.1\nwindow_s = 0.4\nmin_repetitions = 4\nmax_repetitions = 6\nalpha = 0.001\nseed = 11\n";
    let w = "[[workloads]]\nname = \"keep-alive\"\nkind = \"users\"\ntarget = \"/a.txt\"\nusers = 2\nnum_calls = 20\nmetric = \"response_ms\"\n";
    let s = study_with(proto, &servers, w);
    let res = runner::run_study(&s, &Options::default()).unwrap();
    assert!(res.runs.iter().all(|r| r.status == "ok"));
    let v = &res.verdicts[0];
    assert!(v.winner.is_none(), "A/A named a winner: {}", v.note);
    assert_ne!(v.outcome, Some(m::VerdictOutcome::Winner), "{}", v.note);
    if v.outcome == Some(m::VerdictOutcome::Inconclusive) {
        assert!(
            v.note.contains("could see") || v.note.contains("held back"),
            "an inconclusive verdict says what it could have seen: {}",
            v.note
        );
    }
}

/// A deliberately slow server (every response held 5 ms) against the same
/// server without the delay: the fast one wins, significantly.
#[test]
fn a_b_study_names_the_faster_server() {
    let _serial = serial();
    let servers = format!(
        "{}{}",
        common::helper_server_toml("fast", None),
        common::slow_helper_server_toml("slow", 5)
    );
    let proto = "[protocol]\nwarmup_s = 0.1\nwindow_s = 0.4\nmin_repetitions = 3\nmax_repetitions = 5\nseed = 3\n";
    let w = "[[workloads]]\nname = \"latency\"\nkind = \"users\"\ntarget = \"/a.txt\"\nusers = 2\nnum_calls = 20\nmetric = \"response_ms\"\n";
    let s = study_with(proto, &servers, w);
    let res = runner::run_study(&s, &Options::default()).unwrap();
    let v = &res.verdicts[0];
    assert_eq!(v.winner.as_deref(), Some("fast"), "{}", v.note);
    assert!(v.significant);
    assert_eq!(v.runner_up.as_deref(), Some("slow"));
    let ratio = v.ratio.unwrap();
    let ci = v.ratio_ci.unwrap();
    assert!(
        ratio > 2.0 && ci[0] > 1.0 && ci[0] <= ratio && ratio <= ci[1],
        "{v:?}"
    );
    assert_eq!(v.better, httplab_model::Direction::Lower);
    let html = report::html(&res, Some(&s), false);
    assert!(html.contains("fast"), "verdict in the report");
}

#[test]
fn killing_the_server_between_runs_gives_a_failed_row() {
    let _serial = serial();
    let servers = common::helper_server_toml("victim", None);
    let s = study(&servers, TWO_RUNS);
    let killed = Arc::new(AtomicBool::new(false));
    let k = Arc::clone(&killed);
    let opts = Options {
        on_event: Some(Box::new(move |e: &Event| {
            if let Event::RunFinished { pid, workload, .. } = e {
                if workload == "short-load" && !k.swap(true, Ordering::SeqCst) {
                    // pid is the process group of the server this study started.
                    let _ = httplab_sys::process::signal_group(*pid, libc::SIGKILL);
                }
            }
        })),
        ..Options::default()
    };
    let res = runner::run_study(&s, &opts).unwrap();
    assert!(killed.load(Ordering::SeqCst));
    assert_eq!(res.runs[0].status, "ok");
    let failed = &res.runs[1];
    assert_eq!(failed.status, "failed");
    // SIGKILL is asynchronous: the runner sees the death either before the
    // next run ("exited earlier") or during it ("died during the run").
    assert!(
        (failed.reason.contains("exited") || failed.reason.contains("died"))
            && failed.reason.contains("signal 9"),
        "{}",
        failed.reason
    );
    // The dead server gets no further runs, only failed rows.
    assert!(res.runs[1..].iter().all(|r| r.status == "failed"));
    let html = report::html(&res, Some(&s), false);
    assert!(html.contains("signal 9"));
}

#[test]
fn server_dying_mid_run_gives_a_failed_row_not_a_hang() {
    let _serial = serial();
    // The helper exits after its 15th request, in the middle of the first run.
    let servers = common::helper_server_toml("dies", Some(15));
    let s = study(&servers, TWO_RUNS);
    let res = runner::run_study(&s, &Options::default()).unwrap();
    let first = &res.runs[0];
    assert_eq!(first.status, "failed", "{first:?}");
    assert!(
        first.reason.contains("died during the run") && first.reason.contains("exit status 3"),
        "{}",
        first.reason
    );
    let later: Vec<&m::StudyRun> = res
        .runs
        .iter()
        .filter(|r| r.workload == "short-users")
        .collect();
    assert!(!later.is_empty());
    assert!(
        later.iter().all(|r| r.status == "failed"),
        "{:?}",
        later.iter().map(|r| &r.reason).collect::<Vec<_>>()
    );
}

#[test]
fn interrupt_keeps_finished_runs_and_skips_the_rest() {
    let _serial = serial();
    let servers = format!(
        "{}{}",
        common::helper_server_toml("one", None),
        common::helper_server_toml("two", None)
    );
    let s = study(&servers, TWO_RUNS);
    let stop = Arc::new(AtomicBool::new(false));
    let st = Arc::clone(&stop);
    let events = Arc::new(Mutex::new(Vec::new()));
    let ev = Arc::clone(&events);
    let opts = Options {
        stop: Arc::clone(&stop),
        on_event: Some(Box::new(move |e: &Event| {
            ev.lock().unwrap().push(format!("{e:?}"));
            if matches!(e, Event::RunFinished { .. }) {
                st.store(true, Ordering::SeqCst);
            }
        })),
        ..Options::default()
    };
    let res = runner::run_study(&s, &opts).unwrap();
    assert_eq!(ok_runs(&res).len(), 1);
    assert!(
        res.runs.iter().skip(1).all(|r| r.status == "skipped"),
        "{:?}",
        res.runs.iter().map(|r| &r.status).collect::<Vec<_>>()
    );
    let out = tempfile::tempdir().unwrap();
    report::write_all(&res, Some(&s), out.path(), true).unwrap();
    let html = std::fs::read_to_string(out.path().join("index.html")).unwrap();
    assert!(html.contains("Interrupted"));
    assert!(!events.lock().unwrap().is_empty());
}

#[test]
fn missing_command_is_a_failed_row_with_the_reason() {
    let _serial = serial();
    let servers = "[[servers]]\nname = \"ghost\"\nkind = \"command\"\ncommand = [\"/nonexistent/ghost-httpd\"]\n";
    let s = study(servers, TWO_RUNS);
    let res = runner::run_study(&s, &Options::default()).unwrap();
    // One row per workload and fewest repetitions.
    assert_eq!(res.runs.len(), 4);
    assert!(res
        .runs
        .iter()
        .all(|r| r.status == "failed" && r.reason.contains("not found")));
    let html = report::html(&res, Some(&s), false);
    assert!(html.contains("ghost") && html.contains("not found"));
}

fn ci() -> bool {
    httplab_skip::under_ci()
}

#[test]
fn tiny_study_with_nginx_and_lighttpd() {
    let _serial = serial();
    let servers = "[[servers]]\nkind = \"nginx\"\n[[servers]]\nkind = \"lighttpd\"\n";
    let s = study(servers, TWO_RUNS);
    let res = runner::run_study(&s, &Options::default()).unwrap();
    let missing: Vec<&m::StudyRun> = res
        .runs
        .iter()
        .filter(|r| r.status == "not installed")
        .collect();
    if !missing.is_empty() {
        assert!(!ci(), "peers missing under CI: {}", missing[0].reason);
        httplab_skip::skipped(&missing[0].reason);
        return;
    }
    for r in &res.runs {
        assert_eq!(r.status, "ok", "{} {}: {}", r.server, r.workload, r.reason);
        assert_eq!(r.run.as_ref().unwrap().accuracy.mismatches, 0);
    }
    let html = report::html(&res, Some(&s), false);
    assert!(html.contains("nginx/1.") || html.contains("nginx"));
    assert!(html.contains("lighttpd"));
    assert!(res
        .environment
        .facts
        .study
        .versions
        .keys()
        .any(|k| k.contains("nginx")));
}

#[test]
fn capacity_search_and_vary_workloads_end_to_end() {
    let _serial = serial();
    let servers = common::helper_server_toml("swept", None);
    let workloads = "[[workloads]]\nname = \"rates\"\nkind = \"sweep\"\ntarget = \"/a.txt\"\nlow_rate = 200\nwindow_s = 0.2\n\
        [[workloads]]\nname = \"sizes\"\nkind = \"users\"\nusers = 2\ntarget = \"/a.txt\"\n\
        vary = { param = \"target\", values = [\"/a.txt\", \"/b.bin\"] }\n";
    let s = study(&servers, workloads);
    let res = runner::run_study(&s, &Options::default()).unwrap();
    let sweeps: Vec<&m::StudyRun> = res.runs.iter().filter(|r| r.workload == "rates").collect();
    assert_eq!(
        sweeps.len(),
        2,
        "one capacity search per repetition: {:?}",
        sweeps
            .iter()
            .map(|r| (r.repetition, &r.status, &r.reason))
            .collect::<Vec<_>>()
    );
    for sw in &sweeps {
        assert_eq!(sw.status, "ok", "{}", sw.reason);
        let t = &sw.sweep.as_ref().unwrap().targets[0];
        let max = t.saturation.max_sustainable_rate.expect("a capacity");
        assert!(max >= 200.0);
        // It searched upward from 200: more than one rate — unless the first
        // step was client-bound (twice: the repeat stands), which ends a
        // search honestly on a machine busy enough to slow the client; then
        // the capacity must be reported as a bound, never as the server's.
        assert_eq!(t.steps[0].demanded_rate, 200.0);
        if t.steps.len() == 1 {
            assert!(
                t.saturation.client_bound && t.steps[0].run.self_check.client_bound,
                "a one-step search must have stopped at a client-bound step"
            );
        }
    }
    let cap = res.cells.iter().find(|c| c.workload == "rates").unwrap();
    assert_eq!(cap.metric, "max_rate");
    assert_eq!(cap.n, 2);
    let sizes: Vec<&m::StudyRun> = res.runs.iter().filter(|r| r.workload == "sizes").collect();
    assert_eq!(sizes.len(), 4);
    let steps: Vec<&str> = sizes
        .iter()
        .map(|r| {
            let f = &r.run.as_ref().unwrap().config.facts.study;
            assert_eq!(f.param, Some(m::VaryParam::Target.into()));
            f.step.as_deref().unwrap()
        })
        .collect();
    assert_eq!(steps, ["/a.txt", "/a.txt", "/b.bin", "/b.bin"]);
    assert_eq!(
        res.verdicts
            .iter()
            .filter(|v| v.workload == "sizes")
            .count(),
        2
    );
    let html = report::html(&res, Some(&s), false);
    assert!(
        html.contains("<polyline") || html.contains("<path"),
        "a varied workload gets a line chart"
    );
}

/// httplab's own server, run as `httplab serve` in a separate process. The
/// binary exists when the workspace is built (`cargo test --workspace`);
/// with `-p httplab-study` alone it may not, and the test says so.
#[test]
fn tiny_study_with_httplab_models() {
    let _serial = serial();
    let Some(exe) = runner::find_httplab_exe() else {
        assert!(
            !ci(),
            "no httplab binary next to the test executable under CI"
        );
        httplab_skip::skipped(
            "no httplab binary next to the test executable (build the workspace)",
        );
        return;
    };
    let serves = std::process::Command::new(&exe)
        .args(["serve", "--help"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !serves {
        httplab_skip::skipped(&format!(
            "{} has no working `serve` (stale build?)",
            exe.display()
        ));
        return;
    }
    let servers = "[[servers]]\nkind = \"httplab\"\nmodel = \"event\"\nworkers = 1\n\
        [[servers]]\nkind = \"httplab\"\nmodel = \"threads\"\nworkers = 4\nmode = \"close\"\n\
        [[servers]]\nkind = \"httplab\"\nmodel = \"fork\"\nmode = \"keep-alive\"\n";
    let s = study(servers, TWO_RUNS);
    let opts = Options {
        httplab_exe: Some(exe),
        ..Options::default()
    };
    let res = runner::run_study(&s, &opts).unwrap();
    assert_eq!(res.runs.len(), 12);
    for r in &res.runs {
        assert_eq!(r.status, "ok", "{} {}: {}", r.server, r.workload, r.reason);
        let run = r.run.as_ref().unwrap();
        assert_eq!(run.accuracy.mismatches, 0, "{}", r.server);
        assert_eq!(run.errors.total, 0, "{}: {:?}", r.server, run.errors);
    }
    // mode = "close": the client reconnects for every request of a session.
    let close = res
        .runs
        .iter()
        .find(|r| r.server == "httplab threads (close)" && r.workload == "short-load")
        .unwrap();
    let run = close.run.as_ref().unwrap();
    assert_eq!(run.totals.replies, 40);
    assert_eq!(run.totals.connections, run.totals.replies);
    // The fork model's children are counted: its CPU is not zero.
    let fork = res
        .runs
        .iter()
        .find(|r| r.server == "httplab fork (keep-alive)" && r.status == "ok")
        .and_then(|r| r.run.as_ref())
        .and_then(|r| r.server.as_ref())
        .unwrap();
    assert!(fork.cpu_s > 0.0, "{fork:?}");
    let html = report::html(&res, Some(&s), false);
    assert!(html.contains("httplab event") && html.contains("httplab fork (keep-alive)"));
}

#[test]
fn interrupt_during_a_run_keeps_the_partial_result_as_skipped() {
    let _serial = serial();
    let servers = common::helper_server_toml("cut", None);
    let s = study(&servers, TWO_RUNS);
    let stop = Arc::new(AtomicBool::new(false));
    let st = Arc::clone(&stop);
    let opts = Options {
        stop: Arc::clone(&stop),
        on_event: Some(Box::new(move |e: &Event| {
            if matches!(e, Event::RunStarted { .. }) {
                st.store(true, Ordering::SeqCst);
            }
        })),
        ..Options::default()
    };
    let res = runner::run_study(&s, &opts).unwrap();
    let first = &res.runs[0];
    assert_eq!(first.status, "skipped");
    assert_eq!(first.reason, runner::INTERRUPTED_DURING);
    assert!(first.run.as_ref().is_some_and(|r| r.interrupted));
    assert!(res.runs.iter().all(|r| r.status == "skipped"));
}

/// `slices = 2`: every server is run twice per round, in the round's order
/// and then reversed (A B | B A), each run a half window, and the cell has
/// one value per round.
#[test]
fn sliced_rounds_run_abba_and_give_one_value_per_round() {
    let _serial = serial();
    let servers = format!(
        "{}{}",
        common::helper_server_toml("a", None),
        common::helper_server_toml("b", None)
    );
    let w = "[[workloads]]\nname = \"u\"\nkind = \"users\"\ntarget = \"/a.txt\"\nusers = 1\nwindow_s = 0.2\nwarmup_s = 0\nslices = 2\n";
    let s = study(&servers, w);
    let res = runner::run_study(&s, &Options::default()).unwrap();
    let names: Vec<String> = vec!["a".into(), "b".into()];
    for round in 0..2u32 {
        let order = httplab_study::rounds::round_order(&names, 7, 0, 0, round);
        let mut want = order.clone();
        want.extend(order.iter().rev().cloned());
        let rows: Vec<&m::StudyRun> = res.runs.iter().filter(|r| r.repetition == round).collect();
        let got: Vec<String> = rows.iter().map(|r| r.server.clone()).collect();
        assert_eq!(got, want, "round {round}");
        let pos: Vec<u32> = rows.iter().map(|r| r.position).collect();
        assert_eq!(pos, vec![0, 1, 2, 3], "round {round}");
        for r in rows {
            assert_eq!(r.status, "ok", "{}", r.reason);
            let win = r
                .run
                .as_ref()
                .and_then(|x| x.config.duration_s)
                .unwrap_or(0.0);
            assert!(
                (win - 0.1).abs() < 1e-9,
                "a slice is half the window: {win}"
            );
        }
    }
    for c in res.cells.iter().filter(|c| c.workload == "u") {
        assert_eq!(c.n, 2, "{}: one value per round", c.server);
    }
}

/// `max_duration_s` stops a run that would last longer and records why.
#[test]
fn max_duration_stops_a_long_run_with_the_reason() {
    let _serial = serial();
    let servers = common::helper_server_toml("one", None);
    let w = "[[workloads]]\nname = \"long\"\nkind = \"users\"\ntarget = \"/a.txt\"\nusers = 1\nwarmup_s = 0\nwindow_s = 30\nmax_duration_s = 0.5\n";
    let s = study(&servers, w);
    let res = runner::run_study(&s, &Options::default()).unwrap();
    let first = res.runs.first().expect("a row");
    assert_eq!(first.status, "failed");
    assert!(
        first.reason.contains("max_duration_s = 0.5 s"),
        "{}",
        first.reason
    );
    // The second planned repetition is not measured, and says why.
    assert_eq!(res.runs.len(), 2, "{:?}", res.runs);
    let second = &res.runs[1];
    assert_eq!((second.repetition, second.status.as_str()), (1, "failed"));
    assert!(
        second
            .reason
            .starts_with("not measured: round 1 of this step failed")
            && second.reason.contains("max_duration_s = 0.5 s"),
        "{}",
        second.reason
    );
}

/// A capacity search that fails in its first repetition (the server exits
/// at its 16th request, during the search's first rate) still leaves a row
/// for its second: every planned repetition is recorded, failed ones with
/// the status and the reason.
#[test]
fn a_failed_capacity_search_leaves_a_row_for_every_planned_repetition() {
    let _serial = serial();
    let servers = common::helper_server_toml("brief", Some(15));
    let w = "[[workloads]]\nname = \"rates\"\nkind = \"sweep\"\ntarget = \"/a.txt\"\nlow_rate = 200\nwindow_s = 0.2\n";
    let s = study(&servers, w);
    let res = runner::run_study(&s, &Options::default()).unwrap();
    let rows: Vec<(u32, &str, &str)> = res
        .runs
        .iter()
        .map(|r| (r.repetition, r.status.as_str(), r.reason.as_str()))
        .collect();
    assert_eq!(rows.len(), 2, "one row per planned repetition: {rows:?}");
    assert_eq!((rows[0].0, rows[0].1), (0, "failed"), "{rows:?}");
    assert!(
        rows[0].2.contains("exit status 3"),
        "the server's exit is the reason: {rows:?}"
    );
    assert_eq!((rows[1].0, rows[1].1), (1, "failed"), "{rows:?}");
    assert!(
        rows[1]
            .2
            .starts_with("not measured: round 1 of this step failed")
            && rows[1].2.contains("exit status 3"),
        "{rows:?}"
    );
}
