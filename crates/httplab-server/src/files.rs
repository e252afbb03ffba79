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
//! An entry is revalidated with one `stat` of its canonical path at most once
//! per `revalidate` interval (default 1 s); a changed identity, size or mtime
//! reloads it. Negative results are not cached.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::{CString, OsStr};
use std::fs::{File, Metadata};
use std::hash::{BuildHasherDefault, Hasher};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Body storage of a file.
#[derive(Debug)]
pub enum Body {
    /// Small file held in memory.
    Mem(Arc<[u8]>),
    /// Larger file, sent with sendfile from this descriptor.
    Fd(Arc<File>),
}

/// A servable regular file with its pre-rendered header fields.
#[derive(Debug)]
pub struct FileInfo {
    /// Length in bytes.
    pub len: u64,
    /// Modification time, whole seconds since the epoch.
    pub mtime_secs: u64,
    /// Strong entity tag, quotes included.
    pub etag: String,
    /// Content-Type value.
    pub content_type: String,
    /// `Content-Type`, `Last-Modified`, `ETag` and `Accept-Ranges` lines,
    /// each ending in CRLF.
    pub fields: Vec<u8>,
    /// A full 200 head up to (not including) the `Date` value: status line,
    /// Server, `fields`, Content-Length, then `Date: `.
    pub head_200: Vec<u8>,
    /// The bytes.
    pub body: Body,
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
    checked: Instant,
    cost: usize,
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
    budget: usize,
    used: usize,
    revalidate: Duration,
    list_dirs: bool,
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
    /// A cache for the canonical root `root`.
    pub fn new(
        root: PathBuf,
        server_name: &str,
        small_max: u64,
        budget: usize,
        revalidate: Duration,
        list_dirs: bool,
    ) -> Self {
        let root_dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(&root)
            .ok();
        FileCache {
            root,
            root_dir,
            beneath: Cell::new(true),
            server_name: server_name.to_string(),
            small_max,
            budget,
            used: 0,
            revalidate,
            list_dirs,
            map: HashMap::default(),
        }
    }

    /// Resolves a raw (percent-encoded) request path.
    pub fn lookup(&mut self, raw: &str, now: Instant) -> Result<Resolved, Miss> {
        if let Some(e) = self.map.get_mut(raw) {
            if now.saturating_duration_since(e.checked) < self.revalidate {
                return Ok(e.resolved.clone());
            }
            if let Ok(m) = std::fs::metadata(&e.check_path) {
                if Identity::of(&m) == e.identity {
                    e.checked = now;
                    return Ok(e.resolved.clone());
                }
            }
            if let Some(old) = self.map.remove(raw) {
                self.used -= old.cost;
            }
        }
        let (resolved, check_path, identity) = self.resolve(raw)?;
        let cost = match &resolved {
            Resolved::File(f) => match f.body {
                Body::Mem(_) => f.len as usize + f.head_200.len() + raw.len() + 256,
                Body::Fd(_) => f.head_200.len() + raw.len() + 256,
            },
            Resolved::Redirect(s) => s.len() + raw.len() + 256,
            Resolved::Listing(_) => usize::MAX,
        };
        if cost <= self.budget.saturating_sub(self.used) {
            self.used += cost;
            self.map.insert(
                raw.into(),
                Entry {
                    resolved: resolved.clone(),
                    check_path,
                    identity,
                    checked: now,
                    cost,
                },
            );
        }
        Ok(resolved)
    }

    pub(crate) fn resolve(&self, raw: &str) -> Result<(Resolved, PathBuf, Identity), Miss> {
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
        if let Some(fast) = self.resolve_beneath(&segs, trailing_slash) {
            return fast;
        }
        let mut full = self.root.clone();
        for s in &segs {
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
            (Body::Mem(Arc::from(buf.into_boxed_slice())), len)
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
        let content_type = content_type_for(canon);
        let last_modified = httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(mtime_secs));
        let mut fields = Vec::with_capacity(160);
        fields.extend_from_slice(b"Content-Type: ");
        fields.extend_from_slice(content_type.as_bytes());
        fields.extend_from_slice(b"\r\nLast-Modified: ");
        fields.extend_from_slice(last_modified.as_bytes());
        fields.extend_from_slice(b"\r\nETag: ");
        fields.extend_from_slice(etag.as_bytes());
        fields.extend_from_slice(b"\r\nAccept-Ranges: bytes\r\n");
        let mut head_200 = Vec::with_capacity(fields.len() + 80);
        head_200.extend_from_slice(b"HTTP/1.1 200 OK\r\nServer: ");
        head_200.extend_from_slice(self.server_name.as_bytes());
        head_200.extend_from_slice(b"\r\n");
        head_200.extend_from_slice(&fields);
        head_200.extend_from_slice(format!("Content-Length: {len}\r\nDate: ").as_bytes());
        Ok((
            FileInfo {
                len,
                mtime_secs,
                etag,
                content_type,
                fields,
                head_200,
                body,
            },
            identity,
        ))
    }
}

impl FileInfo {
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

    fn tree() -> (PathBuf, PathBuf) {
        let base = std::env::temp_dir().join(format!("httplab-files-{}", std::process::id()));
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
        FileCache::new(
            root.to_path_buf(),
            "t",
            1 << 20,
            1 << 20,
            Duration::from_secs(1),
            false,
        )
    }

    fn body(r: &Result<(Resolved, PathBuf, Identity), Miss>) -> Option<(Vec<u8>, PathBuf)> {
        match r {
            Ok((Resolved::File(f), p, _)) => match &f.body {
                Body::Mem(m) => Some((m.to_vec(), p.clone())),
                Body::Fd(_) => None,
            },
            _ => None,
        }
    }

    /// The openat2 fast path settles plain files itself, leaves every
    /// symlink and directory to the careful path, and both give the same
    /// answers; with the fast path switched off the results are identical.
    #[test]
    fn fast_path_agrees_with_the_careful_path() {
        let (base, root) = tree();
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
            let (a, b) = (fast.resolve(raw), slow.resolve(raw));
            assert_eq!(body(&a), body(&b), "{raw}");
            assert_eq!(a.as_ref().err(), b.as_ref().err(), "{raw}");
        }
        assert_eq!(body(&fast.resolve("/escape")), None);
        let _ = std::fs::remove_dir_all(base);
    }
}
