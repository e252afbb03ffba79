//! Shared pieces of the fuzz targets: a fixture site with hostile entries
//! (symlinks out of the root, a FIFO, a link to /dev/zero) and a checker
//! that parses a server's output back with the load generator's parser.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use httplab_wire::request::{leading_empty_lines, parse_head, Limits, Method, Parsed};
use httplab_wire::response::ResponseParser;

/// Bytes that exist only outside the served root. No response may carry them.
pub const SECRET: &[u8] = b"OUTSIDE-ROOT-SECRET";

/// The fixture: `base/root` is served; `base/secret` and `base/root2` hold
/// [`SECRET`] and must never be reached.
pub struct Site {
    /// Served root (canonical).
    pub root: PathBuf,
}

/// The fixture, created once per process under `$TMPDIR`.
pub fn site() -> &'static Site {
    static SITE: OnceLock<Site> = OnceLock::new();
    SITE.get_or_init(|| make_site().expect("cannot create the fuzz fixture site"))
}

fn make_site() -> std::io::Result<Site> {
    let base = std::env::temp_dir().join(format!("httplab-fuzz-site-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let root = base.join("root");
    std::fs::create_dir_all(root.join("dir/sub"))?;
    std::fs::create_dir_all(root.join("empty"))?;
    std::fs::create_dir_all(base.join("secret"))?;
    std::fs::create_dir_all(base.join("root2"))?;
    let mut secret = SECRET.to_vec();
    secret.extend_from_slice(b"\n");
    std::fs::write(base.join("secret/secret.txt"), &secret)?;
    std::fs::write(base.join("root2/a.txt"), &secret)?;
    std::fs::write(root.join("index.html"), b"<h1>index</h1>\n")?;
    std::fs::write(root.join("a.txt"), b"alpha\n")?;
    std::fs::write(root.join("dir/b.txt"), b"beta\n")?;
    std::fs::write(root.join("dir/sub/c.css"), b"p{}\n")?;
    std::fs::write(root.join("space name.txt"), b"space\n")?;
    std::fs::write(root.join("%41.txt"), b"percent\n")?;
    std::fs::write(root.join("\u{fc}.txt"), b"umlaut\n")?;
    std::fs::write(root.join("back\\slash.txt"), b"backslash\n")?;
    // Larger than the in-memory limit the targets use: sent from a descriptor.
    let big: Vec<u8> = (0..100_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    std::fs::write(root.join("big.bin"), big)?;
    symlink("a.txt", root.join("link-in"))?;
    symlink("dir", root.join("link-dir"))?;
    symlink("../secret/secret.txt", root.join("link-out"))?;
    symlink("../secret", root.join("link-outdir"))?;
    symlink("../root2", root.join("link-root2"))?;
    symlink("/dev/zero", root.join("zero"))?;
    symlink("/etc/passwd", root.join("passwd"))?;
    symlink("loop", root.join("loop"))?;
    let fifo = std::ffi::CString::new(root.join("fifo").into_os_string().into_encoded_bytes())
        .map_err(|_| std::io::ErrorKind::InvalidInput)?;
    // SAFETY: `fifo` is a valid NUL-terminated path that outlives the call.
    if unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let root = std::fs::canonicalize(root)?;
    Ok(Site { root })
}

/// A self-signed certificate for `localhost` and its key, as PEM files
/// beside the fixture site, for the HTTP/3 targets.
pub struct Tls {
    /// The files, as `ServerConfig::tls` takes them.
    pub files: httplab_server::TlsFiles,
    /// The certificate (DER), for a client's trust store.
    pub cert: rustls::pki_types::CertificateDer<'static>,
}

/// The certificate, created once per process under `$TMPDIR`.
pub fn tls() -> &'static Tls {
    static TLS: OnceLock<Tls> = OnceLock::new();
    TLS.get_or_init(|| make_tls().expect("cannot create the fuzz certificate"))
}

fn make_tls() -> anyhow::Result<Tls> {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])?;
    let dir = site().root.parent().unwrap_or(&site().root).join("tls");
    std::fs::create_dir_all(&dir)?;
    let files = httplab_server::TlsFiles {
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    };
    std::fs::write(&files.cert, ck.cert.pem())?;
    std::fs::write(&files.key, ck.signing_key.serialize_pem())?;
    Ok(Tls {
        files,
        cert: ck.cert.der().clone(),
    })
}

/// Whether `hay` contains `needle`.
pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Whether `p` is inside `root` (component-wise).
pub fn inside(p: &Path, root: &Path) -> bool {
    p.starts_with(root)
}

/// Which requests of `input` are HEAD requests, as the server's session
/// would see them (leading empty lines skipped, bodies skipped); stops at
/// the first invalid or incomplete head, or at one that closes.
pub fn head_flags(input: &[u8], limits: &Limits, max_body: u64) -> Vec<bool> {
    let mut flags = Vec::new();
    let mut pos = 0usize;
    while pos < input.len() {
        pos += leading_empty_lines(&input[pos..]);
        match parse_head(&input[pos..], limits, max_body) {
            Parsed::Complete(r) => {
                flags.push(r.method == Method::Head);
                if !r.keep_alive {
                    break;
                }
                pos += r.head_len;
                pos = pos.saturating_add(r.content_length as usize);
            }
            Parsed::Error(_) => {
                flags.push(false);
                break;
            }
            Parsed::Partial => break,
        }
    }
    flags
}

/// One response as the load generator's parser saw it.
#[derive(Debug)]
pub struct Seen {
    /// Status code.
    pub status: u16,
    /// Whether the response allows another on the connection.
    pub keep_alive: bool,
    /// Body bytes.
    pub body: Vec<u8>,
}

/// Parses `wire` (everything a server sent on one connection) into complete
/// responses; `heads[i]` says whether response `i` answers a HEAD. Panics
/// when the bytes are not a clean sequence of complete responses.
pub fn parse_responses(wire: &[u8], heads: &[bool]) -> Vec<Seen> {
    let mut p = ResponseParser::new();
    let mut seen = Vec::new();
    let mut pos = 0usize;
    while pos < wire.len() {
        p.start(heads.get(seen.len()).copied().unwrap_or(false));
        let start = pos;
        let mut body = Vec::new();
        loop {
            let step = match p.feed(&wire[pos..]) {
                Ok(s) => s,
                Err(e) => panic!(
                    "server output does not parse at byte {pos}: {e}: {:?}",
                    String::from_utf8_lossy(&wire[start..wire.len().min(start + 400)])
                ),
            };
            if let Some((o, l)) = step.body {
                body.extend_from_slice(&wire[pos + o..pos + o + l]);
            }
            pos += step.consumed;
            if step.complete {
                break;
            }
            if pos >= wire.len() {
                match p.eof() {
                    Ok(true) => break,
                    other => panic!("server output ends inside a response: {other:?}"),
                }
            }
        }
        let info = p.info();
        assert_eq!(
            info.wire_bytes(),
            (pos - start) as u64,
            "response byte accounting"
        );
        seen.push(Seen {
            status: info.status,
            keep_alive: info.keep_alive,
            body,
        });
    }
    seen
}
