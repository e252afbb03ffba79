//! End to end: the idle-connections workload (`kind = "idle"`) against
//! `httplab serve` run as a separate process: the event model keeps serving
//! while connections are held; a threads model whose whole pool is held
//! stops, and the report says so. Bounded by timeouts (the servers' header
//! and idle timeouts are raised above the test's length so that nothing
//! frees the pool while it runs); no sleeps, no timing assertions.

use crate::common;

use common::httplab_serving;
use httplab_model as m;
use httplab_study::runner::{self, Options};
use httplab_study::{idle, report, spec};

fn study(servers: &str, workload: &str) -> spec::StudyFile {
    let text = format!(
        "name = \"idle-test\"\n[protocol]\nwarmup_s = 0\nwindow_s = 1.0\nmin_repetitions = 2\nmax_repetitions = 2\nseed = 3\n\
         [corpus]\nfiles = [{{ path = \"a.txt\", size = 87 }}]\n{servers}\n{workload}\n"
    );
    spec::parse(&text, "idle-test.toml").unwrap_or_else(|e| panic!("{e:#}"))
}

/// Timeouts of the server above anything this test waits for.
const LONG_TIMEOUTS: &str =
    "args = [\"--header-timeout\", \"120s\", \"--idle-timeout\", \"120s\"]\n";

fn census(run: &m::RunResult) -> &m::IdleFacts {
    run.config
        .facts
        .study
        .idle
        .as_ref()
        .unwrap_or_else(|| panic!("no idle facts: {:?}", run.config))
}

#[test]
fn event_model_keeps_serving_while_idle_connections_are_held() {
    let _turn = httplab_skip::serial::shared("idle");
    let Some(exe) = httplab_serving("--root") else {
        return;
    };
    let servers =
        format!("[[servers]]\nkind = \"httplab\"\nmodel = \"event\"\nworkers = 1\n{LONG_TIMEOUTS}");
    for send in ["silent", "partial"] {
        let w = format!(
            "[[workloads]]\nname = \"idle\"\nkind = \"idle\"\ntarget = \"/a.txt\"\nusers = 2\nnum_calls = 20\n\
             idle_conns = 50\nidle_send = \"{send}\"\ntimeout_s = 5\nmax_duration_s = 30\n"
        );
        let s = study(&servers, &w);
        let opts = Options {
            httplab_exe: Some(exe.clone()),
            ..Options::default()
        };
        let res = runner::run_study(&s, &opts).unwrap();
        assert_eq!(res.runs.len(), 2);
        for r in &res.runs {
            assert_eq!(r.status, "ok", "{send}: {}", r.reason);
            let run = r.run.as_ref().unwrap();
            assert!(run.totals.replies > 0, "{send}");
            assert_eq!(run.errors.total, 0, "{send}: {:?}", run.errors);
            let c = census(run);
            assert_eq!(c.conns, 50);
            assert_eq!(c.connected, 50, "{send}");
            // Nothing on the server's side ends them within its timeouts.
            assert_eq!(c.open_at_end, 50, "{send}: {c:?}");
            // A note may say the kernel, not the server, holds silent
            // connections (deferred accept); never that the client was hurt.
            let note = c.note.clone().unwrap_or_default();
            assert!(
                !note.contains("error") && !note.contains("stopped"),
                "{send}: {note}"
            );
            assert_eq!(c.send.as_str(), send);
        }
        let rows = idle::rows(&res, "idle");
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].connected, 50.0);
        let html = report::html(&res, Some(&s), false);
        assert!(html.contains("Under idle connections"));
    }
}

#[test]
fn threads_model_with_its_pool_held_stops_serving_and_says_so() {
    let _turn = httplab_skip::serial::shared("idle");
    let Some(exe) = httplab_serving("--root") else {
        return;
    };
    // Two worker threads (and a queue of two): ten held connections occupy
    // both workers and the queue; the client's connection waits behind them
    // in the listen backlog until its 0.3 s reply timeout.
    let servers = format!(
        "[[servers]]\nname = \"threads2\"\nkind = \"httplab\"\nmodel = \"threads\"\nworkers = 2\n{LONG_TIMEOUTS}"
    );
    let w = "[[workloads]]\nname = \"idle\"\nkind = \"idle\"\ntarget = \"/a.txt\"\nusers = 1\nnum_calls = 10\n\
             idle_conns = 10\ntimeout_s = 0.3\nidle_connect_s = 5\nmax_duration_s = 30\n";
    let s = study(&servers, w);
    let opts = Options {
        httplab_exe: Some(exe),
        ..Options::default()
    };
    let res = runner::run_study(&s, &opts).unwrap();
    assert_eq!(res.runs.len(), 2);
    for r in &res.runs {
        // Kept as a run, not dropped as a failure: it is the finding.
        assert_eq!(r.status, "ok", "{}", r.reason);
        let run = r.run.as_ref().unwrap();
        assert_eq!(run.totals.replies, 0, "{:?}", run.totals);
        assert!(
            run.errors.total > 0 && run.errors.client_timo > 0,
            "{:?}",
            run.errors
        );
        assert_eq!(census(run).connected, 10);
        let note = census(run).note.as_ref().expect("a note");
        assert!(note.contains("stopped serving new clients"), "{note}");
    }
    // The report and the terminal summary carry the note.
    let html = report::html(&res, Some(&s), false);
    assert!(html.contains("stopped serving new clients"));
    let lines = report::summary(&res, Some(&s));
    assert!(
        lines
            .iter()
            .any(|l| l.contains("threads2") && l.contains("stopped serving")),
        "{lines:?}"
    );
}

#[test]
fn idle_fields_are_validated() {
    let _turn = httplab_skip::serial::shared("idle");
    let servers = "[[servers]]\nkind = \"httplab\"\n";
    let bad = |w: &str| {
        let text = format!(
            "name = \"x\"\n[corpus]\nfiles = [{{ path = \"a.txt\", size = 1 }}]\n{servers}\n{w}"
        );
        spec::parse(&text, "x.toml").err().map(|e| format!("{e:#}"))
    };
    let e =
        bad("[[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/a.txt\"\nidle_conns = 5\n");
    assert!(e.is_some_and(|e| e.contains("kind = \"idle\"")));
    let e =
        bad("[[workloads]]\nname = \"w\"\nkind = \"idle\"\ntarget = \"/a.txt\"\nidle_conns = 0\n");
    assert!(e.is_some_and(|e| e.contains("idle_conns")));
    let e = bad(
        "[[workloads]]\nname = \"w\"\nkind = \"idle\"\ntarget = \"/a.txt\"\nidle_send = \"loud\"\n",
    );
    assert!(e.is_some());
    let ok = bad(
        "[[workloads]]\nname = \"w\"\nkind = \"idle\"\ntarget = \"/a.txt\"\nusers = 2\n\
                  vary = { param = \"idle_conns\", values = [100, 1000] }\n",
    );
    assert!(ok.is_none(), "{ok:?}");
}
