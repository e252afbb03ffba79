//! Mapping request paths to files under the root, safely, with a cache.
//!
//! Path safety (checked in this order, every step required):
//! 1. the path is percent-decoded once; a decoded NUL is rejected (400);
//! 2. it is split on `/` *after* decoding, `.` and empty segments dropped and
//!    `..` segments resolved lexically; a `..` above the root → 404;
//! 3. the joined path is canonicalised (`realpath`), which resolves every
//!    symlink; a result outside the canonical root → 404;
//! 4. the final file is opened with `O_NOFOLLOW` and must be a regular file
//!    (FIFOs, devices and sockets → 403), so a symlink swapped in after step 3
//!    is not followed.
//!
//! Steps 3 and 4 cost a dozen system calls per lookup (`realpath` reads every
//! component as a link, then `stat`, `open`, `fstat`). Where the kernel has
//! `openat2(2)` (Linux 5.6), a regular file is first opened in one call
//! relative to the root's descriptor with `RESOLVE_BENEATH` and
//! `RESOLVE_NO_SYMLINKS`: atomically, no link followed and nothing outside
//! the root, so the lexical path it opened is the canonical one. Whatever
//! that fast path cannot settle by itself (any symlink on the way,
//! directories, trailing slashes, non-regular files, a kernel without
//! `openat2`) goes through steps 3–4, so both paths give the same answer;
//! the fast path only saves system calls. That matters once the file set
//! outgrows the cache (every miss resolves).
//!
//! The cache ([`FileCache`]) belongs to one worker (no locks). It maps the raw
//! request path to a resolution: small files keep their bytes and a
//! pre-rendered response head, larger ones an open descriptor for sendfile.
//! On a cleartext server whose files may go by sendfile, a small file above
//! [`FILE_PATH_ABOVE`] keeps its descriptor too ([`Body::Both`]): HTTP/1.1
//! sends it from there.
//! An entry is revalidated with one `stat` of its canonical path at most once
//! per `revalidate` interval (default 1 s); a changed identity, size or mtime
//! reloads it. Negative results are not cached.
//!
//! With `--precompressed`, resolving a regular file `F` also resolves its
//! siblings `F.br`, `F.zst`, `F.gz` (those of the configured codings) as
//! request paths of their own would be: the same steps 3–4 (or the same
//! `openat2` call), so a sibling that is a symlink out of the root, a
//! directory or not a regular file is not a variant. The variants live in
//! `F`'s entry ([`FileInfo::variants`], each with its own body, ETag and
//! pre-rendered head), so the one look-up of `F`'s path finds them all
//! and a variant is never served for another; revalidating `F`'s entry
//! stats each sibling path too, so a sibling that appears, changes or goes
//! away reloads it.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::{CString, OsStr};
use std::fs::{File, Metadata};
use std::hash::{BuildHasherDefault, Hasher};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::config::{cache_control_for, CacheRule, Coding, FileIo, ServerConfig};

/// Body storage of a file.
#[derive(Debug)]
pub enum Body {
    /// Small file held in memory.
    Mem(Arc<[u8]>),
    /// Larger file, sent with sendfile from this descriptor.
    Fd(Arc<File>),
    /// A small file above [`FILE_PATH_ABOVE`] on a cleartext server whose
    /// files may go by sendfile (not `--file-io pread`, where reading the
    /// file again would cost more than the copy from memory): held
    /// in memory for HTTP/2 and HTTP/3 (their frames copy it anyway), and
    /// its descriptor kept for HTTP/1.1, which sends it by the file path
    /// (sendfile): for bodies this large that costs less than copying them
    /// into the output buffer and sending the copy (BENCHMARKS.md, "Small
    /// files from the descriptor over HTTP/1.1").
    Both(Arc<[u8]>, Arc<File>),
}

/// The size above which a cached file's body goes to an HTTP/1.1 peer in
/// cleartext from its descriptor ([`Body::Both`]): measured, server CPU
/// per keep-alive request from memory against sendfile was even at 16 KiB,
/// 1.25x at 32 KiB and 1.4x at 60 KiB.
pub const FILE_PATH_ABOVE: u64 = 16 * 1024;

/// A servable regular file with its pre-rendered header fields.
#[derive(Debug)]
pub struct FileInfo {
    /// Length in bytes.
    pub len: u64,
    /// Modification time, whole seconds since the epoch.
    pub mtime_secs: u64,
    /// Strong entity tag, quotes included.
    pub etag: String,
    /// Content-Type value (a variant has the one of the file it encodes).
    pub content_type: String,
    /// The content coding of a precompressed variant; `None` for the file
    /// itself.
    pub coding: Option<Coding>,
    /// The file has precompressed variants (its responses, and theirs,
    /// carry `Vary: Accept-Encoding`).
    pub vary: bool,
    /// `Content-Type`, `Content-Encoding` (a variant), then the lines of
    /// `fields_304`, then `Accept-Ranges`, each ending in CRLF.
    pub fields: Vec<u8>,
    /// The lines a 304 repeats: `Last-Modified`, `ETag`, `Vary` (with
    /// variants) and `Cache-Control` (when a rule applies).
    pub fields_304: Vec<u8>,
    /// A full 200 head up to (not including) the `Date` value: status line,
    /// Server, `fields`, Content-Length, then `Date: `.
    pub head_200: Vec<u8>,
    /// The bytes.
    pub body: Body,
    /// Precompressed variants, in server preference (empty without
    /// `--precompressed` or siblings).
    pub variants: Vec<Arc<FileInfo>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Identity {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: i64,
    mtime_nsec: i64,
}

impl Identity {
    fn of(m: &Metadata) -> Self {
        Identity {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: m.mtime(),
            mtime_nsec: m.mtime_nsec(),
        }
    }
}

/// What a request path resolves to.
#[derive(Debug, Clone)]
pub enum Resolved {
    /// A regular file.
    File(Arc<FileInfo>),
    /// A directory requested without its trailing slash: redirect here
    /// (path only, still encoded, with the slash added).
    Redirect(String),
    /// A directory without index.html, listing enabled.
    Listing(PathBuf),
}

/// Why a path could not be served (maps to a status code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miss {
    /// 400: malformed path (NUL byte).
    BadPath,
    /// 403: exists but may not be read.
    Forbidden,
    /// 404: not there (or outside the root).
    NotFound,
}

impl Miss {
    /// Status code.
    pub fn status(self) -> u16 {
        match self {
            Miss::BadPath => 400,
            Miss::Forbidden => 403,
            Miss::NotFound => 404,
        }
    }
}

struct Entry {
    resolved: Resolved,
    /// Canonical path whose stat validates the entry.
    check_path: PathBuf,
    identity: Identity,
    /// Sibling paths of `--precompressed` and what a stat of each saw.
    siblings: Vec<(PathBuf, Option<Identity>)>,
    checked: Instant,
    cost: usize,
}

/// What [`FileCache::resolve`] found for a request path.
pub(crate) struct Resolution {
    /// The answer.
    pub(crate) resolved: Resolved,
    /// The path whose stat revalidates it (canonical, or lexical under the
    /// root where `openat2` opened it without following any link).
    pub(crate) check_path: PathBuf,
    identity: Identity,
    /// Every sibling path looked at for variants, and what a stat of it saw
    /// (`None`: nothing there).
    siblings: Vec<(PathBuf, Option<Identity>)>,
}

/// What a stat of `p` sees, for revalidation.
fn observe(p: &Path) -> Option<Identity> {
    std::fs::metadata(p).ok().map(|m| Identity::of(&m))
}

/// Per-worker cache of resolved paths.
pub struct FileCache {
    root: PathBuf,
    /// The root, open as a directory (`O_PATH`), for `openat2`; `None` if it
    /// could not be opened (the careful path then does everything).
    root_dir: Option<File>,
    /// `openat2` works here (cleared on the first `ENOSYS`/`EPERM`).
    beneath: Cell<bool>,
    server_name: String,
    small_max: u64,
    /// Cleartext, files not forced through pread: cached bodies above
    /// [`FILE_PATH_ABOVE`] keep their descriptor ([`Body::Both`]).
    keep_fd: bool,
    budget: usize,
    used: usize,
    revalidate: Duration,
    list_dirs: bool,
    /// `--precompressed` codings, server preference.
    precompressed: Vec<Coding>,
    /// `--cache-control` rules.
    cache_rules: Vec<CacheRule>,
    map: HashMap<Box<str>, Entry, BuildHasherDefault<Fnv>>,
}

/// FNV-1a: request paths are short, and SipHash's DoS resistance buys
/// little here because only paths of existing files are ever inserted.
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.0 = h;
    }
}

impl FileCache {
    /// A cache for the canonical root `root`, with the file settings of
    /// `cfg` (sizes, revalidation, listings, variants, cache rules).
    pub fn new(root: PathBuf, cfg: &ServerConfig) -> Self {
        let root_dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(&root)
            .ok();
        FileCache {
            root,
            root_dir,
            beneath: Cell::new(true),
            server_name: cfg.server_name.clone(),
            small_max: cfg.small_file_max,
            keep_fd: cfg.tls.is_none() && cfg.file_io != FileIo::Pread,
            budget: cfg.cache_bytes,
            used: 0,
            revalidate: cfg.revalidate,
            list_dirs: cfg.list_dirs,
            precompressed: cfg.precompressed.clone(),
            cache_rules: cfg.cache_control.clone(),
            map: HashMap::default(),
        }
    }

    /// Resolves a raw (percent-encoded) request path.
    pub fn lookup(&mut self, raw: &str, now: Instant) -> Result<Resolved, Miss> {
        if let Some(e) = self.map.get_mut(raw) {
            if now.saturating_duration_since(e.checked) < self.revalidate {
                return Ok(e.resolved.clone());
            }
            let same = observe(&e.check_path) == Some(e.identity)
                && e.siblings.iter().all(|(p, seen)| observe(p) == *seen);
            if same {
                e.checked = now;
                return Ok(e.resolved.clone());
            }
            if let Some(old) = self.map.remove(raw) {
                self.used -= old.cost;
            }
        }
        let r = self.resolve(raw)?;
        let cost = match &r.resolved {
            Resolved::File(f) => {
                std::iter::once(f)
                    .chain(&f.variants)
                    .map(|v| match v.body {
                        Body::Mem(_) | Body::Both(..) => v.len as usize + v.head_200.len(),
                        Body::Fd(_) => v.head_200.len(),
                    })
                    .sum::<usize>()
                    + raw.len()
                    + 256 * (1 + r.siblings.len())
            }
            Resolved::Redirect(s) => s.len() + raw.len() + 256,
            Resolved::Listing(_) => usize::MAX,
        };
        if cost <= self.budget.saturating_sub(self.used) {
            self.used += cost;
            self.map.insert(
                raw.into(),
                Entry {
                    resolved: r.resolved.clone(),
                    check_path: r.check_path,
                    identity: r.identity,
                    siblings: r.siblings,
                    checked: now,
                    cost,
                },
            );
        }
        Ok(r.resolved)
    }

    /// Resolves a raw (percent-encoded) request path without the cache,
    /// with the variants of a regular file under `--precompressed`.
    pub(crate) fn resolve(&self, raw: &str) -> Result<Resolution, Miss> {
        let decoded: Vec<u8> = percent_encoding::percent_decode_str(raw).collect();
        if decoded.contains(&0) {
            return Err(Miss::BadPath);
        }
        let trailing_slash = decoded.last() == Some(&b'/');
        let mut segs: Vec<&[u8]> = Vec::new();
        for seg in decoded.split(|&b| b == b'/') {
            match seg {
                b"" | b"." => {}
                b".." => {
                    if segs.pop().is_none() {
                        return Err(Miss::NotFound);
                    }
                }
                s => segs.push(s),
            }
        }
        let (resolved, check_path, identity) = self.resolve_segs(&segs, trailing_slash, raw)?;
        let mut r = Resolution {
            resolved,
            check_path,
            identity,
            siblings: Vec::new(),
        };
        if !self.precompressed.is_empty() {
            self.attach_variants(&mut r);
        }
        Ok(r)
    }

    /// Resolves decoded, lexically resolved path segments (`raw` is the
    /// request path, for a directory's redirect).
    fn resolve_segs(
        &self,
        segs: &[&[u8]],
        trailing_slash: bool,
        raw: &str,
    ) -> Result<(Resolved, PathBuf, Identity), Miss> {
        if let Some(fast) = self.resolve_beneath(segs, trailing_slash) {
            return fast;
        }
        let mut full = self.root.clone();
        for s in segs {
            full.push(OsStr::from_bytes(s));
        }
        let canon = self.confine(&full)?;
        let meta = std::fs::metadata(&canon).map_err(io_miss)?;
        if meta.is_dir() {
            if !trailing_slash && !segs.is_empty() {
                let mut loc = raw.to_string();
                loc.push('/');
                return Ok((Resolved::Redirect(loc), canon, Identity::of(&meta)));
            }
            let index = canon.join("index.html");
            match std::fs::symlink_metadata(&index) {
                Ok(_) => {
                    let icanon = self.confine(&index)?;
                    let (info, id) = self.load(&icanon)?;
                    return Ok((Resolved::File(Arc::new(info)), icanon, id));
                }
                Err(_) if self.list_dirs => {
                    return Ok((Resolved::Listing(canon.clone()), canon, Identity::of(&meta)))
                }
                Err(_) => return Err(Miss::NotFound),
            }
        }
        if trailing_slash {
            // "/file.txt/" names a directory that does not exist.
            return Err(Miss::NotFound);
        }
        let (info, id) = self.load(&canon)?;
        Ok((Resolved::File(Arc::new(info)), canon, id))
    }

    /// Looks for the siblings of the file `r` resolved to (each configured
    /// coding's suffix added to its path), resolved exactly as a request
    /// for them would be; the regular files found become its variants.
    fn attach_variants(&self, r: &mut Resolution) {
        let Resolved::File(info) = &mut r.resolved else {
            return;
        };
        let cache_control = cache_control_for(&self.cache_rules, &r.check_path);
        let mut variants = Vec::new();
        for &c in &self.precompressed {
            let mut path = r.check_path.clone().into_os_string();
            path.push(c.suffix());
            let path = PathBuf::from(path);
            let seen = observe(&path);
            if seen.is_some() {
                if let Some(mut v) = self.sibling(&path) {
                    v.make_variant(c, &info.content_type);
                    v.render(&self.server_name, cache_control);
                    variants.push(Arc::new(v));
                }
            }
            r.siblings.push((path, seen));
        }
        if variants.is_empty() {
            return;
        }
        // Fresh from `resolve_segs`, so not shared yet.
        if let Some(f) = Arc::get_mut(info) {
            f.variants = variants;
            f.vary = true;
            f.render(&self.server_name, cache_control);
        }
    }

    /// The regular file at `path` (under the root), resolved with the same
    /// confinement as a request path; `None` for anything else.
    fn sibling(&self, path: &Path) -> Option<FileInfo> {
        let rel = path.strip_prefix(&self.root).ok()?;
        let segs: Vec<&[u8]> = rel
            .components()
            .map(|c| match c {
                Component::Normal(s) => Some(s.as_bytes()),
                _ => None,
            })
            .collect::<Option<_>>()?;
        match self.resolve_segs(&segs, false, "") {
            Ok((Resolved::File(v), _, _)) => Arc::try_unwrap(v).ok(),
            _ => None,
        }
    }

    /// The `openat2` fast path (see the module comment): `None` when it
    /// cannot settle the lookup and the careful path must.
    #[allow(clippy::type_complexity)]
    fn resolve_beneath(
        &self,
        segs: &[&[u8]],
        trailing_slash: bool,
    ) -> Option<Result<(Resolved, PathBuf, Identity), Miss>> {
        let dir = self.root_dir.as_ref()?;
        if !self.beneath.get() || segs.is_empty() || trailing_slash {
            return None;
        }
        let rel = CString::new(segs.join(&b'/')).ok()?;
        let file = match crate::sys::open_beneath(dir.as_raw_fd(), &rel) {
            Ok(f) => f,
            Err(e) => {
                return match e.raw_os_error() {
                    Some(libc::ENOENT) | Some(libc::ENOTDIR) => Some(Err(Miss::NotFound)),
                    Some(libc::EACCES) => Some(Err(Miss::Forbidden)),
                    Some(libc::ENOSYS) | Some(libc::EPERM) => {
                        self.beneath.set(false);
                        None
                    }
                    // ELOOP (a symlink on the way), EXDEV, …
                    _ => None,
                };
            }
        };
        let meta = file.metadata().ok()?;
        if !meta.is_file() {
            return None;
        }
        let mut full = self.root.clone();
        for s in segs {
            full.push(OsStr::from_bytes(s));
        }
        let loaded = self.load_open(file, &meta, &full);
        Some(loaded.map(|(info, id)| (Resolved::File(Arc::new(info)), full, id)))
    }

    /// Canonicalises and checks the result stays under the root.
    fn confine(&self, p: &Path) -> Result<PathBuf, Miss> {
        let canon = std::fs::canonicalize(p).map_err(io_miss)?;
        if canon.starts_with(&self.root) {
            Ok(canon)
        } else {
            Err(Miss::NotFound)
        }
    }

    fn load(&self, canon: &Path) -> Result<(FileInfo, Identity), Miss> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(canon)
            .map_err(io_miss)?;
        let meta = file.metadata().map_err(io_miss)?;
        self.load_open(file, &meta, canon)
    }

    /// Builds the entry of the regular file `file` (whose `fstat` is `meta`)
    /// named `path` (for its type).
    fn load_open(
        &self,
        file: File,
        meta: &Metadata,
        canon: &Path,
    ) -> Result<(FileInfo, Identity), Miss> {
        if !meta.is_file() {
            return Err(Miss::Forbidden);
        }
        let identity = Identity::of(meta);
        let (body, len) = if meta.len() <= self.small_max {
            // The length `fstat` gave, read with positioned reads: one call
            // for a small file (read_to_end would add a size probe, a seek
            // and a read of the end). A file that shrank meanwhile is served
            // as far as it goes; growth after the fstat is not seen until the
            // entry is revalidated.
            let mut buf = vec![0u8; meta.len() as usize];
            let mut got = 0;
            while got < buf.len() {
                match file.read_at(&mut buf[got..], got as u64) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(io_miss(e)),
                }
            }
            buf.truncate(got);
            let len = buf.len() as u64;
            let mem = Arc::from(buf.into_boxed_slice());
            if self.keep_fd && len > FILE_PATH_ABOVE {
                (Body::Both(mem, Arc::new(file)), len)
            } else {
                (Body::Mem(mem), len)
            }
        } else {
            (Body::Fd(Arc::new(file)), meta.len())
        };
        let mtime_secs = u64::try_from(meta.mtime()).unwrap_or(0);
        let etag = format!(
            "\"{:x}.{:x}-{:x}\"",
            mtime_secs,
            meta.mtime_nsec().max(0) / 1000,
            len
        );
        let mut info = FileInfo {
            len,
            mtime_secs,
            etag,
            content_type: content_type_for(canon),
            coding: None,
            vary: false,
            fields: Vec::new(),
            fields_304: Vec::new(),
            head_200: Vec::new(),
            body,
            variants: Vec::new(),
        };
        info.render(
            &self.server_name,
            cache_control_for(&self.cache_rules, canon),
        );
        Ok((info, identity))
    }
}

impl FileInfo {
    /// Turns a sibling file into the `c`-coded variant of a file of type
    /// `content_type`: that type, and an ETag of its own (its file's tag
    /// with the coding added, so never the identity's).
    fn make_variant(&mut self, c: Coding, content_type: &str) {
        self.coding = Some(c);
        self.vary = true;
        self.content_type = content_type.to_string();
        let tag = self.etag.trim_end_matches('"');
        self.etag = format!("{tag}-{}\"", c.token());
    }

    /// Renders `fields`, `fields_304` and `head_200` from the other fields.
    fn render(&mut self, server_name: &str, cache_control: Option<&str>) {
        let mut v = Vec::with_capacity(128);
        v.extend_from_slice(b"Last-Modified: ");
        v.extend_from_slice(httpdate::fmt_http_date(self.modified()).as_bytes());
        v.extend_from_slice(b"\r\nETag: ");
        v.extend_from_slice(self.etag.as_bytes());
        v.extend_from_slice(b"\r\n");
        if self.vary {
            v.extend_from_slice(b"Vary: Accept-Encoding\r\n");
        }
        if let Some(cc) = cache_control {
            v.extend_from_slice(b"Cache-Control: ");
            v.extend_from_slice(cc.as_bytes());
            v.extend_from_slice(b"\r\n");
        }
        let mut fields = Vec::with_capacity(v.len() + 96);
        fields.extend_from_slice(b"Content-Type: ");
        fields.extend_from_slice(self.content_type.as_bytes());
        fields.extend_from_slice(b"\r\n");
        if let Some(c) = self.coding {
            fields.extend_from_slice(b"Content-Encoding: ");
            fields.extend_from_slice(c.token().as_bytes());
            fields.extend_from_slice(b"\r\n");
        }
        fields.extend_from_slice(&v);
        fields.extend_from_slice(b"Accept-Ranges: bytes\r\n");
        let mut head_200 = Vec::with_capacity(fields.len() + 80);
        head_200.extend_from_slice(b"HTTP/1.1 200 OK\r\nServer: ");
        head_200.extend_from_slice(server_name.as_bytes());
        head_200.extend_from_slice(b"\r\n");
        head_200.extend_from_slice(&fields);
        head_200.extend_from_slice(format!("Content-Length: {}\r\nDate: ", self.len).as_bytes());
        self.fields = fields;
        self.fields_304 = v;
        self.head_200 = head_200;
    }

    /// Last-Modified as a SystemTime.
    pub fn modified(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(self.mtime_secs)
    }
}

fn io_miss(e: std::io::Error) -> Miss {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => Miss::Forbidden,
        _ if e.raw_os_error() == Some(libc::ELOOP) => Miss::Forbidden,
        _ => Miss::NotFound,
    }
}

/// Content-Type by extension, with `charset=utf-8` for text types.
pub fn content_type_for(p: &Path) -> String {
    let mime = mime_guess::from_path(p).first_raw();
    match mime {
        Some(m)
            if m.starts_with("text/")
                || m == "application/javascript"
                || m == "application/json" =>
        {
            format!("{m}; charset=utf-8")
        }
        Some(m) => m.to_string(),
        None => "application/octet-stream".to_string(),
    }
}

/// Renders an HTML listing of `dir` (the request path `shown` is the
/// heading).
pub fn render_listing(dir: &Path, shown: &str) -> Vec<u8> {
    let mut names: Vec<(String, bool)> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .map(|e| {
                let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
                (e.file_name().to_string_lossy().into_owned(), is_dir)
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    let title = html_escape(&String::from_utf8_lossy(
        &percent_encoding::percent_decode_str(shown).collect::<Vec<u8>>(),
    ));
    let mut s = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Index of {title}</title></head>\n<body><h1>Index of {title}</h1>\n<ul>\n<li><a href=\"../\">../</a></li>\n"
    );
    for (n, is_dir) in names {
        let slash = if is_dir { "/" } else { "" };
        let href: String = percent_encoding::utf8_percent_encode(&n, HREF).collect();
        s.push_str(&format!(
            "<li><a href=\"{href}{slash}\">{}{slash}</a></li>\n",
            html_escape(&n)
        ));
    }
    s.push_str("</ul></body></html>\n");
    s.into_bytes()
}

/// Characters escaped in listing links: everything but unreserved ones.
const HREF: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'.')
    .remove(b'-')
    .remove(b'_')
    .remove(b'~');

fn html_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(tag: &str) -> (PathBuf, PathBuf) {
        let base = std::env::temp_dir().join(format!("httplab-files-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let root = base.join("root");
        std::fs::create_dir_all(root.join("d")).unwrap();
        std::fs::write(root.join("d/a.txt"), b"inside").unwrap();
        std::fs::write(base.join("secret"), b"outside").unwrap();
        std::os::unix::fs::symlink("d/a.txt", root.join("rel-link")).unwrap();
        std::os::unix::fs::symlink("../secret", root.join("escape")).unwrap();
        std::os::unix::fs::symlink(root.join("d/a.txt"), root.join("abs-link")).unwrap();
        (base, std::fs::canonicalize(&root).unwrap())
    }

    fn cache(root: &Path) -> FileCache {
        let cfg = ServerConfig {
            server_name: "t".into(),
            small_file_max: 1 << 20,
            cache_bytes: 1 << 20,
            ..ServerConfig::default()
        };
        FileCache::new(root.to_path_buf(), &cfg)
    }

    fn body(r: &Result<(Resolved, PathBuf, Identity), Miss>) -> Option<(Vec<u8>, PathBuf)> {
        match r {
            Ok((Resolved::File(f), p, _)) => match &f.body {
                Body::Mem(m) | Body::Both(m, _) => Some((m.to_vec(), p.clone())),
                Body::Fd(_) => None,
            },
            _ => None,
        }
    }

    fn resolve(c: &FileCache, raw: &str) -> Result<(Resolved, PathBuf, Identity), Miss> {
        c.resolve(raw)
            .map(|r| (r.resolved, r.check_path, r.identity))
    }

    /// The openat2 fast path settles plain files itself, leaves every
    /// symlink and directory to the careful path, and both give the same
    /// answers; with the fast path switched off the results are identical.
    #[test]
    fn fast_path_agrees_with_the_careful_path() {
        let (base, root) = tree("fast");
        let fast = cache(&root);
        let slow = cache(&root);
        slow.beneath.set(false);
        let segs: Vec<&[u8]> = vec![b"d", b"a.txt"];
        let got = fast.resolve_beneath(&segs, false);
        if fast.beneath.get() {
            let got = got.expect("a plain file is settled by the fast path");
            assert_eq!(body(&got).unwrap().0, b"inside");
        }
        for link in ["rel-link", "escape", "abs-link"] {
            let segs: Vec<&[u8]> = vec![link.as_bytes()];
            assert!(fast.resolve_beneath(&segs, false).is_none(), "{link}");
        }
        assert!(fast.resolve_beneath(&[b"d".as_slice()], false).is_none());
        for raw in [
            "/d/a.txt",
            "/rel-link",
            "/escape",
            "/abs-link",
            "/d",
            "/d/",
            "/nope",
            "/d/a.txt/x",
            "/../secret",
        ] {
            let (a, b) = (resolve(&fast, raw), resolve(&slow, raw));
            assert_eq!(body(&a), body(&b), "{raw}");
            assert_eq!(a.as_ref().err(), b.as_ref().err(), "{raw}");
        }
        assert_eq!(body(&resolve(&fast, "/escape")), None);
        let _ = std::fs::remove_dir_all(base);
    }

    /// On a cleartext server a cached file above [`FILE_PATH_ABOVE`] keeps
    /// its descriptor beside its bytes (HTTP/1.1 sends it from there); one
    /// at the bound, and any on a TLS server or with `--file-io pread`,
    /// keeps its bytes alone.
    #[test]
    fn cached_files_above_the_bound_keep_their_descriptor_in_cleartext() {
        let (base, root) = tree("both");
        let at = FILE_PATH_ABOVE as usize;
        std::fs::write(root.join("at.bin"), vec![b'a'; at]).unwrap();
        std::fs::write(root.join("above.bin"), vec![b'b'; at + 1]).unwrap();
        let kind = |c: &FileCache, raw: &str| match c.resolve(raw).map(|r| r.resolved) {
            Ok(Resolved::File(f)) => match &f.body {
                Body::Mem(m) => ("mem", m.len()),
                Body::Both(m, file) => {
                    assert_eq!(file.metadata().unwrap().len(), m.len() as u64);
                    ("both", m.len())
                }
                Body::Fd(_) => ("fd", 0),
            },
            _ => ("miss", 0),
        };
        let plain = cache(&root);
        assert_eq!(kind(&plain, "/at.bin"), ("mem", at));
        assert_eq!(kind(&plain, "/above.bin"), ("both", at + 1));
        let cfg = ServerConfig {
            server_name: "t".into(),
            small_file_max: 1 << 20,
            cache_bytes: 1 << 20,
            tls: Some(crate::config::TlsFiles {
                cert: "c.pem".into(),
                key: "k.pem".into(),
            }),
            ..ServerConfig::default()
        };
        let tls = FileCache::new(root.clone(), &cfg);
        assert_eq!(kind(&tls, "/above.bin"), ("mem", at + 1));
        let cfg = ServerConfig {
            tls: None,
            file_io: FileIo::Pread,
            ..cfg
        };
        let pread = FileCache::new(root.clone(), &cfg);
        assert_eq!(kind(&pread, "/above.bin"), ("mem", at + 1));
        let _ = std::fs::remove_dir_all(base);
    }

    fn mem(f: &FileInfo) -> &[u8] {
        match &f.body {
            Body::Mem(m) | Body::Both(m, _) => m,
            Body::Fd(_) => panic!("expected a body in memory"),
        }
    }

    /// Variants are found only where a request for them would be served:
    /// a sibling symlink out of the root, a directory or a FIFO is not one.
    /// Each has its own ETag, the original's type and the coding; the file
    /// and its variants say Vary.
    #[test]
    fn variants_are_confined_like_any_file() {
        let (base, root) = tree("variants");
        std::fs::write(root.join("d/a.txt.gz"), b"GZ").unwrap();
        std::fs::write(root.join("d/a.txt.zst"), b"ZSTD").unwrap();
        std::os::unix::fs::symlink("../../secret", root.join("d/a.txt.br")).unwrap();
        std::fs::write(root.join("plain.js"), b"js").unwrap();
        std::fs::create_dir(root.join("plain.js.gz")).unwrap();
        std::fs::write(root.join("fifo.css"), b"css").unwrap();
        // coreutils' mkfifo: std has none, and this crate has no unsafe code.
        let fifo = std::process::Command::new("mkfifo")
            .arg(root.join("fifo.css.br"))
            .status()
            .is_ok_and(|s| s.success());
        let mut c = cache(&root);
        c.precompressed = Coding::DEFAULT_ORDER.to_vec();
        c.cache_rules = vec!["txt=max-age=60".parse().unwrap()];
        let r = c.resolve("/d/a.txt").unwrap();
        let Resolved::File(f) = &r.resolved else {
            panic!("a file")
        };
        assert_eq!(mem(f), b"inside");
        let codings: Vec<_> = f.variants.iter().map(|v| v.coding).collect();
        assert_eq!(codings, [Some(Coding::Zstd), Some(Coding::Gzip)]);
        assert_eq!(mem(&f.variants[1]), b"GZ");
        let head = String::from_utf8(f.variants[1].head_200.clone()).unwrap();
        assert!(
            head.contains("Content-Type: text/plain; charset=utf-8\r\n"),
            "{head}"
        );
        assert!(head.contains("Content-Encoding: gzip\r\n"), "{head}");
        assert!(head.contains("Vary: Accept-Encoding\r\n"), "{head}");
        assert!(head.contains("Cache-Control: max-age=60\r\n"), "{head}");
        assert!(String::from_utf8_lossy(&f.head_200).contains("Vary: Accept-Encoding\r\n"));
        assert_ne!(f.etag, f.variants[0].etag);
        assert_ne!(f.variants[0].etag, f.variants[1].etag);
        assert_eq!(r.siblings.len(), 3);
        let r = c.resolve("/plain.js").unwrap();
        let Resolved::File(f) = &r.resolved else {
            panic!("a file")
        };
        assert!(f.variants.is_empty() && !f.vary);
        assert!(!String::from_utf8_lossy(&f.head_200).contains("Vary"));
        if fifo {
            let r = c.resolve("/fifo.css").unwrap();
            let Resolved::File(f) = &r.resolved else {
                panic!("a file")
            };
            assert!(f.variants.is_empty(), "a FIFO is not a variant");
        }
        let _ = std::fs::remove_dir_all(base);
    }
}
