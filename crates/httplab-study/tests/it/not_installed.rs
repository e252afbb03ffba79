//! A peer that is not installed appears as a "not installed" row with its
//! Debian package, in results.json and in the report; never dropped.
//! It runs in a child process of the test binary, which alone has
//! HTTPLAB_PEER_DIRS set (to an empty directory): the variable is read by
//! every study of the process, so the other tests must not see it.

use crate::common;
use httplab_skip::serial;

use httplab_study::runner::{self, Options};
use httplab_study::{report, servers, spec};

#[test]
fn missing_peers_are_reported_not_dropped() {
    if !common::in_child() {
        let _turn = serial::alone();
        let empty = tempfile::tempdir().unwrap();
        common::run_in_child(
            "not_installed::missing_peers_are_reported_not_dropped",
            &[(servers::ENV_PEER_DIRS, empty.path().as_os_str())],
        );
        return;
    }
    let text = format!(
        "name = \"ni\"\n[protocol]\nwarmup_s = 0\nwindow_s = 0.2\nmin_repetitions = 2\nmax_repetitions = 2\n[corpus]\nfiles = [{{ path = \"a.txt\", size = 87 }}]\n{}\
         [[servers]]\nkind = \"nginx\"\n[[servers]]\nkind = \"apache\"\nmpm = \"prefork\"\n[[servers]]\nkind = \"lighttpd\"\n[[servers]]\nkind = \"h2o\"\n\
         [[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/a.txt\"\nrepetitions = 2\n",
        common::helper_server_toml("present", None)
    );
    let s = spec::parse(&text, "ni.toml").unwrap();
    let plan = runner::describe_plan(&s, &runner::plan(&s, false, None));
    assert!(
        plan.contains("not installed (Debian package: h2o)"),
        "{plan}"
    );
    let res = runner::run_study(&s, &Options::default()).unwrap();
    assert_eq!(res.runs.len(), 10);
    assert!(res
        .runs
        .iter()
        .filter(|r| r.server == "present")
        .all(|r| r.status == "ok"));
    for (server, pkg) in [
        ("nginx", "nginx"),
        ("apache prefork", "apache2"),
        ("lighttpd", "lighttpd"),
        ("h2o", "h2o"),
    ] {
        let rows: Vec<_> = res.runs.iter().filter(|r| r.server == server).collect();
        assert_eq!(rows.len(), 2, "{server}");
        for r in rows {
            assert_eq!(r.status, "not installed");
            assert_eq!(r.reason, format!("not installed (Debian package: {pkg})"));
        }
    }
    // The verdict that could compare nothing says why, not only that one
    // server has results.
    let v = res
        .verdicts
        .iter()
        .find(|v| v.workload == "w")
        .expect("a verdict for the workload");
    assert!(
        v.note.contains("only one server has results")
            && v.note.contains("left out: ")
            && v.note.contains("h2o: not installed (Debian package: h2o)"),
        "{}",
        v.note
    );
    let out = tempfile::tempdir().unwrap();
    report::write_all(&res, Some(&s), out.path(), false).unwrap();
    let html = std::fs::read_to_string(out.path().join("index.html")).unwrap();
    for pkg in ["nginx", "apache2", "lighttpd", "h2o"] {
        assert!(
            html.contains(&format!("not installed (Debian package: {pkg})")),
            "{pkg}"
        );
    }
    let csv = std::fs::read_to_string(out.path().join("runs.csv")).unwrap();
    // 8 rows (4 peers × 2 repetitions), each with the status and the reason.
    assert_eq!(csv.matches("not installed").count(), 16, "{csv}");
}
