//! Named baselines: `--save-baseline NAME FILE...` copies result files into
//! `DIR/NAME/`, `--baseline NAME` reads them back as BASE. Names are plain words (letters,
//! digits, `.`, `_`, `-`; not starting with `.`), so a name never leaves the directory.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// The default directory, under the current directory.
pub const DEFAULT_DIR: &str = ".httplab/baselines";

/// Checks a baseline name.
pub fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !ok {
        bail!("bad baseline name {name:?}: use 1 to 64 letters, digits, '.', '_' or '-', not starting with '.' (e.g. main, v1.2, before-fix)");
    }
    Ok(())
}

/// The directory of baseline `name` under `dir`.
pub fn path(dir: &Path, name: &str) -> Result<PathBuf> {
    check_name(name)?;
    Ok(dir.join(name))
}

/// Saves `files` (already checked to be results of one kind) as baseline `name`, replacing
/// an earlier baseline of that name. Returns the files written.
pub fn save(dir: &Path, name: &str, files: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let target = path(dir, name)?;
    if target.exists() {
        // Only our own files are removed: the result files of an earlier save.
        for e in std::fs::read_dir(&target)
            .with_context(|| format!("cannot read {}", target.display()))?
        {
            let p = e?.path();
            if p.extension().is_some_and(|x| x == "json") && p.is_file() {
                std::fs::remove_file(&p)
                    .with_context(|| format!("cannot replace {}", p.display()))?;
            }
        }
    }
    std::fs::create_dir_all(&target)
        .with_context(|| format!("cannot create {}", target.display()))?;
    let mut out = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let base = f.file_name().map_or_else(
            || "result.json".into(),
            |n| n.to_string_lossy().into_owned(),
        );
        let base = if base.ends_with(".json") {
            base
        } else {
            format!("{base}.json")
        };
        let dest = target.join(format!("{:03}-{base}", i + 1));
        std::fs::copy(f, &dest)
            .with_context(|| format!("cannot copy {} to {}", f.display(), dest.display()))?;
        out.push(dest);
    }
    Ok(out)
}

/// The files of baseline `name`, sorted.
pub fn files(dir: &Path, name: &str) -> Result<Vec<PathBuf>> {
    let p = path(dir, name)?;
    if !p.is_dir() {
        let known = list(dir).unwrap_or_default();
        bail!(
            "no baseline named {name:?} in {}{}",
            dir.display(),
            if known.is_empty() {
                " (save one with --save-baseline NAME FILE...)".to_string()
            } else {
                format!(" (there are: {})", known.join(", "))
            }
        );
    }
    let mut v: Vec<PathBuf> = std::fs::read_dir(&p)
        .with_context(|| format!("cannot read {}", p.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|f| f.extension().is_some_and(|x| x == "json") && f.is_file())
        .collect();
    v.sort();
    if v.is_empty() {
        bail!(
            "baseline {name:?} in {} holds no result file",
            dir.display()
        );
    }
    Ok(v)
}

/// The names of the saved baselines.
pub fn list(dir: &Path) -> Result<Vec<String>> {
    if !dir.exists() {
        return Ok(Vec::new());
    }
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| check_name(n).is_ok())
        .collect();
    v.sort();
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cannot_escape() {
        for bad in [
            "",
            "..",
            ".hidden",
            "a/b",
            "../x",
            "a b",
            "x\0",
            &"n".repeat(65),
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        for good in ["main", "v1.2", "before-fix", "run_3"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn save_list_read_replace() {
        let d = tempfile::tempdir().expect("tmp");
        let src = d.path().join("a.json");
        std::fs::write(&src, "{}").expect("write");
        let dir = d.path().join("baselines");
        assert!(files(&dir, "main").is_err());
        save(&dir, "main", &[src.clone(), src.clone()]).expect("save");
        assert_eq!(files(&dir, "main").expect("files").len(), 2);
        assert_eq!(list(&dir).expect("list"), ["main"]);
        // Saving again replaces, never accumulates.
        save(&dir, "main", &[src]).expect("save");
        assert_eq!(files(&dir, "main").expect("files").len(), 1);
        let e = files(&dir, "other").expect_err("missing");
        assert!(e.to_string().contains("there are: main"), "{e}");
    }
}
