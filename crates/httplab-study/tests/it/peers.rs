//! Interop: each peer configuration httplab writes actually starts, serves a
//! generated file byte for byte, and stops. A missing peer fails under CI=true
//! (CI installs them) and is skipped with a reason otherwise.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use httplab_study::{corpus, servers, spec};

fn ci() -> bool {
    httplab_skip::under_ci()
}

fn get(addr: std::net::SocketAddr, path: &str) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).expect("read");
    let split = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("head end")
        + 4;
    let head = String::from_utf8_lossy(&buf[..split]).to_string();
    let code = head[9..12].parse().unwrap();
    (code, buf[split..].to_vec())
}

fn check_peer(server_toml: &str) {
    let text = format!(
        "name = \"peer\"\n[corpus]\nfiles = [{{ path = \"a.txt\", size = 87 }}, {{ path = \"dir/b.bin\", size = 70000 }}]\n\
         [[servers]]\n{server_toml}\n[[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/a.txt\"\n"
    );
    let study = spec::parse(&text, "peer.toml").unwrap();
    let inst = spec::expand_servers(&study).remove(0);
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let idx = corpus::generate(&study.corpus, &root).unwrap();
    let ctx = servers::Context {
        root: root.clone(),
        work: dir.path().join("work"),
        httplab_exe: None,
        probe_path: idx.probe_path(),
        tls: None,
        http2: false,
        http3: false,
    };
    let port = servers::free_port().unwrap();
    let plan = match servers::plan(&inst, &ctx, port) {
        Ok(p) => p,
        Err(u) => {
            let why = u.reason();
            if ci() {
                panic!(
                    "{}: {why} (CI=true: .ci/run should have installed it)",
                    inst.name
                );
            }
            httplab_skip::skipped(&format!("{}: {why}", inst.name));
            return;
        }
    };
    let cores = servers::allowed_cores();
    let mut r = servers::start(&plan, &ctx.work, &cores[..1], Vec::new())
        .unwrap_or_else(|e| panic!("{} did not start: {e:#}", inst.name));
    for path in ["/a.txt", "/dir/b.bin"] {
        let (code, body) = get(r.addr, path);
        assert_eq!(code, 200, "{} GET {path}", inst.name);
        let exp = &idx.files[path];
        assert_eq!(
            body.len() as u64,
            exp.len(),
            "{} GET {path} length",
            inst.name
        );
        assert!(
            exp.matches(0, &body),
            "{} GET {path} body differs",
            inst.name
        );
    }
    let (code, _) = get(r.addr, "/missing.txt");
    assert_eq!(code, 404, "{} 404", inst.name);
    let s = httplab_study::sampler::sample(r.pid, 0.0);
    assert!(s.processes >= 1 && s.rss_bytes > 0, "{}: {s:?}", inst.name);
    let v = servers::version(&inst, None);
    assert!(
        v.as_deref().is_some_and(|v| !v.is_empty()),
        "{}: no version",
        inst.name
    );
    let pid = r.pid;
    r.stop();
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat")).is_err(),
        "{} still running after stop",
        inst.name
    );
}

#[test]
fn nginx_serves_files() {
    let _turn = httplab_skip::serial::shared("peers");
    check_peer("kind = \"nginx\"\nworkers = 2");
}

#[test]
fn apache_event_serves_files() {
    let _turn = httplab_skip::serial::shared("peers");
    check_peer("kind = \"apache\"\nmpm = \"event\"");
}

#[test]
fn apache_worker_serves_files() {
    let _turn = httplab_skip::serial::shared("peers");
    check_peer("kind = \"apache\"\nmpm = \"worker\"\nworkers = 1\nthreads_per_child = 8");
}

#[test]
fn apache_prefork_serves_files() {
    let _turn = httplab_skip::serial::shared("peers");
    check_peer("kind = \"apache\"\nmpm = \"prefork\"\nworkers = 3");
}

#[test]
fn lighttpd_serves_files() {
    let _turn = httplab_skip::serial::shared("peers");
    check_peer("kind = \"lighttpd\"");
}

#[test]
fn h2o_serves_files() {
    let _turn = httplab_skip::serial::shared("peers");
    check_peer("kind = \"h2o\"\nworkers = 2");
}

#[test]
fn caddy_serves_files() {
    let _turn = httplab_skip::serial::shared("peers");
    check_peer("kind = \"caddy\"\nworkers = 2");
}

#[test]
fn missing_peer_is_not_installed_with_package() {
    let _turn = httplab_skip::serial::shared("peers");
    let text = "name = \"p\"\n[[servers]]\nkind = \"command\"\ncommand = [\"/nonexistent/httpd\"]\n[[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/x\"\n";
    let study = spec::parse(text, "p.toml").unwrap();
    let inst = spec::expand_servers(&study).remove(0);
    let ctx = servers::Context {
        root: "/tmp".into(),
        work: "/tmp".into(),
        httplab_exe: None,
        probe_path: "/".into(),
        tls: None,
        http2: false,
        http3: false,
    };
    let e = servers::plan(&inst, &ctx, 1).unwrap_err();
    assert!(e.reason().contains("not found"), "{}", e.reason());
    let u = servers::Unavailable::NotInstalled {
        package: "h2o".into(),
    };
    assert_eq!(u.reason(), "not installed (Debian package: h2o)");
}
