//! The study-file parser: every built-in parses; bad files name the line.

use httplab_study::spec::{self, Size};
use httplab_study::{builtin, runner, BUILTINS};

#[test]
fn every_builtin_parses_and_plans() {
    for (name, _, text) in BUILTINS {
        let s = spec::parse(text, name).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert_eq!(s.name, *name);
        assert!(
            runner::plan(&s, false, None).runs_range().0 > 0,
            "{name} plans no runs"
        );
        let plan = runner::describe_plan(&s, &runner::plan(&s, false, None));
        assert!(plan.contains("total:"), "{plan}");
    }
    for n in [
        "default",
        "architectures",
        "file-sizes",
        "capacity",
        "worker-threads",
        "idle",
        "protocols",
        "multiplexing",
    ] {
        assert!(builtin(n).is_some(), "missing built-in {n}");
    }
}

#[test]
fn multiplexing_asks_the_models_question_over_h1_and_h2() {
    let s = spec::parse(builtin("multiplexing").unwrap(), "multiplexing").unwrap();
    let plan = runner::describe_plan(&s, &runner::plan(&s, false, None));
    for line in [
        "httplab event (httplab, workers 1): available",
        "httplab threads",
        "httplab fork",
        "over HTTP/2 (h2c by prior knowledge), 1 stream in flight per connection",
        "over HTTP/2 (h2c by prior knowledge), 20 streams in flight per connection",
    ] {
        assert!(plan.contains(line), "{line}: {plan}");
    }
    // Every model speaks HTTP/2: nobody is left out.
    assert!(!plan.contains("does not speak"), "{plan}");
    assert_eq!(s.questions.len(), 3);
}

#[test]
fn default_tours_httplab_and_all_peers() {
    let s = spec::parse(builtin("default").unwrap(), "default").unwrap();
    let kinds: Vec<&str> = s.servers.iter().map(|x| x.kind.as_str()).collect();
    for k in ["httplab", "nginx", "apache", "lighttpd", "h2o"] {
        assert!(kinds.contains(&k), "default lacks {k}");
    }
}

#[test]
fn protocols_plans_h1_h2_h3_over_tls_with_who_does_not_speak_them() {
    let s = spec::parse(builtin("protocols").unwrap(), "protocols").unwrap();
    assert!(s.tls, "h2 by ALPN and h3 need TLS");
    let kinds: Vec<&str> = s.servers.iter().map(|x| x.kind.as_str()).collect();
    for k in ["httplab", "nginx", "h2o", "lighttpd", "caddy", "ngtcp2"] {
        assert!(kinds.contains(&k), "protocols lacks {k}");
    }
    for (content, loss) in [("page", ""), ("large", ""), ("page", "-loss")] {
        for p in spec::Protocol::ALL {
            let name = format!("{content}-{p}{loss}");
            let w = s.workloads.iter().find(|w| w.name == name);
            assert_eq!(w.map(|w| w.protocol), Some(p), "{name}");
            let pct = w.and_then(|w| w.loss_pct);
            assert_eq!(pct, (!loss.is_empty()).then_some(1.0), "{name}");
        }
    }
    // Short enough for a 2-core machine: about five minutes at the fewest
    // rounds (6 servers over h1 and h2, 3 over h3). The plan's estimate
    // counts each server left out of a workload for its protocol as a run
    // (60 rows of 4 rounds; 42 are measured), so it overestimates.
    let plan = runner::plan(&s, false, None);
    let (lo, _) = plan.runs_range();
    assert!(lo <= 240, "{lo} runs");
    let secs = plan.longest_seconds();
    assert!(secs < 360.0, "{secs} s");
    let plan = runner::describe_plan(&s, &runner::plan(&s, false, None));
    for line in [
        "over HTTP/3 (h3 over QUIC)",
        "nginx does not speak h3: ",
        "ngtcp2 does not speak h1: ",
        "ngtcp2 does not speak h2: ",
        "h2o does not speak h3: ",
        "lighttpd does not speak h3: ",
        "1 % packet loss on lo",
    ] {
        assert!(plan.contains(line), "{line}: {plan}");
    }
    assert!(!plan.contains("caddy does not speak"), "{plan}");
    assert!(!plan.contains("httplab event does not speak"), "{plan}");
    assert!(!plan.contains("httplab event does not speak h2"), "{plan}");
    assert_eq!(
        cli(&["protocols", "--dry-run"]).unwrap(),
        std::process::ExitCode::SUCCESS
    );
}

#[test]
fn loss_pct_is_a_percentage_of_load_and_users_workloads() {
    let wl = |kind: &str, extra: &str| {
        format!("{OK_HEAD}[[servers]]\nkind = \"nginx\"\n[[workloads]]\nname = \"w\"\nkind = \"{kind}\"\ntarget = \"/a.txt\"\n{extra}")
    };
    let s = spec::parse(&wl("users", "users = 2\nloss_pct = 1\n"), "l.toml").unwrap();
    assert_eq!(s.workloads[0].loss_pct, Some(1.0));
    assert!(
        runner::describe_plan(&s, &runner::plan(&s, false, None)).contains("1 % packet loss on lo")
    );
    for bad in ["0", "-1", "60"] {
        let e = err_of(&wl("load", &format!("loss_pct = {bad}\n")));
        assert!(e.contains("loss_pct"), "{e}");
    }
    let e = err_of(&wl("idle", "loss_pct = 1\nusers = 2\n"));
    assert!(
        e.contains("`loss_pct` applies to `load` and `users`"),
        "{e}"
    );
}

#[test]
fn probe_is_a_light_rate_of_load_users_and_sweep_workloads() {
    let wl = |kind: &str, extra: &str| {
        format!("{OK_HEAD}[[servers]]\nkind = \"nginx\"\n[[workloads]]\nname = \"w\"\nkind = \"{kind}\"\ntarget = \"/a.txt\"\n{extra}")
    };
    let s = spec::parse(&wl("load", "rate = 100\nprobe = 50\n"), "p.toml").unwrap();
    assert_eq!(s.workloads[0].probe, Some(50.0));
    for bad in ["0", "-1", "100000"] {
        let e = err_of(&wl("load", &format!("probe = {bad}\n")));
        assert!(e.contains("probe"), "{e}");
    }
    let e = err_of(&wl("idle", "probe = 10\nusers = 2\n"));
    assert!(e.contains("`probe` applies to"), "{e}");
}

#[test]
fn check_client_belongs_to_load_and_users_workloads() {
    let wl = |kind: &str, extra: &str| {
        format!("{OK_HEAD}[[servers]]\nkind = \"nginx\"\n[[workloads]]\nname = \"w\"\nkind = \"{kind}\"\ntarget = \"/a.txt\"\n{extra}")
    };
    let s = spec::parse(&wl("users", "users = 2\ncheck_client = true\n"), "c.toml").unwrap();
    assert!(s.workloads[0].check_client);
    let s = spec::parse(&wl("users", "users = 2\n"), "c.toml").unwrap();
    assert!(!s.workloads[0].check_client);
    let e = err_of(&wl("idle", "check_client = true\nusers = 2\n"));
    assert!(
        e.contains("`check_client` applies to `load` and `users`"),
        "{e}"
    );
}

#[test]
fn worker_list_expands_into_servers() {
    let s = spec::parse(builtin("worker-threads").unwrap(), "w").unwrap();
    let names: Vec<String> = spec::expand_servers(&s)
        .into_iter()
        .map(|x| x.name)
        .collect();
    assert_eq!(
        names,
        ["threads ×1", "threads ×5", "threads ×10", "threads ×50"]
    );
}

fn err_of(text: &str) -> String {
    match spec::parse(text, "bad.toml") {
        Ok(_) => panic!("parsed: {text}"),
        Err(e) => format!("{e:#}"),
    }
}

const OK_HEAD: &str = "name = \"t\"\n[corpus]\nfiles = [{ path = \"a.txt\", size = 10 }]\n";

#[test]
fn unknown_field_names_its_line() {
    let text = format!("{OK_HEAD}[[servers]]\nkind = \"nginx\"\nworkerz = 2\n[[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/a.txt\"\n");
    let e = err_of(&text);
    assert!(e.starts_with("bad.toml:6:"), "{e}");
    assert!(e.contains("workerz"), "{e}");
}

/// A study file is strict where a result document is lenient: a `vary`
/// parameter this version does not know is refused, with the valid words.
#[test]
fn an_unknown_vary_param_is_refused_with_the_valid_ones() {
    let text = format!("{OK_HEAD}[[servers]]\nkind = \"nginx\"\n[[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/a.txt\"\nrate = 10\nvary = {{ param = \"streams\", values = [1, 2] }}\n");
    let e = err_of(&text);
    assert!(e.contains("streams"), "{e}");
    for p in httplab_model::VaryParam::ALL {
        assert!(e.contains(p.as_str()), "{e}");
    }
}

#[test]
fn bad_kind_names_its_line() {
    let text = format!("{OK_HEAD}[[servers]]\nkind = \"iis\"\n[[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/a.txt\"\n");
    let e = err_of(&text);
    assert!(e.starts_with("bad.toml:5:"), "{e}");
    assert!(e.contains("iis"), "{e}");
}

#[test]
fn bad_size_names_its_line() {
    let text = "name = \"t\"\n[corpus]\nfiles = [{ path = \"a.txt\", size = \"12 parsecs\" }]\n[[servers]]\nkind = \"nginx\"\n[[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/a.txt\"\n";
    let e = err_of(text);
    assert!(e.starts_with("bad.toml:3:"), "{e}");
    assert!(e.contains("parsecs"), "{e}");
}

#[test]
fn syntax_error_names_its_line() {
    let text = "name = \"t\"\n\n[[servers]\nkind = \"nginx\"\n";
    let e = err_of(text);
    assert!(e.starts_with("bad.toml:3:"), "{e}");
}

#[test]
fn semantic_errors_name_the_line() {
    let text = format!("{OK_HEAD}[[servers]]\nkind = \"nginx\"\n[[workloads]]\nname = \"w\"\nkind = \"load\"\nservers = [\"apache\"]\ntarget = \"/a.txt\"\n");
    let e = err_of(&text);
    assert!(e.contains("line 7") && e.contains("'apache'"), "{e}");
    let text = format!("{OK_HEAD}[[servers]]\nkind = \"nginx\"\n[[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"set:nope\"\n");
    let e = err_of(&text);
    assert!(e.contains("line 7") && e.contains("set:nope"), "{e}");
    let text = format!("{OK_HEAD}[[servers]]\nkind = \"nginx\"\n[[workloads]]\nname = \"w\"\nkind = \"sweep\"\ntarget = \"/a.txt\"\n");
    let e = err_of(&text);
    assert!(e.contains("low_rate"), "{e}");
    let text = format!("{OK_HEAD}[[servers]]\nkind = \"command\"\n[[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/a.txt\"\n");
    assert!(err_of(&text).contains("command"));
    let text = format!("{OK_HEAD}[[servers]]\nkind = \"nginx\"\n");
    assert!(err_of(&text).contains("workloads"));
}

#[test]
fn sizes() {
    assert_eq!(Size::parse("87").unwrap(), Size(87));
    assert_eq!(Size::parse("87B").unwrap(), Size(87));
    assert_eq!(Size::parse("12.9KB").unwrap(), Size(12900));
    assert_eq!(Size::parse("2.9 MB").unwrap(), Size(2_900_000));
    assert_eq!(Size::parse("32MiB").unwrap(), Size(32 << 20));
    assert!(Size::parse("many").is_err());
    assert!(Size::parse("1XB").is_err());
}

#[test]
fn sweep_and_vary_steps() {
    let s = spec::parse(builtin("capacity").unwrap(), "c").unwrap();
    let sweep = s.workloads.iter().find(|w| w.name == "reply-rate").unwrap();
    // A sweep is one capacity search, starting at low_rate.
    let st = runner::steps(sweep);
    assert_eq!(st.len(), 1);
    assert_eq!(st[0].step, "");
    assert!(matches!(
        st[0].offer,
        runner::Offer::Open {
            rate: Some(r),
            ..
        } if r == 1000.0
    ));
    let users = s
        .workloads
        .iter()
        .find(|w| w.name == "simultaneous-clients")
        .unwrap();
    assert_eq!(runner::steps(users).len(), 3);
}

fn cli(args: &[&str]) -> anyhow::Result<std::process::ExitCode> {
    let mut v = vec![std::ffi::OsString::from("httplab study")];
    v.extend(args.iter().map(std::ffi::OsString::from));
    httplab_study::cli_main(v)
}

#[test]
fn cli_list_dry_run_help_and_errors() {
    assert_eq!(cli(&["--list"]).unwrap(), std::process::ExitCode::SUCCESS);
    assert_eq!(cli(&["--help"]).unwrap(), std::process::ExitCode::SUCCESS);
    for (n, _, _) in BUILTINS {
        assert_eq!(
            cli(&[n, "--dry-run"]).unwrap(),
            std::process::ExitCode::SUCCESS
        );
    }
    assert_eq!(
        cli(&["default", "--show"]).unwrap(),
        std::process::ExitCode::SUCCESS
    );
    assert_eq!(cli(&["--bogus"]).unwrap(), std::process::ExitCode::from(2));
    let e = cli(&["no-such-study"]).unwrap_err();
    assert!(format!("{e:#}").contains("neither a built-in"), "{e:#}");
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.toml");
    std::fs::write(
        &f,
        "name = \"x\"\n[[servers]]\nkind = \"nginx\"\nport = 80\n",
    )
    .unwrap();
    let e = format!(
        "{:#}",
        cli(&[f.to_str().unwrap(), "--dry-run"]).unwrap_err()
    );
    assert!(e.contains("bad.toml:4:") && e.contains("port"), "{e}");
    let e = format!(
        "{:#}",
        cli(&["default", "--dry-run", "--server", "iis"]).unwrap_err()
    );
    assert!(e.contains("iis"), "{e}");
    assert_eq!(
        cli(&["default", "--dry-run", "--server", "nginx"]).unwrap(),
        std::process::ExitCode::SUCCESS
    );
}

#[test]
fn protocol_keys_and_overrides() {
    let s = spec::parse(builtin("default").unwrap(), "d").unwrap();
    assert!(!s.questions.is_empty());
    let text = "name = \"x\"\n[protocol]\nwarmup_s = 0.2\nwindow_s = 1.5\nmin_repetitions = 2\nmax_repetitions = 4\n\
        alpha = 0.01\ndelta = 0.1\nbudget_s = 60\nseed = 9\n\
        [[servers]]\nkind = \"nginx\"\n[[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/\"\n";
    let p = spec::parse(text, "p.toml").unwrap().protocol;
    assert_eq!(
        (p.warmup_s, p.window_s, p.min_repetitions, p.max_repetitions),
        (0.2, 1.5, 2, 4)
    );
    assert_eq!((p.alpha, p.min_effect), (0.01, 0.1));
    assert_eq!((p.budget_s, p.seed), (Some(60.0), Some(9)));
    let bad = |proto: &str| {
        let text = format!(
            "name = \"x\"\n[protocol]\n{proto}\n[[servers]]\nkind = \"nginx\"\n[[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/\"\n"
        );
        format!("{:#}", spec::parse(&text, "p.toml").unwrap_err())
    };
    assert!(bad("min_repetitions = 1").contains("confidence interval"));
    // Rounds no longer stop on a precision target: the key is refused with what to use.
    assert!(bad("precision = 0.02").contains("budget_s"));
    assert!(bad("window_s = 0").contains("window_s"));
    assert!(bad("alpha = 0.9").contains("alpha"));
    assert!(bad("bogus = 1").contains("bogus"));
    // Command-line overrides are checked too.
    assert!(format!(
        "{:#}",
        cli(&["default", "--dry-run", "--repetitions", "1"]).unwrap_err()
    )
    .contains("at least 2"));
    assert!(format!(
        "{:#}",
        cli(&["default", "--dry-run", "--max-reps", "2"]).unwrap_err()
    )
    .contains("below the fewest"));
    assert_eq!(
        cli(&["default", "--dry-run", "--quick", "--seed", "5"]).unwrap(),
        std::process::ExitCode::SUCCESS
    );
}

#[test]
fn question_evidence_must_name_known_servers_and_workloads() {
    let text = "name = \"x\"\n[[servers]]\nkind = \"nginx\"\n[[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/\"\n\
        [[questions]]\nask = \"q?\"\nevidence = [{ workload = \"w\", server = \"nginx\", versus = \"iis\" }]\n";
    let e = format!("{:#}", spec::parse(text, "q.toml").unwrap_err());
    assert!(e.contains("iis"), "{e}");
}

#[test]
fn restricting_servers_keeps_only_their_workloads() {
    let s = spec::parse(builtin("worker-threads").unwrap(), "w").unwrap();
    let r = httplab_study::restrict_servers(s, &["threads ×5".to_string()]);
    assert_eq!(spec::expand_servers(&r).len(), 1);
    // client-load and file-size name other servers only.
    let names: Vec<&str> = r.workloads.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["server-threads", "together"]);
}

/// A valid study around `body` (servers, workloads or protocol lines).
fn study_with(head: &str, servers: &str, workloads: &str) -> String {
    format!(
        "name = \"t\"\n{head}\n[corpus]\nfiles = [{{ path = \"a.txt\", size = 10 }}]\nsets = [{{ name = \"s\", count = 2, size = 10 }}]\n\
         {servers}\n{workloads}\n"
    )
}

const NGINX: &str = "[[servers]]\nkind = \"nginx\"\n";
const LOAD: &str = "[[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/a.txt\"\n";

fn workload_err(lines: &str) -> String {
    err_of(&study_with("", NGINX, lines))
}

#[test]
fn unknown_keys_name_their_table() {
    let cases = [
        (
            study_with("zz_top = 1", NGINX, LOAD),
            "unknown key `zz_top` in top-level",
        ),
        (
            study_with("[protocol]\nzz_p = 1", NGINX, LOAD),
            "unknown key `zz_p` in [protocol]",
        ),
        (
            study_with("", "[[servers]]\nkind = \"nginx\"\nworkerz = 2\n", LOAD),
            "unknown key `workerz` in [[servers]]",
        ),
        (
            study_with(
                "",
                NGINX,
                &format!("{LOAD}vary = {{ param = \"pipeline\", valuez = [1] }}\n"),
            ),
            "unknown key `valuez` in [[workloads]] vary",
        ),
        (
            "name = \"t\"\n[corpus]\nfiles = [{ path = \"a.txt\", size = 10, mode = 1 }]\n[[servers]]\nkind = \"nginx\"\n[[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/a.txt\"\n"
                .to_string(),
            "unknown key `mode` in [corpus] files",
        ),
        (
            study_with(
                "",
                NGINX,
                &format!("{LOAD}[[questions]]\nask = \"?\"\nevidence = [{{ workload = \"w\", server = \"nginx\", versus = \"nginx\", sure = true }}]\n"),
            ),
            "unknown key `sure` in [[questions]] evidence",
        ),
    ];
    for (text, want) in cases {
        let e = err_of(&text);
        assert!(e.contains(want), "{e}");
        assert!(e.contains(" takes "), "lists the table's keys: {e}");
    }
    // A key of another table says where it belongs.
    let e = err_of(&study_with(
        "[protocol]\nwindow_s = 2\ntls = true",
        NGINX,
        LOAD,
    ));
    assert!(e.contains("`tls` is a key of top-level"), "{e}");
    assert!(e.contains("before the first [table]"), "{e}");
    let e = workload_err(&format!("{LOAD}workers = 2\n"));
    assert!(e.contains("`workers` is a key of [[servers]]"), "{e}");
}

#[test]
fn retired_keys_say_what_to_write_instead() {
    for key in ["high_rate = 8000", "rate_step = 1000", "step_s = 2"] {
        let e = workload_err(&format!(
            "[[workloads]]\nname = \"w\"\nkind = \"sweep\"\ntarget = \"/a.txt\"\nlow_rate = 100\n{key}\n"
        ));
        assert!(e.contains("has no effect"), "{e}");
        assert!(e.contains("low_rate") || e.contains("window_s"), "{e}");
        assert!(e.starts_with("bad.toml:"), "names the line: {e}");
    }
    let e = err_of(&study_with("driver = \"builtin\"", NGINX, LOAD));
    assert!(e.contains("`driver` has no effect"), "{e}");
    let e = workload_err(&format!("{LOAD}driver = \"httplab-load\"\n"));
    assert!(e.contains("`driver` has no effect"), "{e}");
}

#[test]
fn delta_and_its_older_name() {
    let ok = |proto: &str| {
        spec::parse(
            &study_with(&format!("[protocol]\n{proto}"), NGINX, LOAD),
            "d.toml",
        )
        .unwrap_or_else(|e| panic!("{proto}: {e:#}"))
        .protocol
    };
    assert_eq!(ok("").min_effect, 0.05);
    assert_eq!(spec::ProtocolSpec::default().min_effect, 0.05);
    assert_eq!(ok("delta = 0.1").min_effect, 0.1);
    assert_eq!(ok("min_effect = 0.02").min_effect, 0.02);
    for bad in ["delta = 0", "delta = 1", "delta = -0.1", "min_effect = 1.5"] {
        let e = err_of(&study_with(&format!("[protocol]\n{bad}"), NGINX, LOAD));
        assert!(
            e.contains("between 0 and 1") && e.contains("line 3"),
            "{bad}: {e}"
        );
    }
    let e = err_of(&study_with(
        "[protocol]\ndelta = 0.1\nmin_effect = 0.1",
        NGINX,
        LOAD,
    ));
    assert!(e.contains("delta"), "{e}");
}

#[test]
fn budget_is_seconds_above_zero() {
    let s = spec::parse(
        &study_with("[protocol]\nbudget_s = 300", NGINX, LOAD),
        "b.toml",
    )
    .unwrap();
    assert_eq!(s.protocol.budget_s, Some(300.0));
    assert_eq!(spec::ProtocolSpec::default().budget_s, None);
    for bad in ["budget_s = 0", "budget_s = -5", "budget_s = nan"] {
        let e = err_of(&study_with(&format!("[protocol]\n{bad}"), NGINX, LOAD));
        assert!(e.contains("budget_s"), "{bad}: {e}");
    }
}

#[test]
fn top_level_repetitions_sets_the_minimum() {
    let parse = |head: &str| spec::parse(&study_with(head, NGINX, LOAD), "r.toml");
    let p = parse("repetitions = 5").unwrap().protocol;
    assert_eq!((p.min_repetitions, p.max_repetitions), (5, 10));
    // Below the default minimum it still sets it (it used to be ignored).
    let p = parse("repetitions = 2").unwrap().protocol;
    assert_eq!(p.min_repetitions, 2);
    // Above the default cap it raises the cap it was not given.
    let p = parse("repetitions = 20").unwrap().protocol;
    assert_eq!((p.min_repetitions, p.max_repetitions), (20, 20));
    // Both spellings: only when they agree.
    let p = parse("repetitions = 4\n[protocol]\nmin_repetitions = 4")
        .unwrap()
        .protocol;
    assert_eq!(p.min_repetitions, 4);
    let e = format!(
        "{:#}",
        parse("repetitions = 2\n[protocol]\nmin_repetitions = 3").unwrap_err()
    );
    assert!(e.contains("same setting"), "{e}");
    let e = format!(
        "{:#}",
        parse("repetitions = 20\n[protocol]\nmax_repetitions = 10").unwrap_err()
    );
    assert!(e.contains("max_repetitions"), "{e}");
    let e = format!("{:#}", parse("repetitions = 1").unwrap_err());
    assert!(e.contains("at least 2"), "{e}");
}

#[test]
fn the_two_seeds() {
    let s = spec::parse(
        &study_with(
            "seed = \"004: a report\"\n[protocol]\nseed = 42",
            NGINX,
            LOAD,
        ),
        "s.toml",
    )
    .unwrap();
    assert_eq!(s.seed, "004: a report");
    assert_eq!(s.protocol.seed, Some(42));
    let e = err_of(&study_with("seed = 42", NGINX, LOAD));
    assert!(e.starts_with("bad.toml:2:"), "{e}");
    assert!(e.contains("[protocol]") && e.contains("seed = 42"), "{e}");
    let e = err_of(&study_with("[protocol]\nseed = \"004\"", NGINX, LOAD));
    assert!(e.contains("top-level"), "{e}");
    let e = err_of(&study_with("[protocol]\nseed = -1", NGINX, LOAD));
    assert!(e.contains("from 0 up"), "{e}");
}

#[test]
fn size_letters_are_binary_as_in_serve() {
    assert_eq!(Size::parse("64k").unwrap(), Size(65536));
    assert_eq!(Size::parse("64KiB").unwrap(), Size(65536));
    assert_eq!(Size::parse("4KB").unwrap(), Size(4000));
    assert_eq!(Size::parse("1m").unwrap(), Size(1 << 20));
    assert_eq!(Size::parse("1MB").unwrap(), Size(1_000_000));
    assert_eq!(Size::parse("1g").unwrap(), Size(1 << 30));
    assert_eq!(Size::parse("1GB").unwrap(), Size(1_000_000_000));
}

#[test]
fn workload_keys_without_effect_are_refused() {
    let cases = [
        // The other loop's keys.
        (format!("{LOAD}users = 4\n"), "`users` has no effect"),
        (format!("{LOAD}think_ms = 5\n"), "`think_ms` has no effect"),
        (
            format!("{LOAD}vary = {{ param = \"users\", values = [1, 2] }}\n"),
            "`users` has no effect",
        ),
        (
            "[[workloads]]\nname = \"w\"\nkind = \"users\"\ntarget = \"/a.txt\"\nusers = 2\nrate = 10\n".into(),
            "`rate` has no effect",
        ),
        (
            "[[workloads]]\nname = \"w\"\nkind = \"users\"\ntarget = \"/a.txt\"\nvary = { param = \"rate\", values = [10] }\nusers = 2\n".into(),
            "`rate` has no effect",
        ),
        (format!("{LOAD}low_rate = 10\n"), "`low_rate` has no effect"),
        // Counts under measure = "window", a window under measure = "count".
        (format!("{LOAD}num_conns = 50\n"), "`num_conns` has no effect with measure = \"window\""),
        (
            "[[workloads]]\nname = \"w\"\nkind = \"users\"\ntarget = \"/a.txt\"\nusers = 2\nrequests = 20\n".into(),
            "`requests` has no effect with measure = \"window\"",
        ),
        (
            format!("{LOAD}measure = \"count\"\nwindow_s = 2\n"),
            "`window_s` has no effect with measure = \"count\"",
        ),
        // A sweep is one capacity search from low_rate.
        (
            "[[workloads]]\nname = \"w\"\nkind = \"sweep\"\ntarget = \"/a.txt\"\nlow_rate = 10\nrate = 20\n".into(),
            "`rate` has no effect in a sweep",
        ),
        (
            "[[workloads]]\nname = \"w\"\nkind = \"sweep\"\ntarget = \"/a.txt\"\nlow_rate = 10\nvary = { param = \"pipeline\", values = [1, 2] }\n".into(),
            "`vary` (pipeline) has no effect in a sweep",
        ),
        // Values the runner would change.
        (format!("{LOAD}repetitions = 1\n"), "at least 2"),
        (
            format!("{LOAD}repetitions = 4\nmax_repetitions = 3\n"),
            "max_repetitions = 3 is below",
        ),
        (format!("{LOAD}max_repetitions = 2\n"), "max_repetitions = 2 is below"),
        (format!("{LOAD}pipeline = 0\n"), "pipeline must be at least 1"),
        (
            format!("{LOAD}vary = {{ param = \"num_calls\", values = [2.5] }}\n"),
            "whole numbers",
        ),
        (format!("{LOAD}timeout_s = 0\n"), "timeout_s"),
    ];
    for (lines, want) in cases {
        let e = workload_err(&lines);
        assert!(e.contains(want), "{lines}\n→ {e}");
        assert!(e.contains("workload 'w'"), "{e}");
    }
    // What stays allowed: counts with measure = "count", the idle client's
    // open or closed loop, a sweep's own counts.
    for lines in [
        format!("{LOAD}measure = \"count\"\nnum_conns = 50\nrate = 10\n"),
        "[[workloads]]\nname = \"w\"\nkind = \"users\"\ntarget = \"/a.txt\"\nusers = 2\nrequests = 20\nmeasure = \"count\"\nthink_ms = 1\n".into(),
        "[[workloads]]\nname = \"w\"\nkind = \"idle\"\ntarget = \"/a.txt\"\nrate = 10\n".into(),
        "[[workloads]]\nname = \"w\"\nkind = \"idle\"\ntarget = \"/a.txt\"\nusers = 3\nthink_ms = 1\n".into(),
        "[[workloads]]\nname = \"w\"\nkind = \"sweep\"\ntarget = \"/a.txt\"\nlow_rate = 10\nmeasure = \"count\"\nnum_conns = 20\n".into(),
        format!("{LOAD}vary = {{ param = \"num_conns\", values = [5, 10] }}\nmeasure = \"count\"\n"),
    ] {
        spec::parse(&study_with("", NGINX, &lines), "ok.toml")
            .unwrap_or_else(|e| panic!("{lines}\n→ {e:#}"));
    }
}

#[test]
fn server_keys_without_effect_are_refused() {
    let cases = [
        (
            "kind = \"nginx\"\nmpm = \"event\"",
            "`mpm` has no effect on a `nginx` server",
        ),
        (
            "kind = \"apache\"\nmodel = \"event\"",
            "`model` has no effect on a `apache` server",
        ),
        (
            "kind = \"h2o\"\nsendfile = false",
            "`sendfile` has no effect on a `h2o` server",
        ),
        (
            "kind = \"httplab\"\nsendfile = false",
            "`sendfile` has no effect",
        ),
        (
            "kind = \"httplab\"\nextra_config = \"x\"",
            "`extra_config` has no effect",
        ),
        (
            "kind = \"nginx\"\ncommand = [\"x\"]",
            "`command` has no effect",
        ),
        (
            "kind = \"httplab\"\nmode = \"close\"\nkeep_alive = true",
            "`keep_alive` has no effect next to `mode`",
        ),
        (
            "kind = \"apache\"\nmpm = \"prefork\"\nthreads_per_child = 4",
            "`threads_per_child` has no effect with mpm = \"prefork\"",
        ),
        (
            "kind = \"command\"\ncommand = [\"sh\", \"-c\", \"x {port}\"]\nworkers = 2",
            "`workers` has no effect on this command server",
        ),
        (
            "kind = \"command\"\ncommand = [\"sh\"]\nkeep_alive = false",
            "`keep_alive` has no effect on a `command` server",
        ),
        ("kind = \"nginx\"\nready_timeout_s = 0", "ready_timeout_s"),
    ];
    for (lines, want) in cases {
        let e = err_of(&study_with("", &format!("[[servers]]\n{lines}\n"), LOAD));
        assert!(e.contains(want), "{lines}\n→ {e}");
    }
    for lines in [
        "kind = \"command\"\ncommand = [\"srv\", \"--threads\", \"{workers}\"]\nworkers = [1, 2]",
        "kind = \"httplab\"\nkeep_alive = false",
        "kind = \"apache\"\nmpm = \"worker\"\nthreads_per_child = 4\nsendfile = false",
        "kind = \"lighttpd\"\nsendfile = false\nextra_config = \"# x\"",
    ] {
        spec::parse(
            &study_with("", &format!("[[servers]]\n{lines}\n"), LOAD),
            "ok.toml",
        )
        .unwrap_or_else(|e| panic!("{lines}\n→ {e:#}"));
    }
}

#[test]
fn cpu_quota_only_on_sweeps_and_in_range() {
    let base = |kind: &str, extra: &str| {
        format!(
            "name = \"q\"\n[[servers]]\nkind = \"httplab\"\n[[workloads]]\nname = \"w\"\nkind = \"{kind}\"\ntarget = \"/\"\n{extra}\n"
        )
    };
    let ok =
        httplab_study::spec::parse(&base("sweep", "low_rate = 100\ncpu_quota = 0.25"), "q.toml")
            .expect("a sweep takes cpu_quota");
    assert_eq!(ok.workloads[0].cpu_quota, Some(0.25));
    assert_eq!(
        httplab_study::rounds::primary_metric(&ok, &ok.workloads[0]).key(),
        "req_per_server_cpu_s"
    );
    let e = format!(
        "{:#}",
        httplab_study::spec::parse(&base("load", "rate = 10\ncpu_quota = 0.25"), "q.toml")
            .unwrap_err()
    );
    assert!(e.contains("cpu_quota") && e.contains("sweep"), "{e}");
    let e = format!(
        "{:#}",
        httplab_study::spec::parse(&base("sweep", "low_rate = 100\ncpu_quota = 0"), "q.toml")
            .unwrap_err()
    );
    assert!(e.contains("between 0.05 and 64"), "{e}");
}

#[test]
fn slices_only_on_timed_load_and_users_workloads() {
    let base = |kind: &str, extra: &str| {
        format!(
            "name = \"q\"\n[[servers]]\nkind = \"httplab\"\n[[workloads]]\nname = \"w\"\nkind = \"{kind}\"\ntarget = \"/\"\n{extra}\n"
        )
    };
    let ok =
        spec::parse(&base("users", "users = 2\nslices = 2"), "q.toml").expect("users take slices");
    assert_eq!(ok.workloads[0].slices, Some(2));
    for (kind, extra, want) in [
        ("sweep", "low_rate = 100\nslices = 2", "sweep"),
        ("load", "rate = 10\nslices = 9", "1 to 8"),
        (
            "load",
            "rate = 10\nnum_conns = 10\nmeasure = \"count\"\nslices = 2",
            "measure",
        ),
    ] {
        let e = format!(
            "{:#}",
            spec::parse(&base(kind, extra), "q.toml").unwrap_err()
        );
        assert!(e.contains("slices") && e.contains(want), "{e}");
    }
}

/// A study of one nginx and one workload with `lines` added to it.
fn with_workload(tls: bool, lines: &str) -> String {
    format!(
        "name = \"t\"\ntls = {tls}\n[corpus]\nfiles = [{{ path = \"a.txt\", size = 10 }}]\n\
         [[servers]]\nkind = \"nginx\"\n[[workloads]]\nname = \"w\"\nkind = \"users\"\ntarget = \"/a.txt\"\nusers = 2\n{lines}"
    )
}

#[test]
fn protocol_defaults_to_h1_and_reads_h2_and_h3() {
    use spec::Protocol;
    let s = spec::parse(&with_workload(false, ""), "p.toml").unwrap();
    assert_eq!(s.workloads[0].protocol, Protocol::H1);
    let s = spec::parse(&with_workload(false, "protocol = \"h2\"\n"), "p.toml").unwrap();
    assert_eq!(s.workloads[0].protocol, Protocol::H2);
    let s = spec::parse(&with_workload(true, "protocol = \"h3\"\n"), "p.toml").unwrap();
    assert_eq!(s.workloads[0].protocol, Protocol::H3);
    assert_eq!(
        Protocol::ALL.map(Protocol::as_str),
        ["h1", "h2", "h3"],
        "the spellings of study files"
    );
}

#[test]
fn protocol_errors_say_why() {
    let e = err_of(&with_workload(false, "protocol = \"http2\"\n"));
    assert!(e.contains("http2") && e.contains("h2"), "{e}");
    let e = err_of(&with_workload(false, "protocol = \"h2\"\npipeline = 4\n"));
    assert!(e.contains("cannot pipeline"), "{e}");
    assert!(e.contains("concurrent streams"), "{e}");
    assert!(e.contains("workload 'w'"), "{e}");
    let e = err_of(&with_workload(
        false,
        "protocol = \"h2\"\nvary = { param = \"pipeline\", values = [1, 8] }\n",
    ));
    assert!(e.contains("vary pipeline"), "{e}");
    let e = err_of(&with_workload(false, "protocol = \"h3\"\n"));
    assert!(e.contains("needs HTTPS") && e.contains("tls = true"), "{e}");
    let idle = "name = \"t\"\n[corpus]\nfiles = [{ path = \"a.txt\", size = 10 }]\n[[servers]]\nkind = \"nginx\"\n\
                [[workloads]]\nname = \"w\"\nkind = \"idle\"\ntarget = \"/a.txt\"\nidle_send = \"partial\"\nprotocol = \"h2\"\n";
    let e = err_of(idle);
    assert!(e.contains("idle_send = \"partial\""), "{e}");
    // Pipelining stays an HTTP/1.1 matter.
    assert!(spec::parse(&with_workload(false, "pipeline = 4\n"), "p.toml").is_ok());
    // Streams are HTTP/2 and HTTP/3's.
    let e = err_of(&with_workload(false, "streams = 20\n"));
    assert!(
        e.contains("needs protocol") && e.contains("pipeline = 20"),
        "{e}"
    );
    let e = err_of(&with_workload(false, "protocol = \"h2\"\nstreams = 0\n"));
    assert!(e.contains("streams must be at least 1"), "{e}");
    let e = err_of(&with_workload(false, "protocol = \"h2\"\nstreams = 5000\n"));
    assert!(e.contains("more than 1000"), "{e}");
    let s = spec::parse(
        &with_workload(false, "protocol = \"h2\"\nstreams = 20\n"),
        "p.toml",
    )
    .unwrap();
    assert_eq!(s.workloads[0].streams, Some(20));
    let plan =
        httplab_study::runner::describe_plan(&s, &httplab_study::runner::plan(&s, false, None));
    assert!(
        plan.contains("20 streams in flight per connection"),
        "{plan}"
    );
}

#[test]
fn caddy_is_a_peer_kind() {
    let text = "name = \"t\"\n[corpus]\nfiles = [{ path = \"a.txt\", size = 10 }]\n[[servers]]\nkind = \"caddy\"\nworkers = 2\nextra_config = \"encode gzip\"\nkeep_alive = false\n\
                [[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/a.txt\"\n";
    let s = spec::parse(text, "c.toml").unwrap();
    assert_eq!(s.servers[0].kind.as_str(), "caddy");
    assert_eq!(spec::expand_servers(&s)[0].name, "caddy");
    let e = err_of(&text.replace("keep_alive = false", "sendfile = false"));
    assert!(e.contains("sendfile"), "{e}");
}

#[test]
fn the_plan_lists_who_does_not_speak_h2() {
    let text = "name = \"t\"\n[corpus]\nfiles = [{ path = \"a.txt\", size = 10 }]\n\
                [[servers]]\nkind = \"httplab\"\n[[servers]]\nkind = \"apache\"\nmpm = \"prefork\"\n\
                [[workloads]]\nname = \"w\"\nkind = \"users\"\ntarget = \"/a.txt\"\nusers = 2\nprotocol = \"h2\"\n";
    let s = spec::parse(text, "p.toml").unwrap();
    let plan = runner::describe_plan(&s, &runner::plan(&s, false, None));
    assert!(
        plan.contains("over HTTP/2 (h2c by prior knowledge)"),
        "{plan}"
    );
    assert!(!plan.contains("httplab event does not speak h2"), "{plan}");
    assert!(
        plan.contains("apache prefork does not speak h2: Apache's prefork MPM"),
        "{plan}"
    );
}

#[test]
fn metrics_are_the_registrys_words_and_the_error_rate_judges_no_workload() {
    let file = |metric: &str| {
        format!(
            "name = \"m\"\n[[servers]]\nkind = \"httplab\"\n[[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/\"\nrate = 10\nmetric = \"{metric}\"\n"
        )
    };
    for (word, key) in [
        ("p50_ms", "p50_ms"),
        ("p99", "p99_ms"),
        ("p99.9", "p999_ms"),
    ] {
        let s = spec::parse(&file(word), "m.toml").unwrap_or_else(|e| panic!("{word}: {e:#}"));
        assert_eq!(runner_metric(&s), key, "{word}");
    }
    for counted in ["error_pct", "errors"] {
        let e = format!("{:#}", spec::parse(&file(counted), "m.toml").unwrap_err());
        assert!(e.contains("compared as counts"), "{counted}: {e}");
    }
    let e = format!(
        "{:#}",
        spec::parse(&file("nonsense"), "m.toml").unwrap_err()
    );
    assert!(
        e.contains("unknown metric `nonsense`") && e.contains("reply_rate"),
        "{e}"
    );
}

fn runner_metric(s: &spec::StudyFile) -> &'static str {
    httplab_study::rounds::primary_metric(s, &s.workloads[0]).key()
}
