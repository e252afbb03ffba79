//! Hooks for fuzz targets and property tests: the sans-I/O session driven
//! by byte slices instead of sockets, the path resolver, and the Range and
//! conditional-header parsers. Not part of the supported API (hidden from
//! the docs); nothing on a serving path calls it.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;

use crate::config::{Coding, ServerConfig};
use crate::files::{Body, FileCache, Resolved};
use crate::h2session::H2Session;
use crate::handler::Handler;
use crate::session::Session;

pub use crate::h2session::H2Limits;

pub use crate::handler::{parse_ranges, RangeSpec};

/// A request handler over a real root directory, with no sockets and no
/// shared-memory statistics beyond its own. Its `Date` is fixed when it is
/// created (it is never ticked), so its responses are deterministic.
pub struct Harness {
    handler: Handler,
    rbuf_size: usize,
}

/// One simulated connection of a [`Harness`].
pub struct Conn {
    session: Session,
    peer: Option<IpAddr>,
}

impl Harness {
    /// A handler for `cfg` (its root is canonicalised as `Server::start` does).
    pub fn new(cfg: ServerConfig) -> anyhow::Result<Harness> {
        let root = std::fs::canonicalize(&cfg.root)
            .with_context(|| format!("root {} is not usable", cfg.root.display()))?;
        let stats = crate::stats::shared().context("cannot map statistics")?;
        let rbuf_size = cfg.pipeline_buffer.max(1);
        Ok(Harness {
            handler: Handler::new(Arc::new(cfg), root, None, stats),
            rbuf_size,
        })
    }

    /// A fresh connection.
    pub fn connect(&self, now: Instant) -> Conn {
        let peer = Some(IpAddr::from([127, 0, 0, 1]));
        Conn {
            session: Session::new(peer, now),
            peer,
        }
    }

    /// The peer sends `input` in one piece; everything the server answers is
    /// appended to `out` (file segments read from their files), as a driver
    /// that can always write would. Returns how many bytes of `input` the
    /// session took (fewer once it closes).
    pub fn send(
        &mut self,
        c: &mut Conn,
        mut input: &[u8],
        now: Instant,
        out: &mut Vec<u8>,
    ) -> usize {
        let mut taken = 0;
        loop {
            self.flush(c, now, out);
            c.session.process(&mut self.handler, now, false);
            if !c.session.out.is_empty() {
                continue;
            }
            if c.session.finished() || input.is_empty() {
                return taken;
            }
            if !c.session.has_rbuf() {
                let _ = c.session.attach_rbuf(vec![0; self.rbuf_size]);
            }
            let Some(slot) = c.session.read_slot() else {
                return taken;
            };
            let n = slot.len().min(input.len());
            slot[..n].copy_from_slice(&input[..n]);
            c.session.filled(n, now);
            input = &input[n..];
            taken += n;
        }
    }

    /// The peer half-closes; the final responses are appended to `out`.
    pub fn close(&mut self, c: &mut Conn, now: Instant, out: &mut Vec<u8>) {
        c.session.on_eof();
        let _ = self.send(c, &[], now, out);
    }

    /// Time passes to `now` without input: a due timeout fires (a 408 is
    /// appended to `out` when a head was in progress). Returns true when the
    /// connection would be closed.
    pub fn tick(&mut self, c: &mut Conn, now: Instant, out: &mut Vec<u8>) -> bool {
        let closed = c.session.on_timeout(&mut self.handler, now).is_some();
        self.flush(c, now, out);
        closed || c.session.finished()
    }

    /// Whether the connection is done (the server would close it).
    pub fn finished(&self, c: &Conn) -> bool {
        c.session.finished()
    }

    /// The simulated peer address.
    pub fn peer(&self, c: &Conn) -> Option<IpAddr> {
        c.peer
    }

    fn flush(&mut self, c: &mut Conn, now: Instant, out: &mut Vec<u8>) {
        if !c.session.out.is_empty() {
            c.session.out.drain_into(out);
            c.session.wrote(now);
        }
    }
}

/// One simulated HTTP/2 connection of a [`Harness`] (cleartext, prior
/// knowledge: the input starts with the client preface).
pub struct H2Conn {
    session: H2Session,
}

impl Harness {
    /// A fresh HTTP/2 connection with `limits`.
    pub fn connect_h2(&self, now: Instant, limits: H2Limits) -> H2Conn {
        let peer = Some(IpAddr::from([127, 0, 0, 1]));
        H2Conn {
            session: H2Session::new(peer, now, &self.handler, limits),
        }
    }

    /// The peer sends `input`; everything the server answers is appended to
    /// `out` (file segments read from their files), as a driver that can
    /// always write would. Returns false once the connection is done.
    pub fn send_h2(
        &mut self,
        c: &mut H2Conn,
        input: &[u8],
        now: Instant,
        out: &mut Vec<u8>,
    ) -> bool {
        Self::flush_h2(c, now, out);
        c.session.feed(input, &mut self.handler, now);
        Self::flush_h2(c, now, out);
        !c.session.finished()
    }

    /// Time passes to `now`: a due timeout fires. Returns true when the
    /// connection would be closed.
    pub fn tick_h2(&mut self, c: &mut H2Conn, now: Instant, out: &mut Vec<u8>) -> bool {
        let closed = c.session.on_timeout(&self.handler, now).is_some();
        Self::flush_h2(c, now, out);
        closed || c.session.finished()
    }

    /// Graceful shutdown of an HTTP/2 connection (a GOAWAY).
    pub fn shutdown_h2(&mut self, c: &mut H2Conn, now: Instant, out: &mut Vec<u8>) {
        c.session.begin_shutdown();
        Self::flush_h2(c, now, out);
    }

    fn flush_h2(c: &mut H2Conn, now: Instant, out: &mut Vec<u8>) {
        while !c.session.out.is_empty() {
            c.session.out.drain_into(out);
            c.session.wrote(now);
        }
    }
}

impl H2Conn {
    /// The connection error that ended it, if any.
    pub fn error(&self) -> Option<httplab_wire::h2::Error> {
        self.session.error()
    }

    /// Requests answered.
    pub fn served(&self) -> u64 {
        self.session.served()
    }

    /// Streams whose response body is still being sent.
    pub fn open_streams(&self) -> usize {
        self.session.open_streams()
    }

    /// Whether the server would read now.
    pub fn wants_input(&self) -> bool {
        self.session.wants_input()
    }

    /// The peer closed its sending side.
    pub fn eof(&mut self) {
        self.session.on_eof();
    }
}

/// What [`Resolver::lookup`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// A regular file: its canonical path and the bytes that would be sent.
    File {
        /// Canonical path of the file.
        path: PathBuf,
        /// Its content as served.
        body: Vec<u8>,
    },
    /// A redirect to the directory's path with a slash added.
    Redirect(String),
    /// A directory listing of this canonical directory.
    Listing(PathBuf),
    /// Refused with this status (400, 403, 404).
    Miss(u16),
}

/// The server's path resolver (the same code and cache as a worker's).
pub struct Resolver {
    cache: FileCache,
    root: PathBuf,
}

impl Resolver {
    /// A resolver for `root` (canonicalised); `small_file_max` decides which
    /// files are held in memory and which are sent from a descriptor.
    pub fn new(root: &Path, small_file_max: u64, list_dirs: bool) -> anyhow::Result<Resolver> {
        let root = std::fs::canonicalize(root)
            .with_context(|| format!("root {} is not usable", root.display()))?;
        let cfg = ServerConfig {
            small_file_max,
            list_dirs,
            ..ServerConfig::default()
        };
        let cache = FileCache::new(root.clone(), &cfg);
        Ok(Resolver { cache, root })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a raw (still percent-encoded) request path, bypassing the
    /// cache so every call walks the file system.
    pub fn lookup(&self, raw: &str) -> Lookup {
        match self.cache.resolve(raw).map(|r| (r.resolved, r.check_path)) {
            Err(m) => Lookup::Miss(m.status()),
            Ok((Resolved::Redirect(r), _)) => Lookup::Redirect(r),
            Ok((Resolved::Listing(p), _)) => Lookup::Listing(p),
            Ok((Resolved::File(info), path)) => {
                let body = match &info.body {
                    Body::Mem(m) | Body::Both(m, _) => m.to_vec(),
                    Body::Fd(f) => {
                        let mut v = vec![0; info.len as usize];
                        let n = read_at_most(f, &mut v);
                        v.truncate(n);
                        v
                    }
                };
                Lookup::File { path, body }
            }
        }
    }
}

fn read_at_most(f: &std::fs::File, buf: &mut [u8]) -> usize {
    use std::os::unix::fs::FileExt;
    let mut done = 0;
    while done < buf.len() {
        match f.read_at(&mut buf[done..], done as u64) {
            Ok(0) | Err(_) => break,
            Ok(n) => done += n,
        }
    }
    done
}

/// `If-Match` / `If-None-Match` list comparison, as the handler does it.
pub fn etag_matches(value: &[u8], etag: &str, strong: bool) -> bool {
    crate::handler::etag_matches(value, etag, strong)
}

/// `If-Range` comparison against a representation with this strong `etag`
/// and modification time (whole seconds since the epoch).
pub fn if_range_matches(value: &[u8], etag: &str, mtime_secs: u64) -> bool {
    crate::handler::if_range_value_matches(value, etag, mtime_secs)
}

/// An HTTP date as whole seconds since the epoch, as the handler reads
/// `If-Modified-Since` and friends.
pub fn parse_http_date(value: &[u8]) -> Option<u64> {
    crate::handler::parse_date(value)
}

/// The server's choice among a file itself and its precompressed variants
/// of `available` codings (server preference) for these `Accept-Encoding`
/// field values: `Ok(None)` for the file itself, `Ok(Some(token))` for a
/// coding, `Err(406)` when nothing is acceptable.
pub fn choose_encoding(
    fields: &[&[u8]],
    available: &[Coding],
) -> Result<Option<&'static str>, u16> {
    let mut a = crate::negotiate::AcceptEncoding::default();
    for f in fields {
        a.add_field(f);
    }
    match a.choose(available.iter().copied()) {
        crate::negotiate::Choice::Identity => Ok(None),
        crate::negotiate::Choice::Coded(c) => Ok(Some(c.token())),
        crate::negotiate::Choice::NotAcceptable => Err(406),
    }
}

/// Whether the io_uring engine can run here (tests run its variants only
/// then).
pub fn uring_available() -> bool {
    httplab_sys::uring::probe().is_ok()
}

pub use crate::http3::{Admission, INCOMING_BUFFER, MAX_INCOMING, MAX_STREAMS, RETRY_ABOVE};

/// The QUIC configuration `--http3` runs with for `cfg` (whose `tls` names
/// the certificate and key): quinn's endpoint configuration and the server
/// configuration (crypto with ALPN `h3`, transport limits, admission
/// bounds), built by the very functions the server uses. The types are
/// quinn-proto's, so a sans-I/O `quinn_proto::Endpoint` can run them.
pub fn quic_config(
    cfg: &ServerConfig,
) -> anyhow::Result<(quinn::EndpointConfig, quinn::ServerConfig)> {
    let files = cfg
        .tls
        .as_ref()
        .context("HTTP/3 needs the certificate and key of `tls`")?;
    let crypto = crate::tls::load_quic(files)?;
    Ok((
        crate::http3::endpoint_config(),
        crate::http3::server_config(cfg, crypto),
    ))
}

/// The server's choice for a connection attempt, given the handshakes in
/// progress and what quinn says of the attempt.
pub fn quic_admission(handshaking: usize, validated: bool, may_retry: bool) -> Admission {
    crate::http3::admission(handshaking, validated, may_retry)
}

/// What the HTTP/3 engine does with one request's field section.
#[derive(Debug)]
pub enum H3Reply {
    /// Not decodable with a QPACK table of capacity 0: the connection is
    /// closed with `QPACK_DECOMPRESSION_FAILED`.
    Undecodable,
    /// Malformed: the stream is reset with `H3_MESSAGE_ERROR`.
    Malformed,
    /// The handler's answer did not start with a whole head, or a file
    /// could not be read: the stream is reset with `H3_INTERNAL_ERROR`.
    NoHead,
    /// A response: its fields (`:status` first) as the HEADERS frame the
    /// engine writes decodes back, and its body as sent in DATA frames
    /// (file ranges read from their files).
    Response(Vec<(Vec<u8>, Vec<u8>)>, Vec<u8>),
}

impl Harness {
    /// Answers one HTTP/3 request whose QPACK field section (a HEADERS
    /// frame's payload) is `section`, as the HTTP/3 engine does: decoded
    /// with the engine's decoder and size bound into the same field rules,
    /// answered by the handler from the fixed peer 127.0.0.1, the answer's
    /// head encoded as the engine's HEADERS frame and decoded back.
    pub fn answer_h3(&mut self, section: &[u8], now: Instant) -> H3Reply {
        use crate::http3::Outcome;
        use httplab_wire::h3::frame::{Frame, FrameReader};
        let mut decoder = httplab_wire::h3::qpack::Decoder::default();
        let mut fields = httplab_wire::h2::request::RequestFields::default();
        let mut out = crate::out::OutQueue::default();
        let peer = IpAddr::from([127, 0, 0, 1]);
        let state = (&mut decoder, &mut fields);
        match crate::http3::answer_with(
            Some(section),
            state,
            &mut self.handler,
            peer,
            &mut out,
            now,
        ) {
            Outcome::Answered => {}
            Outcome::Malformed => return H3Reply::Malformed,
            _ => return H3Reply::Undecodable,
        }
        let mut pieces = out.pieces();
        let first = match pieces.next() {
            Some(crate::out::Piece::Mem(m)) => m,
            _ => &[],
        };
        let (mut block, mut wire) = (Vec::new(), Vec::new());
        let Some(end) = crate::http3::head_frame(first, &mut block, &mut wire) else {
            return H3Reply::NoHead;
        };
        let mut r = FrameReader::default();
        r.push(&wire);
        let Some(Frame::Whole { payload, .. }) = r.next(|_| true, u64::MAX) else {
            return H3Reply::NoHead;
        };
        let mut got = Vec::new();
        let decoded = decoder.decode(payload, u64::MAX, |n, v| got.push((n.to_vec(), v.to_vec())));
        if decoded.is_err() || !r.at_boundary() {
            return H3Reply::NoHead;
        }
        let mut body = first[end..].to_vec();
        for p in pieces {
            match p {
                crate::out::Piece::Mem(m) => body.extend_from_slice(m),
                crate::out::Piece::File(f, a, e) => {
                    use std::os::unix::fs::FileExt;
                    let mut v = vec![0; e.saturating_sub(a) as usize];
                    // The engine resets the stream when a read fails.
                    if f.read_exact_at(&mut v, a).is_err() {
                        return H3Reply::NoHead;
                    }
                    body.extend_from_slice(&v);
                }
            }
        }
        H3Reply::Response(got, body)
    }
}
