//! Servers under test: writes each peer's configuration, starts it pinned in
//! its own process group on a free loopback port, waits until it answers,
//! and stops it by PID afterwards. Which HTTP versions each can speak here
//! is [`speaks`]; a study with `h2` workloads configures the peers for
//! HTTP/2 next to HTTP/1.1; Caddy over TLS serves HTTP/3 too, on the same
//! port number over UDP.

use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};

use crate::spec::{Mode, Mpm, Protocol, ServerInstance, ServerKind, ServerSpec};

/// Where a peer lives and which Debian package provides it.
pub struct PeerBinary {
    /// Candidate paths, first existing wins; then `$PATH` lookup of `name`.
    pub paths: &'static [&'static str],
    /// Program name for a `$PATH` search.
    pub name: &'static str,
    /// Debian package.
    pub package: &'static str,
}

/// Whether a kind of server speaks a protocol here: always, never (why), or
/// as a check of this installation says (its function).
#[derive(Clone, Copy)]
enum Speaks {
    Yes,
    No(&'static str),
    Check(fn(&ServerInstance) -> std::result::Result<(), String>),
}

/// Everything the study knows about one kind of server, in one place: its
/// binary and package, how its launch plan is written, which protocols it
/// speaks, and how it tells its version.
struct Kind {
    /// The peer's binary (None: httplab itself and command servers).
    binary: Option<PeerBinary>,
    /// Writes its launch plan.
    plan: fn(Inputs, &mut LaunchPlan) -> std::result::Result<(), Unavailable>,
    /// HTTP/2 (over TLS by ALPN, in cleartext by prior knowledge).
    h2: Speaks,
    /// HTTP/3 (with TLS; without TLS nobody does).
    h3: Speaks,
    /// The argument that makes its binary print its version.
    version_flag: &'static str,
}

/// The one table of server kinds.
fn kind(k: ServerKind) -> Kind {
    const HTTPLAB_H1: &str =
        "httplab serve speaks HTTP/1.1 only (its TLS offers ALPN http/1.1; no HTTP/2 framing)";
    match k {
        ServerKind::Httplab => Kind {
            binary: None,
            plan: plan_httplab,
            h2: Speaks::No(HTTPLAB_H1),
            h3: Speaks::No("httplab serve speaks HTTP/1.1 only (no QUIC listener, no HTTP/3 framing)"),
            version_flag: "--version",
        },
        ServerKind::Nginx => Kind {
            binary: Some(PeerBinary {
                paths: &["/usr/sbin/nginx"],
                name: "nginx",
                package: "nginx",
            }),
            plan: plan_nginx,
            h2: Speaks::Yes,
            h3: Speaks::No("the study's nginx has no QUIC (Debian's nginx 1.22 is built without the HTTP/3 module, which came with 1.25)"),
            version_flag: "-v",
        },
        ServerKind::Apache => Kind {
            binary: Some(PeerBinary {
                paths: &["/usr/sbin/apache2", "/usr/sbin/httpd"],
                name: "apache2",
                package: "apache2",
            }),
            plan: plan_apache,
            h2: Speaks::Check(|inst| apache_h2(inst.spec.mpm.unwrap_or_default())),
            h3: Speaks::No("Apache httpd has no HTTP/3 (no QUIC module)"),
            version_flag: "-v",
        },
        ServerKind::Lighttpd => Kind {
            binary: Some(PeerBinary {
                paths: &["/usr/sbin/lighttpd"],
                name: "lighttpd",
                package: "lighttpd",
            }),
            plan: plan_lighttpd,
            h2: Speaks::Check(|_| lighttpd_h2()),
            h3: Speaks::No("lighttpd has no HTTP/3 (no QUIC support)"),
            version_flag: "-v",
        },
        ServerKind::H2o => Kind {
            binary: Some(PeerBinary {
                paths: &["/usr/bin/h2o", "/usr/sbin/h2o"],
                name: "h2o",
                package: "h2o",
            }),
            plan: plan_h2o,
            h2: Speaks::Yes,
            h3: Speaks::No("the study's h2o has no QUIC (Debian's h2o 2.2 predates its HTTP/3 support)"),
            version_flag: "--version",
        },
        ServerKind::Caddy => Kind {
            binary: Some(PeerBinary {
                paths: &["/usr/bin/caddy", "/usr/sbin/caddy"],
                name: "caddy",
                package: "caddy",
            }),
            plan: plan_caddy,
            h2: Speaks::Yes,
            h3: Speaks::Yes,
            version_flag: "version",
        },
        // A command server is taken at its word: its command is the user's.
        ServerKind::Command => Kind {
            binary: None,
            plan: plan_command,
            h2: Speaks::Yes,
            h3: Speaks::Yes,
            version_flag: "--version",
        },
    }
}

/// The binary and package of a peer kind (None for httplab and commands).
pub fn peer_binary(k: ServerKind) -> Option<PeerBinary> {
    kind(k).binary
}

/// Finds `name` on `$PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Environment variable: a `:`-separated list of directories; when set,
/// peers are looked for there only (e.g. servers built from source).
pub const ENV_PEER_DIRS: &str = "HTTPLAB_PEER_DIRS";

fn find_peer(b: &PeerBinary) -> Option<PathBuf> {
    if let Some(dirs) = std::env::var_os(ENV_PEER_DIRS) {
        return std::env::split_paths(&dirs)
            .map(|d| d.join(b.name))
            .find(|p| p.is_file());
    }
    b.paths
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .or_else(|| which(b.name))
}

/// Apache's module directory (Debian layout first).
fn apache_modules() -> Option<PathBuf> {
    [
        "/usr/lib/apache2/modules",
        "/usr/lib64/httpd/modules",
        "/usr/lib/httpd/modules",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.join("mod_authz_core.so").is_file())
}

/// lighttpd's module directories (Debian layout first).
const LIGHTTPD_MODULE_DIRS: &[&str] = &[
    "/usr/lib/lighttpd",
    "/usr/lib64/lighttpd",
    "/usr/local/lib/lighttpd",
    "/usr/local/lib64/lighttpd",
];

/// Whether lighttpd can load its TLS module: false only when a module
/// directory exists here and holds no `mod_openssl.so` (a lighttpd built
/// elsewhere, e.g. under `HTTPLAB_PEER_DIRS`, is given the benefit of the
/// doubt: its start-up error says so if it cannot).
fn lighttpd_has_tls() -> bool {
    let dirs: Vec<PathBuf> = LIGHTTPD_MODULE_DIRS
        .iter()
        .map(PathBuf::from)
        .filter(|d| d.is_dir())
        .collect();
    dirs.is_empty() || dirs.iter().any(|d| d.join("mod_openssl.so").is_file())
}

/// Why a server cannot run here.
#[derive(Debug, Clone)]
pub enum Unavailable {
    /// The peer binary is missing.
    NotInstalled {
        /// Debian package to install.
        package: String,
    },
    /// Something else (e.g. the httplab binary cannot be found).
    Other(String),
    /// The server is installed but cannot serve HTTPS here (a study over
    /// TLS): its TLS module is missing.
    NoTls {
        /// The missing module.
        module: String,
        /// Debian package that provides it.
        package: String,
    },
}

impl Unavailable {
    /// Text for the report's reason column.
    pub fn reason(&self) -> String {
        match self {
            Unavailable::NotInstalled { package } => {
                format!("not installed (Debian package: {package})")
            }
            Unavailable::Other(s) => s.clone(),
            Unavailable::NoTls { module, package } => {
                format!("cannot serve HTTPS here: {module} is missing (Debian package: {package})")
            }
        }
    }
}

/// Everything needed to start one server.
#[derive(Debug, Clone)]
pub struct LaunchPlan {
    /// Report label.
    pub name: String,
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
    /// Configuration files to write: (file name in the work dir, content).
    pub files: Vec<(String, String)>,
    /// Error log to show when it fails (relative to the work dir).
    pub error_log: Option<String>,
    /// Port it will listen on.
    pub port: u16,
    /// Readiness probe path.
    pub ready_path: String,
    /// Readiness deadline.
    pub ready_timeout: Duration,
    /// Serves HTTPS: the readiness probe speaks TLS and trusts this
    /// certificate (PEM) only.
    pub tls_ca: Option<PathBuf>,
    /// A second port for h2c by prior knowledge, where the server cannot
    /// serve it next to HTTP/1.1 on `port` (nginx before 1.25).
    pub h2c_port: Option<u16>,
    /// Working directory when not the server's work dir: a `command`
    /// server runs where `httplab study` was started, so that its command
    /// line works as typed in that shell (`./my-server`, `python3 srv.py`).
    pub cwd: Option<PathBuf>,
}

/// Inputs shared by every server of a study.
#[derive(Debug, Clone)]
pub struct Context {
    /// Document root.
    pub root: PathBuf,
    /// Per-server working directory (configs, pid files, logs).
    pub work: PathBuf,
    /// The httplab binary (for `kind = "httplab"`).
    pub httplab_exe: Option<PathBuf>,
    /// Default readiness path.
    pub probe_path: String,
    /// Serve HTTPS with this certificate and key (a study over TLS).
    pub tls: Option<crate::execute::tls::CertFiles>,
    /// Some workload speaks HTTP/2: the peers are configured for it (h2 by
    /// ALPN over TLS, h2c by prior knowledge in cleartext) next to HTTP/1.1.
    pub http2: bool,
}

/// Picks a free loopback port (the kernel's choice; released before use),
/// free for UDP too: Caddy serves HTTP/3 on the same port number as HTTPS.
pub fn free_port() -> Result<u16> {
    let mut last = None;
    for _ in 0..32 {
        let l =
            TcpListener::bind("127.0.0.1:0").context("binding 127.0.0.1:0 to find a free port")?;
        let port = l.local_addr()?.port();
        match UdpSocket::bind(("127.0.0.1", port)) {
            Ok(_) => return Ok(port),
            Err(e) => last = Some(e),
        }
    }
    let why = last.map_or_else(String::new, |e| format!(": {e}"));
    bail!("no loopback port free for both TCP and UDP after 32 tries{why}")
}

fn is_root() -> bool {
    httplab_sys::process::is_root()
}

fn subst(s: &str, port: u16, ctx: &Context, workers: u32) -> String {
    let (cert, key) = match &ctx.tls {
        Some(t) => (
            t.cert.to_string_lossy().into_owned(),
            t.key.to_string_lossy().into_owned(),
        ),
        None => (String::new(), String::new()),
    };
    s.replace("{port}", &port.to_string())
        .replace("{root}", &ctx.root.to_string_lossy())
        .replace("{dir}", &ctx.work.to_string_lossy())
        .replace("{workers}", &workers.to_string())
        .replace("{cert}", &cert)
        .replace("{key}", &key)
        .replace("{scheme}", if ctx.tls.is_some() { "https" } else { "http" })
}

/// Builds the launch plan of one server (config text, argv), or says why it cannot run.
pub fn plan(
    inst: &ServerInstance,
    ctx: &Context,
    port: u16,
) -> std::result::Result<LaunchPlan, Unavailable> {
    let sv = &inst.spec;
    let root = ctx.root.to_string_lossy().into_owned();
    let dir = ctx.work.to_string_lossy().into_owned();
    let keep_alive = sv.keep_alive.unwrap_or(true);
    let sendfile = sv.sendfile.unwrap_or(true);
    let mut p = LaunchPlan {
        name: inst.name.clone(),
        argv: Vec::new(),
        env: Vec::new(),
        files: Vec::new(),
        error_log: Some("error.log".into()),
        port,
        ready_path: sv
            .ready_path
            .clone()
            .unwrap_or_else(|| ctx.probe_path.clone()),
        ready_timeout: Duration::from_secs_f64(
            sv.ready_timeout_s.unwrap_or(15.0).clamp(0.1, 600.0),
        ),
        tls_ca: ctx.tls.as_ref().map(|t| t.cert.clone()),
        h2c_port: None,
        cwd: None,
    };
    let tls = ctx.tls.as_ref().map(|t| {
        (
            t.cert.to_string_lossy().into_owned(),
            t.key.to_string_lossy().into_owned(),
        )
    });
    let bin = match peer_binary(sv.kind) {
        Some(b) => match find_peer(&b) {
            Some(path) => Some(path.to_string_lossy().into_owned()),
            None => {
                return Err(Unavailable::NotInstalled {
                    package: b.package.to_string(),
                })
            }
        },
        None => None,
    };
    let bin = bin.unwrap_or_default();
    let i = Inputs {
        inst,
        sv,
        ctx,
        port,
        root,
        dir,
        keep_alive,
        sendfile,
        tls,
        bin,
    };
    (kind(sv.kind).plan)(i, &mut p)?;
    Ok(p)
}

/// What every kind's launch plan is written from.
struct Inputs<'a> {
    inst: &'a ServerInstance,
    sv: &'a ServerSpec,
    ctx: &'a Context,
    port: u16,
    root: String,
    dir: String,
    keep_alive: bool,
    sendfile: bool,
    /// Certificate and key files, over TLS.
    tls: Option<(String, String)>,
    /// The peer's binary ("" for httplab and commands).
    bin: String,
}

/// `httplab serve` with the study's model, workers and keep-alive.
fn plan_httplab(i: Inputs, p: &mut LaunchPlan) -> std::result::Result<(), Unavailable> {
    let Inputs {
        inst,
        sv,
        ctx,
        port,
        root,
        keep_alive,
        tls,
        ..
    } = i;
    let exe = ctx.httplab_exe.as_ref().ok_or_else(|| {
        Unavailable::Other(
            "httplab binary not found (run inside `httplab study`, or set HTTPLAB_BIN)".into(),
        )
    })?;
    let model = sv.model.unwrap_or_default();
    let mut argv = vec![
        exe.to_string_lossy().into_owned(),
        "serve".into(),
        "--root".into(),
        root.clone(),
        "--listen".into(),
        format!("127.0.0.1:{port}"),
        "--model".into(),
        model.word().into(),
        "--quiet".into(),
    ];
    if let Some(w) = inst.workers {
        argv.push(model.workers_flag().into());
        argv.push(w.to_string());
    }
    let (ka, pipe) = match sv.mode {
        Some(Mode::Close) => ("off", "off"),
        Some(Mode::KeepAlive) => ("on", "off"),
        Some(Mode::Pipeline) => ("on", "on"),
        None if !keep_alive => ("off", "off"),
        None => ("on", "on"),
    };
    argv.extend([
        "--keep-alive".to_string(),
        ka.into(),
        "--pipelining".into(),
        pipe.into(),
    ]);
    if let Some((cert, key)) = &tls {
        argv.extend([
            "--tls-cert".to_string(),
            cert.clone(),
            "--tls-key".into(),
            key.clone(),
        ]);
    }
    argv.extend(sv.args.iter().cloned());
    p.argv = argv;
    p.error_log = None;
    Ok(())
}

/// nginx: its configuration file and command line.
fn plan_nginx(i: Inputs, p: &mut LaunchPlan) -> std::result::Result<(), Unavailable> {
    let Inputs {
        inst,
        sv,
        port,
        root,
        dir,
        keep_alive,
        sendfile,
        tls,
        bin,
        ..
    } = i;
    let workers = inst.workers.unwrap_or(1);
    let user = if is_root() { "user root root;\n" } else { "" };
    let ka = if keep_alive {
        "keepalive_timeout 75s;\n  keepalive_requests 1000000;"
    } else {
        "keepalive_timeout 0;"
    };
    // Over TLS: both versions, a shared session cache (session IDs,
    // TLS 1.2) and tickets (on by default) for resumption.
    let h2 = i.ctx.http2;
    let (ssl, ssl_conf) = match &tls {
        Some((cert, key)) => (
            if h2 { " ssl http2" } else { " ssl" },
            format!(
                "    ssl_certificate {cert};\n    ssl_certificate_key {key};\n    ssl_protocols TLSv1.2 TLSv1.3;\n\
                 \x20   ssl_session_cache shared:httplab:10m;\n    ssl_session_timeout 1h;\n    ssl_session_tickets on;\n"
            ),
        ),
        None => ("", String::new()),
    };
    // h2c by prior knowledge: nginx 1.22's `listen … http2` without ssl
    // speaks only HTTP/2 on that port, so it gets a port of its own.
    let h2c = if h2 && tls.is_none() {
        let port2 = free_port().map_err(|e| Unavailable::Other(format!("{e:#}")))?;
        p.h2c_port = Some(port2);
        format!("    listen 127.0.0.1:{port2} http2 backlog=4096;\n")
    } else {
        String::new()
    };
    let conf = format!(
        "# written by httplab study\n\
         daemon off;\nmaster_process on;\n{user}worker_processes {workers};\n\
         worker_rlimit_nofile 65536;\npid {dir}/nginx.pid;\nerror_log {dir}/error.log warn;\n\
         events {{ worker_connections 16384; }}\n\
         http {{\n  access_log off;\n  sendfile {sf};\n  tcp_nopush off;\n  tcp_nodelay on;\n  {ka}\n\
         \x20 client_body_temp_path {dir}/client_body;\n  proxy_temp_path {dir}/proxy;\n\
         \x20 fastcgi_temp_path {dir}/fastcgi;\n  uwsgi_temp_path {dir}/uwsgi;\n  scgi_temp_path {dir}/scgi;\n\
         \x20 types {{ text/html html; text/plain txt; image/gif gif; image/jpeg jpg; }}\n\
         \x20 default_type application/octet-stream;\n\
         \x20 server {{\n    listen 127.0.0.1:{port}{ssl} backlog=4096;\n{h2c}    root {root};\n{ssl_conf}  }}\n{extra}}}\n",
        extra = indent(&sv.extra_config, "  "),
        sf = if sendfile { "on" } else { "off" },
    );
    p.files.push(("nginx.conf".into(), conf));
    p.argv = vec![
        bin,
        "-p".into(),
        format!("{dir}/"),
        "-c".into(),
        format!("{dir}/nginx.conf"),
        "-e".into(),
        format!("{dir}/error.log"),
    ];
    Ok(())
}

/// Apache with its MPM: its configuration file and command line.
fn plan_apache(i: Inputs, p: &mut LaunchPlan) -> std::result::Result<(), Unavailable> {
    let Inputs {
        inst,
        sv,
        port,
        root,
        dir,
        keep_alive,
        sendfile,
        tls,
        bin,
        ..
    } = i;
    let mpm = sv.mpm.unwrap_or_default();
    let Some(mods) = apache_modules() else {
        return Err(Unavailable::NotInstalled {
            package: "apache2".into(),
        });
    };
    let mods = mods.to_string_lossy();
    let workers = inst.workers.unwrap_or(if mpm.threaded() { 2 } else { 8 });
    let tpc = sv.threads_per_child.unwrap_or(25).max(1);
    let mpm_conf = if !mpm.threaded() {
        let max = workers.max(1);
        format!(
            "StartServers {w}\nMinSpareServers {w}\nMaxSpareServers {w}\nServerLimit {max}\nMaxRequestWorkers {max}\n",
            w = workers.max(1)
        )
    } else {
        format!(
            "StartServers {w}\nServerLimit {w}\nThreadLimit {tpc}\nThreadsPerChild {tpc}\nMinSpareThreads {tpc}\nMaxSpareThreads {mx}\nMaxRequestWorkers {mx}\n",
            w = workers.max(1),
            mx = workers.max(1) * tpc
        )
    };
    // Apache refuses to serve as root, so as root it switches to
    // nobody; the corpus is world-readable for that reason.
    let user = if is_root() {
        "User nobody\nGroup nogroup\n"
    } else {
        ""
    };
    let conf = format!(
        "# written by httplab study\nServerRoot \"{dir}\"\nServerName 127.0.0.1\n\
         LoadModule mpm_{m}_module {mods}/mod_mpm_{m}.so\n\
         LoadModule authz_core_module {mods}/mod_authz_core.so\n\
         LoadModule mime_module {mods}/mod_mime.so\n\
         {user}Listen 127.0.0.1:{port}\nListenBacklog 4096\nPidFile \"{dir}/apache.pid\"\n\
         DefaultRuntimeDir \"{dir}\"\nMutex file:{dir} default\n\
         ErrorLog \"{dir}/error.log\"\nLogLevel warn\nDocumentRoot \"{root}\"\n\
         <Directory \"{root}\">\n  Require all granted\n  AllowOverride None\n</Directory>\n\
         TypesConfig \"{dir}/mime.types\"\nAddType text/html .html\nAddType text/plain .txt\nAddType image/gif .gif\nAddType image/jpeg .jpg\n\
         KeepAlive {ka}\nMaxKeepAliveRequests 0\nKeepAliveTimeout 5\nEnableSendfile {sf}\n{mpm_conf}",
        m = mpm.word(),
        ka = if keep_alive { "On" } else { "Off" },
        sf = if sendfile { "On" } else { "Off" },
    );
    let conf = match &tls {
        None => conf,
        Some((cert, key)) => {
            let base = PathBuf::from(mods.as_ref());
            for m in ["mod_ssl.so", "mod_socache_shmcb.so"] {
                if !base.join(m).is_file() {
                    return Err(Unavailable::NoTls {
                        module: format!("Apache's {m}"),
                        package: "apache2".into(),
                    });
                }
            }
            // A server-wide SSL engine on the one listener, both
            // versions, and a shared session cache (session IDs);
            // tickets are on by default.
            format!(
                "{conf}LoadModule socache_shmcb_module {mods}/mod_socache_shmcb.so\n\
                 LoadModule ssl_module {mods}/mod_ssl.so\n\
                 SSLEngine on\nSSLCertificateFile \"{cert}\"\nSSLCertificateKeyFile \"{key}\"\n\
                 SSLProtocol -all +TLSv1.2 +TLSv1.3\n\
                 SSLSessionCache \"shmcb:{dir}/ssl_scache(512000)\"\nSSLSessionCacheTimeout 3600\n"
            )
        }
    };
    // HTTP/2 through mod_http2, with a threaded MPM only (prefork cannot:
    // see `speaks`): `h2` by ALPN over TLS, `h2c` by prior knowledge
    // (H2Direct) in cleartext, HTTP/1.1 next to it.
    let conf = if i.ctx.http2 && apache_h2(mpm).is_ok() {
        let (proto, direct) = if tls.is_some() {
            ("h2", "")
        } else {
            ("h2c", "H2Direct on\n")
        };
        format!(
            "{conf}LoadModule http2_module {mods}/mod_http2.so\nProtocols {proto} http/1.1\n{direct}"
        )
    } else {
        conf
    };
    let conf = format!("{conf}{}", indent(&sv.extra_config, ""));
    p.files.push(("apache.conf".into(), conf));
    p.files.push((
        "mime.types".into(),
        "# types are set with AddType in apache.conf\n".into(),
    ));
    p.argv = vec![
        bin,
        "-d".into(),
        dir.clone(),
        "-f".into(),
        format!("{dir}/apache.conf"),
        "-DFOREGROUND".into(),
    ];
    Ok(())
}

/// lighttpd: its configuration file and command line.
fn plan_lighttpd(i: Inputs, p: &mut LaunchPlan) -> std::result::Result<(), Unavailable> {
    let Inputs {
        inst,
        sv,
        port,
        root,
        dir,
        keep_alive,
        sendfile,
        tls,
        bin,
        ..
    } = i;
    let workers = inst.workers.unwrap_or(1);
    let mut conf = format!(
        "# written by httplab study\nserver.document-root = \"{root}\"\nserver.bind = \"127.0.0.1\"\n\
         server.port = {port}\nserver.pid-file = \"{dir}/lighttpd.pid\"\nserver.errorlog = \"{dir}/error.log\"\n\
         server.max-connections = 8192\nserver.max-fds = 16384\n\
         server.max-keep-alive-requests = {kar}\nserver.max-keep-alive-idle = 5\n\
         server.network-backend = \"{nb}\"\n\
         mimetype.assign = ( \".html\" => \"text/html\", \".txt\" => \"text/plain\", \".gif\" => \"image/gif\", \".jpg\" => \"image/jpeg\", \"\" => \"application/octet-stream\" )\n",
        kar = if keep_alive { 1_000_000 } else { 0 },
        nb = if sendfile { "sendfile" } else { "writev" },
    );
    if workers > 1 {
        conf.push_str(&format!("server.max-worker = {workers}\n"));
    }
    if let Some((cert, key)) = &tls {
        if !lighttpd_has_tls() {
            return Err(Unavailable::NoTls {
                module: "lighttpd's mod_openssl".into(),
                package: "lighttpd-mod-openssl".into(),
            });
        }
        conf.push_str(&format!(
            "server.modules = ( \"mod_openssl\" )\nssl.engine = \"enable\"\n\
             ssl.pemfile = \"{cert}\"\nssl.privkey = \"{key}\"\n\
             ssl.openssl.ssl-conf-cmd = ( \"MinProtocol\" => \"TLSv1.2\" )\n"
        ));
    }
    if i.ctx.http2 {
        // mod_h2 is built into lighttpd from 1.4.59 (see `speaks`): HTTP/2
        // by ALPN over TLS, h2c by prior knowledge in cleartext.
        conf.push_str(
            "server.feature-flags += ( \"server.h2proto\" => \"enable\", \"server.h2c\" => \"enable\" )\n",
        );
    }
    conf.push_str(&indent(&sv.extra_config, ""));
    p.files.push(("lighttpd.conf".into(), conf));
    p.argv = vec![
        bin,
        "-D".into(),
        "-f".into(),
        format!("{dir}/lighttpd.conf"),
    ];
    Ok(())
}

/// h2o: its configuration file and command line.
fn plan_h2o(i: Inputs, p: &mut LaunchPlan) -> std::result::Result<(), Unavailable> {
    let Inputs {
        inst,
        sv,
        port,
        root,
        dir,
        keep_alive,
        tls,
        bin,
        ..
    } = i;
    let workers = inst.workers.unwrap_or(1);
    let user = if is_root() { "user: root\n" } else { "" };
    let ssl = match &tls {
        Some((cert, key)) => format!(
            "  ssl:\n    certificate-file: {cert}\n    key-file: {key}\n    minimum-version: TLSv1.2\n"
        ),
        None => String::new(),
    };
    let conf = format!(
        "# written by httplab study\nlisten:\n  host: 127.0.0.1\n  port: {port}\n{ssl}\
         num-threads: {workers}\nmax-connections: 16384\n{user}pid-file: {dir}/h2o.pid\n\
         error-log: {dir}/error.log\nhttp1-request-timeout: 75\n\
         file.send-gzip: OFF\n\
         {extra}hosts:\n  default:\n    paths:\n      /:\n        file.dir: {root}\n{ka}",
        extra = indent(&sv.extra_config, ""),
        ka = if keep_alive {
            ""
        } else {
            "        header.set: \"Connection: close\"\n"
        },
    );
    p.files.push(("h2o.conf".into(), conf));
    p.argv = vec![bin, "-c".into(), format!("{dir}/h2o.conf")];
    Ok(())
}

/// Caddy: a Caddyfile serving the corpus as static files on the study's
/// port. No admin API, no automatic HTTPS (no redirects, no certificate
/// management: over TLS it serves the study's certificate), nothing written
/// outside its work dir (its data and config homes point there; its log goes
/// to stderr, kept in the work dir). HTTP/1.1 and HTTP/2 over TLS (h2 by
/// ALPN) with HTTP/3 on the same port; h1 and h2c by prior knowledge in
/// cleartext. `workers` is GOMAXPROCS.
fn plan_caddy(i: Inputs, p: &mut LaunchPlan) -> std::result::Result<(), Unavailable> {
    let Inputs {
        inst,
        sv,
        port,
        root,
        dir,
        keep_alive,
        tls,
        bin,
        ..
    } = i;
    p.files.push((
        "Caddyfile".into(),
        caddyfile(port, &root, tls.as_ref(), keep_alive, &sv.extra_config),
    ));
    p.argv = vec![
        bin,
        "run".into(),
        "--config".into(),
        format!("{dir}/Caddyfile"),
        "--adapter".into(),
        "caddyfile".into(),
    ];
    p.env = vec![
        ("HOME".into(), dir.clone()),
        ("XDG_DATA_HOME".into(), format!("{dir}/data")),
        ("XDG_CONFIG_HOME".into(), format!("{dir}/config")),
    ];
    if let Some(w) = inst.workers {
        p.env.push(("GOMAXPROCS".into(), w.max(1).to_string()));
    }
    p.error_log = None;
    Ok(())
}

/// The Caddyfile of a study's Caddy (see [`plan_caddy`]).
fn caddyfile(
    port: u16,
    root: &str,
    tls: Option<&(String, String)>,
    keep_alive: bool,
    extra: &str,
) -> String {
    let (scheme, protocols, tls_line) = match tls {
        Some((cert, key)) => (
            "https",
            "h1 h2 h3",
            format!("\ttls {cert} {key} {{\n\t\tprotocols tls1.2 tls1.3\n\t}}\n"),
        ),
        None => ("http", "h1 h2c", String::new()),
    };
    let close = if keep_alive {
        ""
    } else {
        "\theader Connection close\n"
    };
    format!(
        "# written by httplab study\n{{\n\tadmin off\n\tauto_https off\n\
         \tgrace_period 1s\n\tservers {{\n\t\tprotocols {protocols}\n\t}}\n\
         \tlog {{\n\t\toutput stderr\n\t\tlevel WARN\n\t}}\n}}\n\
         {scheme}://127.0.0.1:{port} {{\n\tbind 127.0.0.1\n{tls_line}\troot * {root}\n\tfile_server\n{close}{extra}}}\n",
        extra = indent(extra, "\t"),
    )
}

/// Why a server cannot speak `protocol` in this study (Ok: it can). Over
/// TLS h2 is negotiated by ALPN, in cleartext it is h2c by prior knowledge;
/// HTTP/3 needs TLS.
pub fn speaks(
    inst: &ServerInstance,
    protocol: Protocol,
    tls: bool,
) -> std::result::Result<(), String> {
    let k = kind(inst.spec.kind);
    let how = match protocol {
        Protocol::H1 => return Ok(()),
        Protocol::H2 => k.h2,
        Protocol::H3 if !tls => {
            return Err("HTTP/3 needs TLS (QUIC is always encrypted)".into());
        }
        Protocol::H3 => k.h3,
    };
    match how {
        Speaks::Yes => Ok(()),
        Speaks::No(why) => Err(why.into()),
        Speaks::Check(check) => check(inst),
    }
}

/// Whether this lighttpd serves HTTP/2 (mod_h2 is built in from 1.4.59).
fn lighttpd_h2() -> std::result::Result<(), String> {
    match lighttpd_version() {
        Some(v) if v < (1, 4, 59) => Err(format!(
            "lighttpd {}.{}.{} has no HTTP/2 (mod_h2 is built in from 1.4.59)",
            v.0, v.1, v.2
        )),
        _ => Ok(()),
    }
}

/// Whether this Apache can serve HTTP/2 with `mpm`.
fn apache_h2(mpm: Mpm) -> std::result::Result<(), String> {
    if !mpm.threaded() {
        return Err(
            "Apache's prefork MPM cannot serve HTTP/2 (mod_http2 needs a threaded MPM: event or worker)"
                .into(),
        );
    }
    match apache_modules() {
        Some(m) if !m.join("mod_http2.so").is_file() => {
            Err("Apache's mod_http2 is missing (Debian package: apache2)".into())
        }
        _ => Ok(()),
    }
}

/// lighttpd's version as (major, minor, patch), from `lighttpd -v`.
fn lighttpd_version() -> Option<(u32, u32, u32)> {
    let path = find_peer(&peer_binary(ServerKind::Lighttpd)?)?;
    let out = Command::new(path)
        .arg("-v")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    parse_lighttpd_version(&String::from_utf8_lossy(&out.stdout))
}

/// `lighttpd/1.4.69 (ssl) - a light and fast webserver` → (1, 4, 69).
fn parse_lighttpd_version(text: &str) -> Option<(u32, u32, u32)> {
    let v = text.trim().strip_prefix("lighttpd/")?;
    let v = v.split_whitespace().next()?;
    let mut it = v.split('.').map(|x| x.parse::<u32>().ok());
    Some((it.next()??, it.next()??, it.next()??))
}

/// Any command, `{port}`, `{root}` … filled in.
fn plan_command(i: Inputs, p: &mut LaunchPlan) -> std::result::Result<(), Unavailable> {
    let Inputs {
        inst,
        sv,
        ctx,
        port,
        ..
    } = i;
    let w = inst.workers.unwrap_or(1);
    p.argv = sv.command.iter().map(|a| subst(a, port, ctx, w)).collect();
    p.env = sv
        .env
        .iter()
        .map(|(k, v)| (k.clone(), subst(v, port, ctx, w)))
        .collect();
    p.error_log = None;
    p.cwd = std::env::current_dir().ok();
    let Some(prog) = p.argv.first() else {
        return Err(Unavailable::Other("empty command".into()));
    };
    if which(prog).is_none() {
        return Err(Unavailable::Other(format!("command '{prog}' not found")));
    }
    Ok(())
}

/// `text` with each line prefixed and a final newline ("" for empty text).
fn indent(text: &str, prefix: &str) -> String {
    text.lines().map(|l| format!("{prefix}{l}\n")).collect()
}

/// A started server.
pub struct Running {
    /// Report label.
    pub name: String,
    /// Root PID (also its process group).
    pub pid: i32,
    /// Listening address.
    pub addr: SocketAddr,
    child: Child,
    work: PathBuf,
    error_log: Option<String>,
    stopped: bool,
    /// HTTPS: the probe's client configuration (trusting the study's certificate).
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    /// HTTPS: the version and cipher suite the readiness probe's handshake chose.
    pub tls_seen: Option<String>,
    /// Where h2c by prior knowledge is served when not at `addr` (nginx).
    pub h2c_addr: Option<SocketAddr>,
}

impl Running {
    /// The address a client speaking `protocol` connects to.
    pub fn addr_for(&self, protocol: Protocol) -> SocketAddr {
        match (protocol, self.h2c_addr) {
            (Protocol::H2, Some(a)) => a,
            _ => self.addr,
        }
    }
}

/// Pins the calling thread to `cores` (no-op when empty).
pub fn pin_current_thread(cores: &[usize]) -> Result<()> {
    httplab_sys::cpu::pin_current_thread(cores)
        .map_err(|e| anyhow::anyhow!("sched_setaffinity({cores:?}): {e}"))
}

pub use crate::plan::pinning::allowed_cores;

/// Writes the plan's files and starts the server pinned to `cores`, in its own
/// process group, then waits (bounded) until it answers `ready_path`.
pub fn start(
    p: &LaunchPlan,
    work: &Path,
    cores: &[usize],
    cgroup_procs: Vec<std::ffi::CString>,
) -> Result<Running> {
    fs::create_dir_all(work).with_context(|| format!("creating {}", work.display()))?;
    crate::execute::corpus::make_world_readable(work)?;
    for (name, text) in &p.files {
        fs::write(work.join(name), text).with_context(|| format!("writing {name}"))?;
    }
    let out = fs::File::create(work.join("stdout.log"))?;
    let err = fs::File::create(work.join("stderr.log"))?;
    let Some((prog, args)) = p.argv.split_first() else {
        bail!("{}: empty command line", p.name);
    };
    let mut cmd = Command::new(prog);
    cmd.args(args)
        .current_dir(p.cwd.as_deref().unwrap_or(work))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    for (k, v) in &p.env {
        cmd.env(k, v);
    }
    // Between fork and exec the server dies with us (no orphans), joins its
    // cgroups (CPU accounting, CPU limit: `execute::cpu`), so every process it
    // will ever start is counted and limited, and is pinned to `cores`.
    httplab_sys::process::set_server_child_setup(
        &mut cmd,
        cgroup_procs,
        httplab_sys::cpu::CpuSet::new(cores.iter().copied()),
    );
    let tls = match &p.tls_ca {
        Some(ca) => Some(crate::execute::tls::client_config(ca)?),
        None => None,
    };
    let child = cmd
        .spawn()
        .with_context(|| format!("starting {}", p.argv.join(" ")))?;
    let mut r = Running {
        name: p.name.clone(),
        pid: child.id() as i32,
        addr: SocketAddr::from(([127, 0, 0, 1], p.port)),
        child,
        work: work.to_path_buf(),
        error_log: p.error_log.clone(),
        stopped: false,
        tls,
        tls_seen: None,
        h2c_addr: p
            .h2c_port
            .map(|port| SocketAddr::from(([127, 0, 0, 1], port))),
    };
    if let Err(e) = r.wait_ready(&p.ready_path, p.ready_timeout) {
        r.stop();
        return Err(e);
    }
    Ok(r)
}

/// One GET; Ok(status) when an HTTP response head arrived.
pub fn probe(addr: SocketAddr, path: &str, timeout: Duration) -> Result<u16> {
    let mut s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )?;
    let mut buf = [0u8; 64];
    let mut n = 0;
    while n < 12 {
        let k = s.read(&mut buf[n..])?;
        if k == 0 {
            break;
        }
        n += k;
    }
    crate::execute::http::status_code(&buf[..n])
}

impl Running {
    /// Polls until `path` answers 200, the process exits, or `timeout` passes.
    pub fn wait_ready(&mut self, path: &str, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let mut last;
        loop {
            if let Some(why) = self.exited() {
                bail!(
                    "{} exited at start-up ({why}){}",
                    self.name,
                    self.log_tail()
                );
            }
            let t = Duration::from_millis(500);
            let got = match &self.tls {
                Some(cfg) => {
                    crate::execute::tls::probe(self.addr, path, t, cfg).map(|(code, seen)| {
                        self.tls_seen = Some(seen);
                        code
                    })
                }
                None => probe(self.addr, path, t),
            };
            match got {
                Ok(200) => return Ok(()),
                Ok(code) => last = format!("GET {path} answered {code}"),
                Err(e) => last = format!("{e:#}"),
            }
            if Instant::now() >= deadline {
                bail!(
                    "{} did not answer GET {path} on {} within {:.1} s (last: {last}){}",
                    self.name,
                    self.addr,
                    timeout.as_secs_f64(),
                    self.log_tail()
                );
            }
            // Bounded readiness poll: the deadline above ends it.
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// `Some(description)` once the root process has exited.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(st)) => Some(describe_exit(st)),
            Ok(None) => None,
            Err(e) => Some(format!("cannot wait: {e}")),
        }
    }

    /// Last lines of the server's logs, for error messages.
    pub fn log_tail(&self) -> String {
        let mut names = vec!["stderr.log".to_string(), "stdout.log".to_string()];
        if let Some(e) = &self.error_log {
            names.push(e.clone());
        }
        let mut out = String::new();
        for n in names {
            if let Ok(t) = fs::read_to_string(self.work.join(&n)) {
                let lines: Vec<&str> = t.lines().filter(|l| !l.trim().is_empty()).collect();
                let tail = &lines[lines.len().saturating_sub(3)..];
                if !tail.is_empty() {
                    out.push_str(&format!("; {n}: {}", tail.join(" | ")));
                }
            }
        }
        out
    }

    /// Stops the server: SIGTERM to its process group, then SIGKILL after 5 s.
    pub fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        let pg = self.pid;
        // The process group this runner created for the server
        // (process_group(0) at spawn).
        let _ = httplab_sys::process::signal_group(pg, libc::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // Whatever is left of the group (workers, stuck children) goes now.
        // ESRCH when the group is already gone is fine.
        let _ = httplab_sys::process::signal_group(pg, libc::SIGKILL);
        let _ = self.child.wait();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

fn describe_exit(st: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(s)) => format!(
            "killed by signal {s}{}",
            if s == 9 { " (SIGKILL)" } else { "" }
        ),
        _ => "exited".into(),
    }
}

/// The version string of a server kind, e.g. "nginx/1.22.1" (None if unknown).
pub fn version(inst: &ServerInstance, httplab_exe: Option<&Path>) -> Option<String> {
    let (prog, args): (String, Vec<String>) = match inst.spec.kind {
        ServerKind::Httplab => {
            return Some(format!("httplab {}", env!("CARGO_PKG_VERSION")))
                .filter(|_| httplab_exe.is_some())
        }
        ServerKind::Command => {
            let v = &inst.spec.version_command;
            let (first, rest) = v.split_first()?;
            (first.clone(), rest.to_vec())
        }
        k => {
            let facts = kind(k);
            let path = find_peer(&facts.binary?)?;
            (
                path.to_string_lossy().into_owned(),
                vec![facts.version_flag.into()],
            )
        }
    };
    let out = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())?
        .trim_start_matches("nginx version: ")
        .trim_start_matches("Server version: ")
        .to_string();
    if inst.spec.kind == ServerKind::Caddy {
        // `caddy version` prints the bare version: "v2.6.2 h1:…" or "2.6.2".
        let v = line.split_whitespace().next().unwrap_or_default();
        return Some(format!("caddy {}", v.trim_start_matches('v')));
    }
    Some(line)
}

/// The httplab binary: `$HTTPLAB_BIN`, this executable if it is httplab, or
/// `httplab` next to (or one level above) this executable (cargo's target layout).
pub fn find_httplab_exe() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HTTPLAB_BIN") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Some(p);
        }
    }
    let exe = std::env::current_exe().ok()?;
    if exe.file_stem().is_some_and(|n| n == "httplab") {
        return Some(exe);
    }
    let dir = exe.parent()?;
    [dir.join("httplab"), dir.parent()?.join("httplab")]
        .into_iter()
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execute::tls::CertFiles;
    use crate::spec::{expand_servers, parse};

    fn inst(server_toml: &str) -> ServerInstance {
        let text = format!(
            "name = \"t\"\n[[servers]]\n{server_toml}\n[[workloads]]\nname = \"w\"\nkind = \"load\"\ntarget = \"/a\"\n"
        );
        let s = parse(&text, "t.toml").unwrap_or_else(|e| panic!("{e:#}"));
        expand_servers(&s).remove(0)
    }

    fn ctx(tls: bool, http2: bool) -> Context {
        Context {
            root: "/srv/root".into(),
            work: "/srv/work".into(),
            httplab_exe: Some("/bin/httplab".into()),
            probe_path: "/a".into(),
            tls: tls.then(|| CertFiles {
                cert: "/srv/tls/cert.pem".into(),
                key: "/srv/tls/key.pem".into(),
            }),
            http2,
        }
    }

    /// The plan of `server_toml`, or None (a visible skip; a failure under
    /// CI) when its program is not installed here.
    fn plan_of(server_toml: &str, tls: bool, http2: bool) -> Option<LaunchPlan> {
        match plan(&inst(server_toml), &ctx(tls, http2), 8443) {
            Ok(p) => Some(p),
            Err(Unavailable::NotInstalled { package }) => {
                assert!(
                    !httplab_skip::under_ci(),
                    "{package} not installed under CI"
                );
                httplab_skip::skipped(&format!("{package}: not installed"));
                None
            }
            Err(u) => panic!("{}", u.reason()),
        }
    }

    fn file<'a>(p: &'a LaunchPlan, name: &str) -> &'a str {
        p.files
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.as_str())
            .unwrap_or_else(|| panic!("no {name} in {:?}", p.files))
    }

    #[test]
    fn nginx_speaks_h2_by_alpn_and_h2c_on_a_port_of_its_own() {
        let Some(p) = plan_of("kind = \"nginx\"", true, true) else {
            return;
        };
        let conf = file(&p, "nginx.conf");
        assert!(
            conf.contains("listen 127.0.0.1:8443 ssl http2 backlog"),
            "{conf}"
        );
        assert_eq!(p.h2c_port, None);
        let Some(p) = plan_of("kind = \"nginx\"", false, true) else {
            return;
        };
        let conf = file(&p, "nginx.conf");
        let h2c = p.h2c_port.expect("a port for h2c");
        assert_ne!(h2c, 8443);
        assert!(conf.contains("listen 127.0.0.1:8443 backlog"), "{conf}");
        assert!(
            conf.contains(&format!("listen 127.0.0.1:{h2c} http2 backlog")),
            "{conf}"
        );
        // A study without h2 workloads: the configuration as before.
        let Some(p) = plan_of("kind = \"nginx\"", true, false) else {
            return;
        };
        assert!(!file(&p, "nginx.conf").contains("http2"));
    }

    #[test]
    fn apache_loads_mod_http2_with_a_threaded_mpm_only() {
        let Some(p) = plan_of("kind = \"apache\"\nmpm = \"event\"", true, true) else {
            return;
        };
        let conf = file(&p, "apache.conf");
        assert!(
            conf.contains("/mod_http2.so\nProtocols h2 http/1.1\n"),
            "{conf}"
        );
        let Some(p) = plan_of("kind = \"apache\"\nmpm = \"worker\"", false, true) else {
            return;
        };
        let conf = file(&p, "apache.conf");
        assert!(
            conf.contains("Protocols h2c http/1.1\nH2Direct on\n"),
            "{conf}"
        );
        let Some(p) = plan_of("kind = \"apache\"\nmpm = \"prefork\"", true, true) else {
            return;
        };
        assert!(!file(&p, "apache.conf").contains("http2"));
        let why = speaks(
            &inst("kind = \"apache\"\nmpm = \"prefork\""),
            Protocol::H2,
            true,
        )
        .unwrap_err();
        assert!(why.contains("prefork MPM cannot serve HTTP/2"), "{why}");
    }

    #[test]
    fn lighttpd_enables_h2proto_and_h2c() {
        let Some(p) = plan_of("kind = \"lighttpd\"", false, true) else {
            return;
        };
        let conf = file(&p, "lighttpd.conf");
        assert!(
            conf.contains("server.feature-flags += ( \"server.h2proto\" => \"enable\", \"server.h2c\" => \"enable\" )"),
            "{conf}"
        );
        let Some(p) = plan_of("kind = \"lighttpd\"", false, false) else {
            return;
        };
        assert!(!file(&p, "lighttpd.conf").contains("h2proto"));
        assert_eq!(
            parse_lighttpd_version("lighttpd/1.4.69 (ssl) - a light and fast webserver\n"),
            Some((1, 4, 69))
        );
        assert_eq!(parse_lighttpd_version("nginx/1.22.1"), None);
    }

    #[test]
    fn h2o_serves_h2_as_it_is() {
        let Some(p) = plan_of("kind = \"h2o\"", true, true) else {
            return;
        };
        let conf = file(&p, "h2o.conf");
        assert!(
            conf.contains("  ssl:\n    certificate-file: /srv/tls/cert.pem"),
            "{conf}"
        );
        assert!(speaks(&inst("kind = \"h2o\""), Protocol::H2, false).is_ok());
    }

    #[test]
    fn caddy_serves_the_corpus_without_admin_or_automatic_https() {
        let tls = ("/c.pem".to_string(), "/k.pem".to_string());
        let t = caddyfile(8443, "/srv/root", Some(&tls), true, "encode gzip");
        for want in [
            "\tadmin off\n",
            "\tauto_https off\n",
            "\t\tprotocols h1 h2 h3\n",
            "https://127.0.0.1:8443 {\n",
            "\tbind 127.0.0.1\n",
            "\ttls /c.pem /k.pem {",
            "\troot * /srv/root\n\tfile_server\n",
            "\tencode gzip\n}",
            "\t\toutput stderr\n",
        ] {
            assert!(t.contains(want), "{want:?} in\n{t}");
        }
        assert!(!t.contains("Connection close"));
        let t = caddyfile(8080, "/srv/root", None, false, "");
        for want in [
            "\t\tprotocols h1 h2c\n",
            "http://127.0.0.1:8080 {\n",
            "\theader Connection close\n",
        ] {
            assert!(t.contains(want), "{want:?} in\n{t}");
        }
        assert!(!t.contains("tls "), "{t}");
        let Some(p) = plan_of("kind = \"caddy\"\nworkers = 2", true, true) else {
            return;
        };
        assert!(p.argv.ends_with(&[
            "run".to_string(),
            "--config".into(),
            "/srv/work/Caddyfile".into(),
            "--adapter".into(),
            "caddyfile".into()
        ]));
        for (k, v) in [
            ("XDG_DATA_HOME", "/srv/work/data"),
            ("XDG_CONFIG_HOME", "/srv/work/config"),
            ("GOMAXPROCS", "2"),
        ] {
            assert!(
                p.env.iter().any(|(a, b)| a == k && b == v),
                "{k}={v} in {:?}",
                p.env
            );
        }
        assert!(file(&p, "Caddyfile").contains("tls /srv/tls/cert.pem /srv/tls/key.pem"));
    }

    #[test]
    fn a_free_port_is_free_for_udp_too() {
        let port = free_port().unwrap();
        let t = TcpListener::bind(("127.0.0.1", port));
        let u = UdpSocket::bind(("127.0.0.1", port));
        assert!(t.is_ok() && u.is_ok(), "{port}: {t:?} {u:?}");
    }

    #[test]
    fn who_speaks_what() {
        let httplab = inst("kind = \"httplab\"");
        assert!(speaks(&httplab, Protocol::H1, false).is_ok());
        let why = speaks(&httplab, Protocol::H2, true).unwrap_err();
        assert!(why.contains("HTTP/1.1 only"), "{why}");
        let caddy = inst("kind = \"caddy\"");
        assert!(speaks(&caddy, Protocol::H2, false).is_ok());
        assert!(speaks(&caddy, Protocol::H3, true).is_ok());
        assert!(speaks(&caddy, Protocol::H3, false).is_err());
        let nginx = inst("kind = \"nginx\"");
        assert!(speaks(&nginx, Protocol::H2, true).is_ok());
        assert!(speaks(&nginx, Protocol::H3, true).is_err());
        for (k, says) in [
            ("nginx", "no QUIC"),
            ("h2o", "no QUIC"),
            ("lighttpd", "no HTTP/3"),
            ("apache", "no HTTP/3"),
            ("httplab", "HTTP/1.1 only"),
        ] {
            let why = speaks(&inst(&format!("kind = \"{k}\"")), Protocol::H3, true).unwrap_err();
            assert!(why.contains(says), "{k}: {why}");
        }
    }
}
