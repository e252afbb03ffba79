//! "My server against nginx": `httplab study --init` writes a study file
//! that parses and never overwrites one; `httplab study --mine CMD` refuses
//! a command line without `{port}`, a command that is not there and a
//! server that never listens (with its stderr), and runs a small server
//! written for this test (tests/support/tiny_server.py, Python's
//! http.server: not httplab) against nginx, the answer first in the
//! report. Nothing here says who wins: a slow machine may change that.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use httplab_model as m;

/// One study at a time in the test binary, beside no other test's servers
/// (they share the machine's cores).
fn serial() -> httplab_skip::serial::Turn {
    httplab_skip::serial::alone()
}

fn study(args: &[&str]) -> anyhow::Result<ExitCode> {
    let mut v: Vec<OsString> = vec!["httplab study".into()];
    v.extend(args.iter().map(OsString::from));
    httplab_study::cli_main(v)
}

fn tiny_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/tiny_server.py")
}

/// `python3 tiny_server.py {port} {root} EXTRA`, or None (skipped) without python3.
fn tiny_command(extra: &str) -> Option<String> {
    if httplab_study::servers::which("python3").is_none() {
        httplab_skip::skip("python3 is not installed (the test's own small server is Python)");
        return None;
    }
    Some(format!(
        "python3 '{}' {{port}} {{root}} {extra}",
        tiny_server().display()
    ))
}

#[test]
fn init_writes_a_study_that_parses_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mine.toml");
    let p = path.to_str().unwrap();
    assert!(study(&["--init", p]).is_ok());
    let text = std::fs::read_to_string(&path).unwrap();
    let s = httplab_study::load_study(p).unwrap();
    assert_eq!(s.compare.baseline.as_deref(), Some("nginx"));
    let mine = &s.servers[0];
    assert_eq!(mine.name.as_deref(), Some("mine"));
    assert_eq!(mine.kind, httplab_study::spec::ServerKind::Command);
    assert!(mine.command.iter().any(|a| a.contains("{port}")));
    // The placeholders are explained in the file itself.
    for p in ["{port}", "{root}", "{dir}", "{workers}"] {
        assert!(text.contains(&format!("#   {p}")), "{p} is not explained");
    }
    // A second --init refuses and leaves the file as it was.
    let e = study(&["--init", p]).unwrap_err().to_string();
    assert!(e.contains("already exists"), "{e}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn init_takes_the_command_the_peers_and_the_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.toml");
    let p = path.to_str().unwrap();
    let args = [
        "--init",
        p,
        "--mine",
        "./srv -p {port} -d {root} -t {workers}",
        "--against",
        "h2o,lighttpd",
        "--name",
        "srv",
    ];
    assert!(study(&args).is_ok());
    let s = httplab_study::load_study(p).unwrap();
    assert_eq!(s.compare.baseline.as_deref(), Some("h2o"));
    assert_eq!(
        s.servers[0].command,
        ["./srv", "-p", "{port}", "-d", "{root}", "-t", "{workers}"]
    );
    assert_eq!(s.questions.len(), 1, "srv against lighttpd");
}

#[test]
fn a_command_line_without_port_or_root_is_refused() {
    let e = study(&["--mine", "./srv --root {root}"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("{port}"), "{e}");
    let e = study(&["--mine", "./srv --port {port}"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("{root}"), "{e}");
    let e = study(&["--against", "nginx"]).unwrap_err().to_string();
    assert!(e.contains("--mine"), "{e}");
    let e = study(&["--mine", "./srv {port} {root}", "--against", "iis"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("iis"), "{e}");
}

#[test]
fn a_command_that_is_not_there_is_an_error_before_any_run() {
    let _serial = serial();
    let out = tempfile::tempdir().unwrap();
    let e = study(&[
        "--mine",
        "/nonexistent/my-httpd --port {port} --root {root}",
        "--out",
        out.path().to_str().unwrap(),
        "--no-progress",
    ])
    .unwrap_err();
    let e = format!("{e:#}");
    assert!(
        e.contains("/nonexistent/my-httpd") && e.contains("not found"),
        "{e}"
    );
    assert!(!out.path().join("results.json").exists());
}

#[test]
fn a_server_that_never_listens_is_an_error_with_its_stderr() {
    let _serial = serial();
    let Some(cmd) = tiny_command("--never-listen") else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let e = study(&[
        "--mine",
        &cmd,
        "--ready-timeout",
        "1.5",
        "--out",
        out.path().to_str().unwrap(),
        "--no-progress",
    ])
    .unwrap_err();
    let e = format!("{e:#}");
    assert!(e.contains("did not answer") && e.contains("1.5 s"), "{e}");
    assert!(e.contains("stuck before listening"), "its stderr: {e}");
    assert!(!out.path().join("results.json").exists());
}

#[test]
fn my_server_against_nginx_answers_first() {
    let _serial = serial();
    let Some(cmd) = tiny_command("") else {
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let o = out.path().to_str().unwrap();
    let args = [
        "--mine",
        &cmd,
        "--quick",
        "--budget",
        "0",
        "--warmup",
        "0.2",
        "--window",
        "0.5",
        "--seed",
        "7",
        "--out",
        o,
        "--no-progress",
    ];
    let code = match study(&args) {
        Ok(c) => c,
        Err(e) => {
            let e = format!("{e:#}");
            if e.contains("not installed") {
                httplab_skip::skip(&e);
                return;
            }
            panic!("{e}");
        }
    };
    assert_eq!(code, ExitCode::SUCCESS);
    // summary.md: the answer right under the title.
    let md = std::fs::read_to_string(out.path().join("summary.md")).unwrap();
    let lines: Vec<&str> = md.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines[0].starts_with("# httplab study"), "{md}");
    assert!(lines[1].contains("mine vs nginx"), "{md}");
    let verdict_words = ["decided", "equivalent", "inconclusive", "no decision"];
    assert!(
        verdict_words.iter().any(|w| lines[2].contains(w)),
        "no verdict word in {:?}",
        lines[2]
    );
    assert!(
        lines[2].contains("mine") && lines[2].contains("nginx"),
        "{md}"
    );
    // index.html: the answer before the protocol and the verdicts.
    let html = std::fs::read_to_string(out.path().join("index.html")).unwrap();
    let answer = html
        .find("mine vs nginx")
        .expect("the answer in index.html");
    assert!(answer < html.find("Protocol:").unwrap_or(usize::MAX));
    assert!(answer < html.find("id=\"summary\"").expect("verdicts section"));
    // results.json: the comparison of the two is one of the study's verdicts.
    let res: m::StudyResult =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("results.json")).unwrap())
            .unwrap();
    let pair = |v: &&m::StudyVerdict| {
        let names = [v.leader.as_deref(), v.runner_up.as_deref()];
        names.contains(&Some("mine")) && names.contains(&Some("nginx"))
    };
    let workloads: std::collections::BTreeSet<&str> = res
        .verdicts
        .iter()
        .filter(pair)
        .map(|v| v.workload.as_str())
        .collect();
    assert_eq!(
        workloads.len(),
        6,
        "a mine–nginx verdict on every workload: {workloads:?}"
    );
}

#[test]
fn missing_peers_are_listed_with_the_reason_and_none_left_is_an_error() {
    use httplab_study::execute::preflight::check_peers;
    use httplab_study::studies::mine::{study, Mine};
    let against = ["nginx,h2o".to_string()];
    let s = study(&Mine::new(Some("srv {port} {root}"), &against, None).unwrap()).unwrap();
    let nginx = (
        "nginx".to_string(),
        "not installed (Debian package: nginx)".to_string(),
    );
    let h2o = (
        "h2o".to_string(),
        "not installed (Debian package: h2o)".to_string(),
    );
    let lines = check_peers(&s, std::slice::from_ref(&nginx)).unwrap();
    assert_eq!(lines, ["nginx: not installed (Debian package: nginx)"]);
    let e = check_peers(&s, &[nginx, h2o]).unwrap_err().to_string();
    assert!(
        e.contains("nginx: not installed") && e.contains("h2o: not installed"),
        "{e}"
    );
}
