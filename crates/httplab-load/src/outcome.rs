//! What a finished load tells the shell: its exit status, and why a run
//! that measured nothing failed (used by `load` and `load --repeat`).

use std::process::ExitCode;

use httplab_model::RunResult;

use crate::spec::LoadSpec;

/// The exit status of a finished load (every output already written): 130
/// when interrupted; 1, with the reason on stderr, when some run measured
/// nothing because no server answered; 0 otherwise.
pub(crate) fn exit_status(spec: &LoadSpec, runs: &[&RunResult]) -> ExitCode {
    if runs.iter().any(|r| r.interrupted) {
        return ExitCode::from(130);
    }
    match runs.iter().find_map(|r| nothing_answered(spec, r)) {
        Some(why) => {
            eprintln!("httplab load: error: {why}");
            ExitCode::FAILURE
        }
        None => ExitCode::SUCCESS,
    }
}

/// Why a run measured nothing: calls were made or attempted and not one
/// reply came back (a reply of any status counts as an answer).
pub(crate) fn nothing_answered(spec: &LoadSpec, r: &RunResult) -> Option<String> {
    let t = &r.totals;
    if t.replies > 0 || (t.connections == 0 && r.errors.total == 0) {
        return None;
    }
    let e = &r.errors;
    let classes = [
        (e.connrefused, "connection refused"),
        (e.socket_timo, "connect timed out"),
        (e.client_timo, "no answer within --timeout"),
        (e.connreset, "connection closed or reset"),
        (e.fd_unavail, "out of file descriptors"),
        (e.addrunavail, "out of local ports"),
        (
            e.response_timo,
            "reply not complete within --max-response-time",
        ),
        (e.tls, "TLS failure"),
        (e.other.saturating_sub(e.tls), "protocol error"),
    ];
    let mut why: Vec<String> = classes
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, w)| format!("{w} ×{n}"))
        .collect();
    if why.is_empty() {
        why.push(format!("{} connections, no reply", t.connections));
    }
    Some(format!(
        "no server answered at {}:{}: {}",
        spec.server,
        spec.port,
        why.join(", ")
    ))
}
