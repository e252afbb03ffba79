//! End to end: tiny studies run through the real runner against servers
//! started as separate processes, and their reports.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use httplab_model as m;
use httplab_study::runner::{self, Event, Options};
use httplab_study::{report, spec};

/// Not a test: the helper server entry point (see common/mod.rs).
#[test]
fn helper_http_server() {
    common::maybe_serve();
}

fn study(servers: &str, workloads: &str) -> spec::StudyFile {
    let text = format!(
        "name = \"tiny\"\ntitle = \"Tiny\"\n[corpus]\nfiles = [{{ path = \"a.txt\", size = 87 }}, {{ path = \"b.bin\", size = 20000 }}]\n\
         pages = [{{ name = \"p\", objects = 3, object_size = 500, page_size = 600 }}]\n{servers}\n{workloads}\n"
    );
    spec::parse(&text, "tiny.toml").unwrap_or_else(|e| panic!("{e:#}"))
}

const TWO_RUNS: &str = "[[workloads]]\nname = \"short-load\"\nkind = \"load\"\ntarget = \"page:p\"\nnum_conns = 10\nnum_calls = 4\ntimeout_s = 5\nmax_duration_s = 30\n\
    [[workloads]]\nname = \"short-users\"\nkind = \"users\"\ntarget = \"/b.bin\"\nusers = 2\nrequests = 5\nnum_calls = 5\ntimeout_s = 5\nmax_duration_s = 30\n";

fn ok_runs(res: &m::StudyResult) -> Vec<&m::StudyRun> {
    res.runs.iter().filter(|r| r.status == "ok").collect()
}

#[test]
fn tiny_study_end_to_end_report_has_both_servers() {
    let servers = format!(
        "{}{}",
        common::helper_server_toml("alpha", None),
        common::helper_server_toml("beta", None)
    );
    let s = study(&servers, TWO_RUNS);
    let res = runner::run_study(&s, &Options::default()).unwrap();
    assert_eq!(
        res.runs.len(),
        4,
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
        assert!(cost
            .samples
            .iter()
            .all(|x| x.processes >= 1 && x.threads >= 1 && x.fds >= 3));
    }
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
    let out = tempfile::tempdir().unwrap();
    report::write_all(&res, Some(&s), out.path(), false).unwrap();
    let html = std::fs::read_to_string(out.path().join("index.html")).unwrap();
    for needle in [
        "alpha",
        "beta",
        "short-load",
        "short-users",
        "Summary",
        "Environment",
        "helper 1.0",
        "<svg",
    ] {
        assert!(html.contains(needle), "index.html lacks {needle}");
    }
    let json = std::fs::read_to_string(out.path().join("results.json")).unwrap();
    match m::Document::from_json(&json).unwrap() {
        m::Document::Study(back) => assert_eq!(back.runs.len(), 4),
        _ => panic!("results.json is not a study"),
    }
    let csv = std::fs::read_to_string(out.path().join("runs.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5);
    assert!(std::fs::read_to_string(out.path().join("summary.csv"))
        .unwrap()
        .contains("beta"));
    for row in report::rows(&res) {
        for mt in [
            spec::Metric::SessionMs,
            spec::Metric::ServerRssMb,
            spec::Metric::Accuracy,
        ] {
            assert!(row.metrics.contains_key(&mt), "{} lacks {mt:?}", row.server);
        }
        assert_eq!(row.metrics[&spec::Metric::Accuracy], 100.0);
    }
    let summary = report::summary(&res, Some(&s));
    assert_eq!(summary.len(), 2);
    assert!(
        summary[0].contains("alpha") && summary[0].contains("beta"),
        "{summary:?}"
    );
    let head = report::headline(&res, Some(&s));
    assert!(head.starts_with("Of 2 workload(s) with a winner"), "{head}");
}

#[test]
fn killing_the_server_between_runs_gives_a_failed_row() {
    let servers = common::helper_server_toml("victim", None);
    let s = study(&servers, TWO_RUNS);
    let killed = Arc::new(AtomicBool::new(false));
    let k = Arc::clone(&killed);
    let opts = Options {
        on_event: Some(Box::new(move |e: &Event| {
            if let Event::RunFinished { pid, workload, .. } = e {
                if workload == "short-load" && !k.swap(true, Ordering::SeqCst) {
                    // SAFETY: pid is the process group of the server this study started.
                    unsafe { libc::kill(-*pid, libc::SIGKILL) };
                }
            }
        })),
        ..Options::default()
    };
    let res = runner::run_study(&s, &opts).unwrap();
    assert!(killed.load(Ordering::SeqCst));
    assert_eq!(res.runs.len(), 2);
    assert_eq!(res.runs[0].status, "ok");
    let failed = &res.runs[1];
    assert_eq!(failed.status, "failed");
    // SIGKILL is asynchronous: the runner sees the death either before the
    // second run ("exited earlier") or during it ("died during the run").
    assert!(
        (failed.reason.contains("exited") || failed.reason.contains("died"))
            && failed.reason.contains("signal 9"),
        "{}",
        failed.reason
    );
    let html = report::html(&res, Some(&s), false);
    assert!(html.contains("signal 9"));
}

#[test]
fn server_dying_mid_run_gives_a_failed_row_not_a_hang() {
    // The helper exits after its 15th request, in the middle of the first run.
    let servers = common::helper_server_toml("dies", Some(15));
    let s = study(&servers, TWO_RUNS);
    let res = runner::run_study(&s, &Options::default()).unwrap();
    assert_eq!(res.runs.len(), 2);
    let first = &res.runs[0];
    assert_eq!(first.status, "failed", "{first:?}");
    assert!(
        first.reason.contains("died during the run") && first.reason.contains("exit status 3"),
        "{}",
        first.reason
    );
    assert_eq!(res.runs[1].status, "failed");
    assert!(
        res.runs[1].reason.contains("not running"),
        "{}",
        res.runs[1].reason
    );
}

#[test]
fn interrupt_keeps_finished_runs_and_skips_the_rest() {
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
    assert_eq!(res.runs.len(), 4);
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
    let servers = "[[servers]]\nname = \"ghost\"\nkind = \"command\"\ncommand = [\"/nonexistent/ghost-httpd\"]\n";
    let s = study(servers, TWO_RUNS);
    let res = runner::run_study(&s, &Options::default()).unwrap();
    assert_eq!(res.runs.len(), 2);
    assert!(res
        .runs
        .iter()
        .all(|r| r.status == "failed" && r.reason.contains("not found")));
    let html = report::html(&res, Some(&s), false);
    assert!(html.contains("ghost") && html.contains("not found"));
}

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

#[test]
fn tiny_study_with_nginx_and_lighttpd() {
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
        eprintln!("SKIP: {}", missing[0].reason);
        return;
    }
    for r in &res.runs {
        assert_eq!(r.status, "ok", "{} {}: {}", r.server, r.workload, r.reason);
        assert_eq!(r.run.as_ref().unwrap().accuracy.mismatches, 0);
    }
    let html = report::html(&res, Some(&s), false);
    assert!(html.contains("nginx/1.") || html.contains("nginx"));
    assert!(html.contains("lighttpd"));
    assert!(res.environment.extra.keys().any(|k| k.contains("nginx")));
}

#[test]
fn sweep_and_vary_workloads_end_to_end() {
    let servers = common::helper_server_toml("swept", None);
    let workloads = "[[workloads]]\nname = \"rates\"\nkind = \"sweep\"\ntarget = \"/a.txt\"\nlow_rate = 50\nhigh_rate = 100\nrate_step = 50\nstep_s = 0.2\n\
        [[workloads]]\nname = \"sizes\"\nkind = \"users\"\nusers = 2\nrequests = 3\ntarget = \"/a.txt\"\nrepetitions = 2\n\
        vary = { param = \"target\", values = [\"/a.txt\", \"/b.bin\"] }\n";
    let s = study(&servers, workloads);
    assert_eq!(runner::count_runs(&s), 2 + 2 * 2);
    let res = runner::run_study(&s, &Options::default()).unwrap();
    let sweep = res.runs.iter().find(|r| r.workload == "rates").unwrap();
    assert_eq!(sweep.status, "ok", "{}", sweep.reason);
    let t = &sweep.sweep.as_ref().unwrap().targets[0];
    assert_eq!(t.steps.len(), 2);
    assert_eq!(t.steps[0].run.totals.replies, 10);
    assert_eq!(t.steps[1].run.totals.replies, 20);
    let sizes: Vec<&m::StudyRun> = res.runs.iter().filter(|r| r.workload == "sizes").collect();
    assert_eq!(sizes.len(), 4);
    let steps: Vec<&str> = sizes
        .iter()
        .map(|r| r.run.as_ref().unwrap().config.extra[runner::EXTRA_STEP].as_str())
        .collect();
    assert_eq!(steps, ["/a.txt", "/b.bin", "/a.txt", "/b.bin"]);
    let rows = report::rows(&res);
    assert_eq!(rows.len(), 2 + 4);
    let html = report::html(&res, Some(&s), false);
    assert!(html.contains("highest rate sustained"));
    assert!(
        html.contains("<polyline"),
        "a varied workload gets a line chart"
    );
}

/// httplab's own server, run as `httplab serve` in a separate process. The
/// binary exists when the workspace is built (`cargo test --workspace`);
/// with `-p httplab-study` alone it may not, and the test says so.
#[test]
fn tiny_study_with_httplab_models() {
    let Some(exe) = runner::find_httplab_exe() else {
        eprintln!("SKIP: no httplab binary next to the test executable (build the workspace)");
        return;
    };
    let serves = std::process::Command::new(&exe)
        .args(["serve", "--help"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !serves {
        eprintln!(
            "SKIP: {} has no working `serve` (stale build?)",
            exe.display()
        );
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
    assert_eq!(res.runs.len(), 6);
    for r in &res.runs {
        assert_eq!(r.status, "ok", "{} {}: {}", r.server, r.workload, r.reason);
        let run = r.run.as_ref().unwrap();
        assert_eq!(run.accuracy.mismatches, 0, "{}", r.server);
        assert_eq!(run.errors.total, 0, "{}: {:?}", r.server, run.errors);
    }
    // mode = "close": the client reconnects for every request.
    let close = res
        .runs
        .iter()
        .find(|r| r.server == "httplab threads (close)" && r.workload == "short-load")
        .unwrap();
    let run = close.run.as_ref().unwrap();
    assert_eq!(run.totals.connections, run.totals.replies);
    let html = report::html(&res, Some(&s), false);
    assert!(html.contains("httplab event") && html.contains("httplab fork (keep-alive)"));
}

#[test]
fn httplab_load_driver_end_to_end() {
    let servers = common::helper_server_toml("driven", None);
    let workloads = "[[workloads]]\nname = \"via-load\"\nkind = \"load\"\ndriver = \"httplab-load\"\ntarget = \"/b.bin\"\nrate = 200\nnum_conns = 10\nnum_calls = 3\ntimeout_s = 5\n\
        [[workloads]]\nname = \"via-users\"\nkind = \"users\"\ndriver = \"httplab-load\"\ntarget = \"/a.txt\"\nusers = 2\nrequests = 5\ntimeout_s = 5\n";
    let s = study(&servers, workloads);
    let res = runner::run_study(&s, &Options::default()).unwrap();
    assert_eq!(res.runs.len(), 2);
    for r in &res.runs {
        assert_eq!(r.status, "ok", "{}: {}", r.workload, r.reason);
        let run = r.run.as_ref().unwrap();
        assert_eq!(
            run.config.extra.get("driver").map(String::as_str),
            Some("httplab-load")
        );
        assert!(run.server.is_some());
        assert_eq!(run.accuracy.mismatches, 0);
    }
    assert_eq!(res.runs[0].run.as_ref().unwrap().totals.replies, 30);
    assert_eq!(res.runs[1].run.as_ref().unwrap().totals.replies, 10);
    let rows = report::rows(&res);
    assert_eq!(
        rows[0].metrics.get(&spec::Metric::Accuracy).copied(),
        Some(100.0)
    );
}

#[test]
fn httplab_load_driver_rejects_sets_and_pages() {
    let text = "name = \"x\"\n[corpus]\nsets = [{ name = \"s\", count = 2, size = 10 }]\n[[servers]]\nkind = \"nginx\"\n\
        [[workloads]]\nname = \"w\"\nkind = \"load\"\ndriver = \"httplab-load\"\ntarget = \"set:s\"\n";
    let e = format!("{:#}", spec::parse(text, "x.toml").unwrap_err());
    assert!(e.contains("single-path"), "{e}");
}

#[test]
fn interrupt_during_a_run_keeps_the_partial_result_as_skipped() {
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
    assert_eq!(res.runs.len(), 2);
    let first = &res.runs[0];
    assert_eq!(first.status, "skipped");
    assert_eq!(first.reason, runner::INTERRUPTED_DURING);
    assert!(first.run.as_ref().is_some_and(|r| r.interrupted));
    assert_eq!(res.runs[1].status, "skipped");
    let summary = report::summary(&res, Some(&s));
    assert!(summary[0].contains("interrupted"), "{summary:?}");
}
