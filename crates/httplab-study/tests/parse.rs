//! The study-file parser: every built-in parses; bad files name the line.

use httplab_study::spec::{self, Size};
use httplab_study::{builtin, runner, BUILTINS};

#[test]
fn every_builtin_parses_and_plans() {
    for (name, _, text) in BUILTINS {
        let s = spec::parse(text, name).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert_eq!(s.name, *name);
        assert!(runner::count_runs(&s) > 0, "{name} plans no runs");
        let plan = runner::describe_plan(&s);
        assert!(plan.contains("total:"), "{plan}");
    }
    for n in [
        "default",
        "architectures",
        "file-sizes",
        "capacity",
        "worker-threads",
        "idle",
    ] {
        assert!(builtin(n).is_some(), "missing built-in {n}");
    }
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
    assert_eq!(s.protocol.window_s, 1.0);
    assert_eq!(s.protocol.max_repetitions, 4);
    assert!(!s.questions.is_empty());
    let bad = |proto: &str| {
        let text = format!(
            "name = \"x\"\n[protocol]\n{proto}\n[[servers]]\nkind = \"nginx\"\n[[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/\"\n"
        );
        format!("{:#}", spec::parse(&text, "p.toml").unwrap_err())
    };
    assert!(bad("min_repetitions = 1").contains("confidence interval"));
    assert!(bad("precision = 2").contains("precision"));
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
        cli(&["default", "--dry-run", "--precision", "0"]).unwrap_err()
    )
    .contains("fraction"));
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
