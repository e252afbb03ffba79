//! The plan as text (`httplab study --dry-run`): corpus, pinning, servers
//! and whether each is available, the protocol, every workload's steps and
//! the run count and time estimate.

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::execute::servers;
use crate::execute::tls::{CertFiles, CERT_DESCRIPTION};
use crate::plan::steps::describe_offer;
use crate::plan::study_plan::{Budget, StudyPlan, SEARCH_RUNS};
use crate::plan::text::{cores_text, fmt_num, human_secs};
use crate::spec::{Protocol, StudyFile, WorkloadKind};

/// The plan as text (`--dry-run`): `plan`, the plan of study `s`.
pub fn describe_plan(s: &StudyFile, plan: &StudyPlan) -> String {
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
    let (sc, cc, notes) = (
        &plan.pinning.server_cores,
        &plan.pinning.client_cores,
        &plan.pinning.notes,
    );
    if s.tls {
        let _ = writeln!(
            o,
            "tls: every server serves HTTPS and every run loads over TLS ({CERT_DESCRIPTION})"
        );
    }
    let _ = writeln!(
        o,
        "pinning: servers on {}, load generator on {}",
        cores_text(sc),
        cores_text(cc)
    );
    for n in notes {
        let _ = writeln!(o, "  note: {n}");
    }
    server_lines(&mut o, s, plan);
    protocol_line(&mut o, plan);
    workload_lines(&mut o, s, plan);
    let (lo, hi) = plan.runs_range();
    let _ = writeln!(
        o,
        "total: {lo} to {hi} load run(s) (capacity searches counted as {SEARCH_RUNS} each); {}",
        time_text(plan)
    );
    o
}

/// How long the plan takes: its first rounds, and at most with its extra
/// rounds.
pub fn time_text(plan: &StudyPlan) -> String {
    let first = human_secs(plan.first_rounds_seconds());
    let extra = plan.extra_seconds();
    if extra <= 0.0 {
        return format!("about {first} (no extra rounds)");
    }
    let how = match plan.budget {
        Budget::Seconds(b) => format!("up to {} of extra rounds", human_secs(b)),
        Budget::AsLongAsFirstRounds => "extra rounds for as long again".to_string(),
    };
    format!(
        "about {first} for the first rounds, then {how}: about {} at most",
        human_secs(plan.longest_seconds())
    )
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

fn server_lines(o: &mut String, s: &StudyFile, plan: &StudyPlan) {
    let _ = writeln!(o, "servers:");
    for sv in &plan.servers {
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

fn protocol_line(o: &mut String, plan: &StudyPlan) {
    let proto = &plan.protocol;
    let _ = writeln!(
        o,
        "protocol: warm-up {} s, window {} s, {} rounds of random order per step, then {}; δ {} %, alpha {}{}",
        fmt_num(proto.warmup_s),
        fmt_num(proto.window_s),
        proto.min_repetitions,
        match plan.budget {
            Budget::Seconds(b) if b <= 0.0 => "no extra rounds (no budget: one look)".to_string(),
            Budget::Seconds(b) => format!(
                "every server restarted, {} s of extra rounds (up to {} a step) for the comparisons nearest a decision",
                fmt_num(b),
                proto.max_repetitions
            ),
            Budget::AsLongAsFirstRounds => format!(
                "every server restarted, extra rounds for as long as the first rounds took (up to {} a step) for the comparisons nearest a decision",
                proto.max_repetitions
            ),
        },
        fmt_num(proto.min_effect * 100.0),
        proto.alpha,
        if plan.seed_given {
            format!(", seed {}", proto.seed)
        } else {
            ", seed drawn at start (recorded)".into()
        }
    );
}

fn workload_lines(o: &mut String, s: &StudyFile, plan: &StudyPlan) {
    let _ = writeln!(o, "workloads:");
    for (wi, (w, wp)) in s.workloads.iter().zip(&plan.workloads).enumerate() {
        let st = &wp.steps;
        let srv: Vec<String> = plan.servers_of(wi).map(|x| x.name.clone()).collect();
        let (min, max) = wp.rounds;
        let _ = writeln!(
            o,
            "  {} ({}, metric {}): {} step(s) × {}–{} repetition(s) on {}{}",
            w.name,
            w.kind.as_str(),
            wp.metric.key(),
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
        }
        for (i, why) in &wp.left_out {
            if let Some(x) = plan.servers.get(*i) {
                let _ = writeln!(o, "    {} {why}", x.name);
            }
        }
        if let Some(why) = &wp.skipped {
            let _ = writeln!(o, "    {why}");
        } else if let Some(pct) = w.loss_pct {
            let _ = writeln!(
                o,
                "    {pct} % packet loss on lo during each run (nftables on the server's port, else tc netem; removed after it; needs root, else the workload is skipped)"
            );
        }
        for p in st {
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
        http3: false,
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
        super::protocol_line(
            &mut o,
            &super::StudyPlan::new(&s, false, None, super::servers::speaks),
        );
        assert!(
            o.contains("then every server restarted, 123 s of extra rounds"),
            "{o}"
        );
        s.protocol.budget_s = Some(0.0);
        let mut o = String::new();
        super::protocol_line(
            &mut o,
            &super::StudyPlan::new(&s, false, None, super::servers::speaks),
        );
        assert!(o.contains("no extra rounds"), "{o}");
    }

    #[test]
    fn the_total_adds_the_budget_in_force() {
        let text = "name = \"t\"\n[[servers]]\nname = \"a\"\nkind = \"nginx\"\n[[servers]]\nname = \"b\"\nkind = \"h2o\"\n\
                    [[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/x\"\nrate = 100\n";
        let s = crate::spec::parse(text, "t.toml").expect("study");
        let with = super::StudyPlan::new(&s, false, Some(120.0), super::servers::speaks);
        let first = super::human_secs(with.first_rounds_seconds());
        let longest = super::human_secs(with.first_rounds_seconds() + 120.0);
        let shown = super::describe_plan(&s, &with);
        assert!(
            shown.contains(&format!(
                "about {first} for the first rounds, then up to 2 min 0 s of extra rounds: about {longest} at most"
            )),
            "{shown}"
        );
        assert!(
            shown.contains("then every server restarted, 120 s of extra rounds"),
            "{shown}"
        );
        let none = super::StudyPlan::new(&s, false, Some(0.0), super::servers::speaks);
        assert!(super::time_text(&none).ends_with("(no extra rounds)"));
    }

    /// Every server speaks every protocol: the plan as it was counted
    /// before left-out servers were taken out of the estimate.
    fn everyone_speaks(
        _: &crate::spec::ServerInstance,
        _: crate::spec::Protocol,
        _: bool,
    ) -> Result<(), String> {
        Ok(())
    }

    #[test]
    fn the_protocols_estimate_counts_only_the_servers_that_run() {
        let text = crate::studies::builtin("protocols").expect("the protocols built-in");
        let s = crate::spec::parse(text, "protocols").expect("study");
        let plan = super::StudyPlan::new(&s, false, None, super::servers::speaks);
        let all = super::StudyPlan::new(&s, false, None, everyone_speaks);
        for (wp, every) in plan.workloads.iter().zip(&all.workloads) {
            let n = wp.servers.len() as u64;
            let running = n - wp.left_out.len() as u64;
            assert_eq!(wp.runs_per_round * n, every.runs_per_round * running);
            let scaled = every.round_seconds * running as f64 / n as f64;
            assert!((wp.round_seconds - scaled).abs() < 1e-9, "{}", wp.name);
            if wp.name.contains("h3") {
                let out: Vec<&str> = wp
                    .left_out
                    .iter()
                    .map(|(i, _)| plan.servers[*i].name.as_str())
                    .collect();
                assert_eq!(out, ["nginx", "h2o", "lighttpd"], "{}", wp.name);
                assert_eq!(running, 3, "{}: httplab, Caddy and ngtcp2", wp.name);
            }
        }
        assert!(plan.runs_range().0 < all.runs_range().0);
        assert!(plan.first_rounds_seconds() < all.first_rounds_seconds());
        // The plan's text shows the estimate of the servers that run, and
        // each left-out server once with its reason.
        let shown = super::describe_plan(&s, &plan);
        let first = super::human_secs(plan.first_rounds_seconds());
        assert!(
            shown.contains(&format!("about {first} for the first rounds")),
            "{shown}"
        );
        assert!(
            shown.contains(&format!("total: {} to ", plan.runs_range().0)),
            "{shown}"
        );
        assert!(shown.contains("    nginx does not speak h3: "), "{shown}");
    }
}
