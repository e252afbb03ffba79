//! The self-check judges the client only when something was measured: a
//! run against a port where nothing listens is "nothing measured", never
//! "client-bound".

use std::ffi::OsString;
use std::net::TcpListener;

use httplab_model::RunResult;

/// A loopback port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let port = l.local_addr().expect("local addr").port();
    drop(l);
    port
}

/// Runs `httplab load ARGS --quiet --json F` as the command line does and
/// returns the JSON document and the report the command would have printed.
fn run_cli(args: &str) -> (serde_json::Value, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("run.json");
    let mut argv: Vec<OsString> = vec!["httplab load".into()];
    argv.extend(args.split_whitespace().map(OsString::from));
    argv.extend(["--quiet".into(), "--json".into(), json.clone().into()]);
    httplab_load::cli_main(argv).expect("httplab load ran");
    let text = std::fs::read_to_string(&json).expect("--json written");
    let value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let run: RunResult = serde_json::from_str(&text).expect("a run document");
    (value, httplab_load::render_httperf_report(&run))
}

#[test]
fn refused_connections_are_nothing_measured_not_client_bound() {
    let port = closed_port();
    let (json, text) = run_cli(&format!(
        "--server 127.0.0.1 --port {port} --num-conns 3 --timeout 2"
    ));
    assert_eq!(json["totals"]["replies"], 0, "{json}");
    assert_eq!(json["errors"]["connrefused"], 3, "{json}");
    assert_eq!(json["self_check"]["client_bound"], false, "{json}");
    assert_eq!(
        json["self_check"]["reasons"],
        serde_json::json!([]),
        "{json}"
    );
    assert!(!text.contains("CLIENT-BOUND"), "{text}");
    assert!(
        text.contains(
            "httplab verdict: nothing measured: no server answered: 3 connections refused"
        ),
        "{text}"
    );
    assert!(
        text.contains(&format!("is the server listening on 127.0.0.1:{port}?")),
        "{text}"
    );
}

#[test]
fn closed_loop_users_against_nothing_are_not_client_bound() {
    // Users retry at once on every refusal: the generator is busy for the
    // whole 0.3 s, but with no reply there is no load to judge it by.
    let port = closed_port();
    let (json, text) = run_cli(&format!(
        "http://127.0.0.1:{port}/ --users 2 --duration 0.3 --timeout 2"
    ));
    assert_eq!(json["totals"]["replies"], 0, "{json}");
    assert_eq!(json["self_check"]["client_bound"], false, "{json}");
    assert!(!text.contains("CLIENT-BOUND"), "{text}");
    assert!(
        text.contains("httplab verdict: nothing measured: no server answered"),
        "{text}"
    );
}
