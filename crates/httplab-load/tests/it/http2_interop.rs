//! `httplab load --http2` against real HTTP/2 servers: nginx over TLS, and
//! h2o, Apache (mod_http2, event MPM) and lighttpd (its built-in HTTP/2)
//! over TLS and h2c, with stream counts equal to h2load's on the same
//! server, and the documented error for a TLS server without h2. A missing
//! peer makes a test fail under CI=true and skip (with the reason printed)
//! otherwise.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use common::{ci, is_root, wait_listening, which};
use httplab_model::RunResult;

fn need(bin: &str) -> Option<PathBuf> {
    match which(bin) {
        Some(p) => Some(p),
        None if ci() => panic!("{bin} is required under CI=true but was not found"),
        None => {
            httplab_skip::skipped(&format!("{bin} not installed"));
            None
        }
    }
}

struct Cert {
    cert: PathBuf,
    key: PathBuf,
}

/// A work directory readable by a server that drops privileges, with a
/// self-signed certificate and a page.
fn workdir() -> (tempfile::TempDir, Cert) {
    let dir = tempfile::tempdir().expect("tempdir");
    set_mode(dir.path(), 0o755);
    let ck =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .expect("rcgen");
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    std::fs::write(&cert, ck.cert.pem()).unwrap();
    std::fs::write(&key, ck.signing_key.serialize_pem()).unwrap();
    let root = dir.path().join("www");
    std::fs::create_dir_all(&root).unwrap();
    let page: Vec<u8> = (0..4148).map(|i| b'a' + (i % 26) as u8).collect();
    std::fs::write(root.join("index.html"), page).unwrap();
    (dir, Cert { cert, key })
}

fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode));
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A peer process, stopped (SIGTERM, then waited for) when dropped; nginx's
/// master stops its workers on SIGTERM.
struct Peer {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for Peer {
    fn drop(&mut self) {
        common::stop_peer(&mut self.child);
    }
}

/// nginx's version as (major, minor, patch).
fn nginx_version(bin: &Path) -> (u32, u32, u32) {
    let out = Command::new(bin).arg("-v").output().expect("nginx -v");
    let text = String::from_utf8_lossy(&out.stderr).to_string();
    let v = text.split("nginx/").nth(1).unwrap_or("0.0.0");
    let mut it = v
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok());
    (
        it.next().unwrap_or(0),
        it.next().unwrap_or(0),
        it.next().unwrap_or(0),
    )
}

/// nginx with two TLS ports: `h2` speaks HTTP/2 (ALPN h2), `h1` only HTTP/1.1.
fn nginx() -> Option<(Peer, u16, u16)> {
    let bin = need("nginx")?;
    let (dir, c) = workdir();
    let (h2, h1) = (free_port(), free_port());
    let d = dir.path().display();
    let user = if is_root() { "user root root;\n" } else { "" };
    // `http2 on;` since nginx 1.25.1; `listen ... http2` before.
    let (listen_h2, h2_on) = if nginx_version(&bin) >= (1, 25, 1) {
        (format!("listen 127.0.0.1:{h2} ssl;"), "http2 on;")
    } else {
        (format!("listen 127.0.0.1:{h2} ssl http2;"), "")
    };
    let tls = format!(
        "ssl_certificate {}; ssl_certificate_key {}; ssl_protocols TLSv1.2 TLSv1.3;",
        c.cert.display(),
        c.key.display()
    );
    let conf = format!(
        "{user}worker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n\
         fastcgi_temp_path {d}/fcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
         keepalive_requests 100000;\n\
         server {{ {listen_h2} {h2_on} root {d}/www; {tls} }}\n\
         server {{ listen 127.0.0.1:{h1} ssl; root {d}/www; {tls} }}\n}}\n"
    );
    let child = common::spawn_nginx(&bin, dir.path(), &conf);
    let p = Peer { child, _dir: dir };
    wait_listening(h2, "nginx");
    wait_listening(h1, "nginx");
    Some((p, h2, h1))
}

/// h2o with a TLS port and a cleartext (h2c prior knowledge) port.
fn h2o() -> Option<(Peer, u16, u16)> {
    let bin = need("h2o")?;
    let (dir, c) = workdir();
    let (tls, clear) = (free_port(), free_port());
    let d = dir.path().display();
    let user = if is_root() { "user: root\n" } else { "" };
    let conf = format!(
        "{user}listen:\n  host: 127.0.0.1\n  port: {tls}\n  ssl:\n    certificate-file: {}\n    key-file: {}\n\
         listen:\n  host: 127.0.0.1\n  port: {clear}\n\
         hosts:\n  default:\n    paths:\n      /:\n        file.dir: {d}/www\n",
        c.cert.display(),
        c.key.display()
    );
    let conf_path = dir.path().join("h2o.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let child = Command::new(bin)
        .arg("-c")
        .arg(&conf_path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start h2o");
    let p = Peer { child, _dir: dir };
    wait_listening(tls, "h2o");
    wait_listening(clear, "h2o");
    Some((p, tls, clear))
}

/// Apache's module directory (Debian's layout), if Apache is installed.
fn apache_modules() -> Option<PathBuf> {
    let dir = PathBuf::from("/usr/lib/apache2/modules");
    dir.join("mod_http2.so").is_file().then_some(dir)
}

/// Apache with the event MPM and mod_http2: a TLS port (ALPN h2) and a
/// cleartext port (h2c by prior knowledge).
fn apache() -> Option<(Peer, u16, u16)> {
    let bin = need("apache2")?;
    let Some(mods) = apache_modules() else {
        if ci() {
            panic!("Apache's mod_http2 is required under CI=true but was not found");
        }
        httplab_skip::skipped("Apache's mod_http2 not installed");
        return None;
    };
    let (dir, c) = workdir();
    let (tls, clear) = (free_port(), free_port());
    let d = dir.path().display();
    let m = mods.display();
    // Apache refuses to serve as root; it drops to nobody, and the work
    // directory is world-readable for that.
    let user = if is_root() {
        "User nobody\nGroup nogroup\n"
    } else {
        ""
    };
    let conf = format!(
        "ServerRoot \"{d}\"\nServerName 127.0.0.1\n\
         LoadModule mpm_event_module {m}/mod_mpm_event.so\n\
         LoadModule authz_core_module {m}/mod_authz_core.so\n\
         LoadModule mime_module {m}/mod_mime.so\n\
         LoadModule socache_shmcb_module {m}/mod_socache_shmcb.so\n\
         LoadModule ssl_module {m}/mod_ssl.so\n\
         LoadModule http2_module {m}/mod_http2.so\n\
         {user}Listen 127.0.0.1:{tls}\nListen 127.0.0.1:{clear}\n\
         PidFile \"{d}/apache.pid\"\nDefaultRuntimeDir \"{d}\"\nMutex file:{d} default\n\
         ErrorLog \"{d}/error.log\"\nLogLevel warn\nTypesConfig \"{d}/mime.types\"\n\
         DocumentRoot \"{d}/www\"\n<Directory \"{d}/www\">\n  Require all granted\n</Directory>\n\
         StartServers 1\nServerLimit 1\nThreadsPerChild 25\nMaxRequestWorkers 25\n\
         Protocols h2c http/1.1\nH2Direct on\n\
         <VirtualHost 127.0.0.1:{tls}>\n  SSLEngine on\n  SSLCertificateFile \"{}\"\n\
           SSLCertificateKeyFile \"{}\"\n  Protocols h2 http/1.1\n</VirtualHost>\n",
        c.cert.display(),
        c.key.display()
    );
    std::fs::write(dir.path().join("apache.conf"), conf).unwrap();
    std::fs::write(dir.path().join("mime.types"), "text/html html\n").unwrap();
    let child = Command::new(bin)
        .arg("-d")
        .arg(dir.path())
        .arg("-f")
        .arg(dir.path().join("apache.conf"))
        .arg("-DFOREGROUND")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start apache2");
    let p = Peer { child, _dir: dir };
    wait_listening(tls, "apache2");
    wait_listening(clear, "apache2");
    Some((p, tls, clear))
}

/// True when lighttpd can load mod_openssl (Debian ships it apart).
fn lighttpd_has_tls() -> bool {
    [
        "/usr/lib/lighttpd/mod_openssl.so",
        "/usr/lib64/lighttpd/mod_openssl.so",
    ]
    .iter()
    .any(|p| Path::new(p).is_file())
}

/// lighttpd (HTTP/2 built in, on by default since 1.4.59): a TLS port and a
/// cleartext port.
fn lighttpd() -> Option<(Peer, u16, u16)> {
    let bin = need("lighttpd")?;
    if !lighttpd_has_tls() {
        if ci() {
            panic!("lighttpd's mod_openssl is required under CI=true but was not found");
        }
        httplab_skip::skipped("lighttpd's mod_openssl not installed");
        return None;
    }
    let (dir, c) = workdir();
    let (tls, clear) = (free_port(), free_port());
    let d = dir.path().display();
    let conf = format!(
        "server.document-root = \"{d}/www\"\nserver.bind = \"127.0.0.1\"\nserver.port = {clear}\n\
         server.pid-file = \"{d}/lighttpd.pid\"\nserver.errorlog = \"{d}/error.log\"\n\
         server.feature-flags = ( \"server.h2proto\" => \"enable\", \"server.h2c\" => \"enable\" )\n\
         mimetype.assign = ( \".html\" => \"text/html\" )\n\
         server.modules = ( \"mod_openssl\" )\n\
         $SERVER[\"socket\"] == \"127.0.0.1:{tls}\" {{\n  ssl.engine = \"enable\"\n\
           ssl.pemfile = \"{}\"\n  ssl.privkey = \"{}\"\n}}\n",
        c.cert.display(),
        c.key.display()
    );
    std::fs::write(dir.path().join("lighttpd.conf"), conf).unwrap();
    let child = Command::new(bin)
        .arg("-D")
        .arg("-f")
        .arg(dir.path().join("lighttpd.conf"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start lighttpd");
    let p = Peer { child, _dir: dir };
    wait_listening(tls, "lighttpd");
    wait_listening(clear, "lighttpd");
    Some((p, tls, clear))
}

/// (requests done, succeeded, 2xx) from h2load's report.
fn h2load(url: &str, n: u64, c: u64, m: u64) -> Option<(u64, u64, u64)> {
    let bin = need("h2load")?;
    let out = Command::new(bin)
        .args([
            "-n",
            &n.to_string(),
            "-c",
            &c.to_string(),
            "-m",
            &m.to_string(),
            url,
        ])
        .output()
        .expect("run h2load");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let nums = |prefix: &str| -> Vec<u64> {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(prefix))
            .unwrap_or_else(|| panic!("h2load printed no '{prefix}' line:\n{text}"));
        line.split(|c: char| !c.is_ascii_digit())
            .filter_map(|s| s.parse().ok())
            .collect()
    };
    // "requests: 200 total, 200 started, 200 done, 200 succeeded, 0 failed, ..."
    let r = nums("requests:");
    // "status codes: 200 2xx, 0 3xx, 0 4xx, 0 5xx"
    let s = nums("status codes:");
    Some((r[2], r[3], s[0]))
}

fn load(args: &str) -> RunResult {
    let spec = httplab_load::parse_args(args.split_whitespace()).expect("parse args");
    httplab_load::run(&spec, false).expect("run")
}

/// `httplab load --http2` and h2load, N requests over C connections with M
/// streams each, against `url`; the counts must agree.
fn compare(url: &str, tls: bool, n: u64, c: u64, m: u64) {
    let Some((done, ok, s2xx)) = h2load(url, n, c, m) else {
        return;
    };
    assert_eq!((done, ok, s2xx), (n, n, n), "h2load against {url}");
    let insecure = if tls { " --insecure" } else { "" };
    let r = load(&format!(
        "{url}{insecure} --http2 --users {c} --requests-per-user {} --max-concurrent-streams {m} --timeout 10",
        n / c
    ));
    let h = r.http2.as_ref().expect("http2 block");
    assert_eq!(h.streams_completed, done, "{url}: {h:?}");
    assert_eq!(h.streams_started, n, "{url}: {h:?}");
    assert_eq!(r.totals.replies, ok, "{url}");
    assert_eq!(r.reply.status.success, s2xx, "{url}");
    assert_eq!(r.totals.connections, c, "{url}");
    assert_eq!(h.connections, c, "{url}");
    assert_eq!(r.errors.total, 0, "{url}: {:?}", r.errors);
    assert_eq!(h.cleartext, !tls);
    if tls {
        let t = r.tls.as_ref().expect("tls block");
        assert_eq!(t.alpn.get("h2"), Some(&c), "{t:?}");
    }
    // Open loop too: 20 connection arrivals at 200/s, 5 streams each.
    let r = load(&format!(
        "{url}{insecure} --http2 --rate 200 --num-conns 20 --num-calls 5 --max-concurrent-streams {m} --timeout 10"
    ));
    let h = r.http2.as_ref().expect("http2 block");
    assert_eq!(h.streams_completed, 100, "{url}: {h:?}");
    assert_eq!(r.totals.connections, 20, "{url}");
}

#[test]
fn nginx_over_tls_matches_h2load_and_names_a_server_without_h2() {
    let Some((_ng, h2, h1)) = nginx() else { return };
    compare(
        &format!("https://127.0.0.1:{h2}/index.html"),
        true,
        200,
        4,
        8,
    );
    // A TLS port without HTTP/2: ALPN settles on http/1.1.
    let spec = httplab_load::parse_args(
        format!("https://127.0.0.1:{h1}/index.html --insecure --http2 --num-conns 2 --timeout 5")
            .split_whitespace(),
    )
    .unwrap();
    let e = format!("{:#}", httplab_load::run(&spec, false).unwrap_err());
    assert!(e.contains("server refused h2: ALPN chose http/1.1"), "{e}");
}

#[test]
fn h2o_over_tls_and_h2c_matches_h2load() {
    let Some((_p, tls, clear)) = h2o() else {
        return;
    };
    compare(
        &format!("https://127.0.0.1:{tls}/index.html"),
        true,
        200,
        4,
        8,
    );
    compare(
        &format!("http://127.0.0.1:{clear}/index.html"),
        false,
        200,
        2,
        16,
    );
}

#[test]
fn apache_over_tls_and_h2c_matches_h2load() {
    let Some((_p, tls, clear)) = apache() else {
        return;
    };
    compare(
        &format!("https://127.0.0.1:{tls}/index.html"),
        true,
        200,
        4,
        8,
    );
    compare(
        &format!("http://127.0.0.1:{clear}/index.html"),
        false,
        200,
        2,
        16,
    );
}

#[test]
fn lighttpd_over_tls_and_h2c_matches_h2load() {
    let Some((_p, tls, clear)) = lighttpd() else {
        return;
    };
    compare(
        &format!("https://127.0.0.1:{tls}/index.html"),
        true,
        200,
        4,
        8,
    );
    compare(
        &format!("http://127.0.0.1:{clear}/index.html"),
        false,
        200,
        2,
        16,
    );
}
