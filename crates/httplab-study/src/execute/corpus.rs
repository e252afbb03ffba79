//! The document root a study serves: generated, deterministic content, so
//! that every body can be verified byte for byte without reading the disk.

use std::collections::HashMap;
use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};

use crate::spec::Corpus;

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Byte `i` of the generated file with `seed` (printable, newline every 64).
pub fn byte_at(seed: u64, i: u64) -> u8 {
    if i % 64 == 63 {
        return b'\n';
    }
    let r = splitmix(seed ^ (i / 8).wrapping_mul(0xD6E8_FEB8_6659_FD93));
    ALPHABET[((r >> ((i % 8) * 8)) & 63) as usize]
}

/// Seed of a path: a hash of its name, so content differs between files.
pub fn seed_of(path: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in path.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// What a path's body must be.
#[derive(Debug, Clone)]
pub enum Expected {
    /// Generated content of `size` bytes from `seed`.
    Generated {
        /// Content seed.
        seed: u64,
        /// Length.
        size: u64,
    },
    /// Literal content (HTML pages).
    Bytes(Arc<Vec<u8>>),
}

impl Expected {
    /// Body length.
    pub fn len(&self) -> u64 {
        match self {
            Expected::Generated { size, .. } => *size,
            Expected::Bytes(b) => b.len() as u64,
        }
    }
    /// True for an empty body.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Does `chunk`, found at `offset` of the body, match?
    pub fn matches(&self, offset: u64, chunk: &[u8]) -> bool {
        if offset + chunk.len() as u64 > self.len() {
            return false;
        }
        match self {
            Expected::Generated { seed, .. } => {
                let mut i = offset;
                let mut k = 0usize;
                while k < chunk.len() {
                    // One splitmix per 8-byte block, as byte_at does.
                    let block = i / 8;
                    let r = splitmix(*seed ^ block.wrapping_mul(0xD6E8_FEB8_6659_FD93));
                    let end = ((block + 1) * 8).min(offset + chunk.len() as u64);
                    while i < end {
                        let want = if i % 64 == 63 {
                            b'\n'
                        } else {
                            ALPHABET[((r >> ((i % 8) * 8)) & 63) as usize]
                        };
                        if chunk[k] != want {
                            return false;
                        }
                        i += 1;
                        k += 1;
                    }
                }
                true
            }
            Expected::Bytes(v) => {
                let o = offset as usize;
                &v[o..o + chunk.len()] == chunk
            }
        }
    }
}

/// The generated corpus: where it is and what each URL path holds.
#[derive(Debug, Clone)]
pub struct CorpusIndex {
    /// Document root.
    pub root: PathBuf,
    /// URL path → expected body.
    pub files: HashMap<String, Expected>,
    /// Target name (`/path`, `set:NAME`, `page:NAME`) → URL paths, in request order.
    pub targets: HashMap<String, Vec<String>>,
    /// Total bytes written.
    pub total_bytes: u64,
}

impl CorpusIndex {
    /// URL paths of a target, or the target itself for a plain path.
    pub fn uris(&self, target: &str) -> Vec<String> {
        match self.targets.get(target) {
            Some(v) => v.clone(),
            None => vec![target.to_string()],
        }
    }
    /// A path every server should be able to serve (readiness probe).
    pub fn probe_path(&self) -> String {
        let mut keys: Vec<&String> = self.files.keys().collect();
        keys.sort_by_key(|k| (self.files[*k].len(), (*k).clone()));
        keys.first()
            .map_or_else(|| "/".to_string(), |k| (*k).clone())
    }
}

fn page_html(name: &str, objects: u32, size: u64) -> Vec<u8> {
    let mut s = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{name}</title></head>\n<body>\n<h1>{name}</h1>\n"
    );
    for i in 0..objects {
        s.push_str(&format!(
            "<img src=\"/{name}/obj{i:03}.gif\" alt=\"object {i}\">\n"
        ));
    }
    let tail = "</body></html>\n";
    let seed = seed_of(name);
    let mut i = 0u64;
    s.push_str("<p>");
    while (s.len() + tail.len() + 5) < size as usize {
        let b = byte_at(seed, i);
        s.push(if b == b'\n' { ' ' } else { b as char });
        i += 1;
    }
    s.push_str("</p>\n");
    s.push_str(tail);
    s.into_bytes()
}

fn write_generated(path: &Path, seed: u64, size: u64) -> Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let f = fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = BufWriter::with_capacity(1 << 16, f);
    let mut buf = Vec::with_capacity(1 << 16);
    let mut i = 0u64;
    while i < size {
        buf.clear();
        let end = (i + (1 << 16)).min(size);
        buf.extend((i..end).map(|k| byte_at(seed, k)));
        debug_assert!(Expected::Generated { seed, size }.matches(i, &buf));
        w.write_all(&buf)?;
        i = end;
    }
    w.flush()?;
    Ok(())
}

/// Writes the corpus under `root` (created if needed) and indexes it.
/// Directories are made world-readable so servers that drop privileges
/// (Apache's `User`) can read them.
pub fn generate(c: &Corpus, root: &Path) -> Result<CorpusIndex> {
    fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;
    let mut idx = CorpusIndex {
        root: root.to_path_buf(),
        files: HashMap::new(),
        targets: HashMap::new(),
        total_bytes: 0,
    };
    let add = |idx: &mut CorpusIndex, url: String, exp: Expected| -> Result<()> {
        let rel = url.trim_start_matches('/');
        if rel.split('/').any(|p| p == ".." || p.is_empty()) {
            anyhow::bail!("corpus path '{url}' is not a plain relative path");
        }
        let path = root.join(rel);
        match &exp {
            Expected::Generated { seed, size } => write_generated(&path, *seed, *size)?,
            Expected::Bytes(b) => {
                if let Some(dir) = path.parent() {
                    fs::create_dir_all(dir)?;
                }
                fs::write(&path, b.as_slice())
                    .with_context(|| format!("writing {}", path.display()))?;
            }
        }
        idx.total_bytes += exp.len();
        idx.files.insert(url, exp);
        Ok(())
    };
    for f in &c.files {
        let url = format!("/{}", f.path.trim_start_matches('/'));
        add(
            &mut idx,
            url.clone(),
            Expected::Generated {
                seed: seed_of(&url),
                size: f.size.0,
            },
        )?;
        idx.targets.insert(url.clone(), vec![url]);
    }
    for s in &c.sets {
        let mut uris = Vec::new();
        for i in 0..s.count {
            let url = format!("/{}/{i:04}.bin", s.name);
            add(
                &mut idx,
                url.clone(),
                Expected::Generated {
                    seed: seed_of(&url),
                    size: s.size.0,
                },
            )?;
            uris.push(url);
        }
        idx.targets.insert(format!("set:{}", s.name), uris);
    }
    for p in &c.pages {
        let page = format!("/{}.html", p.name);
        add(
            &mut idx,
            page.clone(),
            Expected::Bytes(Arc::new(page_html(&p.name, p.objects, p.page_size.0))),
        )?;
        let mut uris = vec![page.clone()];
        for i in 0..p.objects {
            let url = format!("/{}/obj{i:03}.gif", p.name);
            add(
                &mut idx,
                url.clone(),
                Expected::Generated {
                    seed: seed_of(&url),
                    size: p.object_size.0,
                },
            )?;
            uris.push(url);
        }
        idx.targets.insert(format!("page:{}", p.name), uris);
        idx.targets.insert(page.clone(), vec![page]);
    }
    make_world_readable(root)?;
    Ok(idx)
}

/// chmod a+rX on a tree (and its parent temp dir, which `tempfile` creates 0700).
pub fn make_world_readable(root: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for entry in walk(root)? {
        let md = fs::metadata(&entry)?;
        let mode = if md.is_dir() { 0o755 } else { 0o644 };
        fs::set_permissions(&entry, fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

fn walk(root: &Path) -> Result<Vec<PathBuf>> {
    let mut out = vec![root.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        let p = out[i].clone();
        if p.is_dir() {
            for e in fs::read_dir(&p)? {
                out.push(e?.path());
            }
        }
        i += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{FileSpec, PageSpec, SetSpec, Size};

    #[test]
    fn deterministic_and_verifiable() {
        let dir = tempfile::tempdir().unwrap();
        let c = Corpus {
            files: vec![FileSpec {
                path: "a.txt".into(),
                size: Size(1000),
            }],
            sets: vec![SetSpec {
                name: "s".into(),
                count: 3,
                size: Size(100),
            }],
            pages: vec![PageSpec {
                name: "p".into(),
                objects: 2,
                object_size: Size(10),
                page_size: Size(500),
            }],
        };
        let idx = generate(&c, dir.path()).unwrap();
        let body = fs::read(dir.path().join("a.txt")).unwrap();
        assert_eq!(body.len(), 1000);
        assert!(idx.files["/a.txt"].matches(0, &body));
        assert!(idx.files["/a.txt"].matches(500, &body[500..]));
        assert!(!idx.files["/a.txt"].matches(1, &body[..10]));
        assert_eq!(idx.uris("set:s").len(), 3);
        assert_eq!(
            idx.uris("page:p"),
            vec!["/p.html", "/p/obj000.gif", "/p/obj001.gif"]
        );
        let html = fs::read(dir.path().join("p.html")).unwrap();
        assert_eq!(html.len(), 500);
        assert!(String::from_utf8(html).unwrap().contains("/p/obj001.gif"));
        let dir2 = tempfile::tempdir().unwrap();
        generate(&c, dir2.path()).unwrap();
        assert_eq!(body, fs::read(dir2.path().join("a.txt")).unwrap());
        assert_eq!(idx.probe_path(), "/p/obj000.gif");
    }
}
