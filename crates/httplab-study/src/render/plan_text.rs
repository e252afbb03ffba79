//! The plan as text (`httplab study --dry-run`): corpus, pinning, servers
//! and whether each is available, the protocol, every workload's steps and
//! the run count and time estimate.

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::execute::servers;
use crate::execute::tls::{CertFiles, CERT_DESCRIPTION};
use crate::plan::estimate::{count_runs_range, estimate_seconds, servers_of, SEARCH_RUNS};
use crate::plan::pinning::resolve_pinning;
use crate::plan::rounds;
use crate::plan::steps::{describe_offer, steps_with};
use crate::plan::text::{cores_text, fmt_num, human_secs};
use crate::spec::{expand_servers, Protocol, StudyFile, WorkloadKind};

/// The plan as text (`--dry-run`).
pub fn describe_plan(s: &StudyFile) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "study: {}{}",
        s.name,
        if s.title.is_empty() {
            String::new()
        } else {
            format!(" — {}", s.title)
        }
    );
    corpus_lines(&mut o, s);
    let (sc, cc, notes) = resolve_pinning(s);
    if s.tls {
        let _ = writeln!(
            o,
            "tls: every server serves HTTPS and every run loads over TLS ({CERT_DESCRIPTION})"
        );
    }
    let _ = writeln!(
        o,
        "pinning: servers on {}, load generator on {}",
        cores_text(&sc),
        cores_text(&cc)
    );
    for n in notes {
        let _ = writeln!(o, "  note: {n}");
    }
    server_lines(&mut o, s);
    protocol_line(&mut o, s);
    workload_lines(&mut o, s);
    let (lo, hi) = count_runs_range(s);
    let _ = writeln!(
        o,
        "total: {lo} to {hi} load run(s) (capacity searches counted as {SEARCH_RUNS} each); about {} at the fewest repetitions",
        human_secs(estimate_seconds(s))
    );
    o
}

fn corpus_lines(o: &mut String, s: &StudyFile) {
    let c = &s.corpus;
    let _ = writeln!(o, "corpus:");
    for f in &c.files {
        let _ = writeln!(o, "  /{}  {}", f.path.trim_start_matches('/'), f.size);
    }
    for x in &c.sets {
        let _ = writeln!(o, "  set:{}  {} files × {}", x.name, x.count, x.size);
    }
    for p in &c.pages {
        let _ = writeln!(
            o,
            "  page:{}  /{}.html ({}) with {} objects × {}",
            p.name, p.name, p.page_size, p.objects, p.object_size
        );
    }
}

fn server_lines(o: &mut String, s: &StudyFile) {
    let _ = writeln!(o, "servers:");
    for sv in &expand_servers(s) {
        let status = match servers::plan(sv, &dry_context(s.tls), 0) {
            Ok(_) => "available".to_string(),
            Err(u) => u.reason(),
        };
        let w = sv
            .workers
            .map(|w| format!(", workers {w}"))
            .unwrap_or_default();
        let _ = writeln!(o, "  {} ({}{w}): {status}", sv.name, sv.spec.kind.as_str());
    }
}

fn protocol_line(o: &mut String, s: &StudyFile) {
    let proto = rounds::protocol(s, false);
    let _ = writeln!(
        o,
        "protocol: warm-up {} s, window {} s, {} rounds of random order per step, then {}; δ {} %, alpha {}{}",
        fmt_num(proto.warmup_s),
        fmt_num(proto.window_s),
        proto.min_repetitions,
        match s.protocol.budget_s {
            Some(b) if b <= 0.0 => "no extra rounds (no budget: one look)".to_string(),
            Some(b) => format!(
                "every server restarted, {} s of extra rounds (up to {} a step) for the comparisons nearest a decision",
                fmt_num(b),
                proto.max_repetitions
            ),
            None => format!(
                "every server restarted, extra rounds for as long as the first rounds took (up to {} a step) for the comparisons nearest a decision",
                proto.max_repetitions
            ),
        },
        fmt_num(proto.min_effect * 100.0),
        proto.alpha,
        match s.protocol.seed {
            Some(x) => format!(", seed {x}"),
            None => ", seed drawn at start (recorded)".into(),
        }
    );
}

fn workload_lines(o: &mut String, s: &StudyFile) {
    let all = expand_servers(s);
    let proto = rounds::protocol(s, false);
    let _ = writeln!(o, "workloads:");
    for w in &s.workloads {
        let st = steps_with(w, &s.protocol);
        let srv: Vec<String> = servers_of(w, &all).iter().map(|x| x.name.clone()).collect();
        let (min, max) = rounds::reps_of(&proto, w);
        let _ = writeln!(
            o,
            "  {} ({}, metric {}): {} step(s) × {}–{} repetition(s) on {}{}",
            w.name,
            w.kind.as_str(),
            rounds::primary_metric(s, w).key(),
            st.len(),
            min,
            max,
            srv.join(", "),
            match w.slices {
                Some(k) if k > 1 => format!(
                    "; each round in {k} slices per server, order reversed every other slice (A B | B A)"
                ),
                _ => String::new(),
            }
        );
        if w.protocol != Protocol::H1 {
            let how = match (w.protocol, s.tls) {
                (Protocol::H2, true) => "HTTP/2 (h2 by ALPN)",
                (Protocol::H2, false) => "HTTP/2 (h2c by prior knowledge)",
                (Protocol::H3, _) => "HTTP/3 (h3 over QUIC)",
                _ => w.protocol.label(),
            };
            let streams = w.streams.unwrap_or(crate::plan::load_run::H2_STREAMS);
            let _ = writeln!(
                o,
                "    over {how}, {streams} stream{} in flight per connection",
                if streams == 1 { "" } else { "s" }
            );
            for x in servers_of(w, &all) {
                if let Err(why) = servers::speaks(x, w.protocol, s.tls) {
                    let _ = writeln!(o, "    {} does not speak {}: {why}", x.name, w.protocol);
                }
            }
        }
        if let Some(pct) = w.loss_pct {
            let _ = writeln!(
                o,
                "    {pct} % packet loss on lo during each run (nftables on the server's port, else tc netem; removed after it; needs root, else the workload is skipped)"
            );
        }
        for p in &st {
            let label = if p.step.is_empty() {
                String::new()
            } else {
                format!("[{}] ", p.step)
            };
            let tls = match (s.tls, w.tls_resume.unwrap_or(true)) {
                (false, _) => "",
                (true, true) => "; over TLS, sessions resumed",
                (true, false) => "; over TLS, a full handshake per connection",
            };
            let idle = if w.kind == WorkloadKind::Idle {
                format!(", {}", crate::plan::idle::describe(w, p))
            } else {
                String::new()
            };
            let _ = writeln!(o, "    {label}{}{idle}{tls}", describe_offer(p));
        }
    }
}

/// Where the servers would be configured, for checking their availability
/// without writing anything.
fn dry_context(tls: bool) -> servers::Context {
    servers::Context {
        root: PathBuf::from("/nonexistent"),
        work: PathBuf::from("/nonexistent"),
        httplab_exe: servers::find_httplab_exe(),
        probe_path: "/".into(),
        tls: tls.then(|| CertFiles {
            cert: PathBuf::from("/nonexistent/cert.pem"),
            key: PathBuf::from("/nonexistent/key.pem"),
        }),
        http2: false,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_plan_shows_the_budget_in_force() {
        let text = "name = \"t\"\n[[servers]]\nname = \"a\"\nkind = \"nginx\"\n[[servers]]\nname = \"b\"\nkind = \"h2o\"\n\
                    [[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/x\"\nrate = 100\n";
        let mut s = crate::spec::parse(text, "t.toml").expect("study");
        s.protocol.budget_s = Some(123.0);
        let mut o = String::new();
        super::protocol_line(&mut o, &s);
        assert!(
            o.contains("then every server restarted, 123 s of extra rounds"),
            "{o}"
        );
        s.protocol.budget_s = Some(0.0);
        let mut o = String::new();
        super::protocol_line(&mut o, &s);
        assert!(o.contains("no extra rounds"), "{o}");
    }
}
