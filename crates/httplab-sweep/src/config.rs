//! autobench's configuration file (`--config FILE`, else `~/.autobench.conf`
//! unless `--no-config`): `key = value` lines whose values the command line
//! overrides, and whose `httperf_*` keys and `add_header` go to the load
//! generator, as autobench passes them.

use anyhow::{anyhow, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Reads an autobench configuration file: `key = value` lines, `#` comments.
/// The first definition of a key wins, as in autobench.
pub fn parse_config(text: &str) -> (BTreeMap<String, String>, Vec<String>) {
    let mut map = BTreeMap::new();
    let mut warnings = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let Some((k, v)) = l.split_once('=') else {
            warnings.push(format!("line {}: not a 'key = value' line: '{l}'", n + 1));
            continue;
        };
        let k = k.trim();
        let v = v.trim();
        let key_ok = k.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !key_ok || v.is_empty() {
            warnings.push(format!("line {}: not a 'key = value' line: '{l}'", n + 1));
            continue;
        }
        if map.contains_key(k) {
            warnings.push(format!(
                "line {}: '{k}' defined more than once, keeping the first",
                n + 1
            ));
            continue;
        }
        map.insert(k.to_string(), v.to_string());
    }
    (map, warnings)
}

/// A true value in the file: anything but empty, `0`, `no`, `false`, `off`.
fn truthy(v: &str) -> bool {
    !matches!(v.trim(), "" | "0" | "no" | "false" | "off")
}

/// The text of the configuration file read, and the name to report it by.
struct ConfigText {
    text: String,
    name: String,
}

/// Reads `explicit` (an error when unreadable), else, with `read_home`,
/// `~/.autobench.conf` when it exists (nothing when it cannot be read).
fn read_config_text(explicit: Option<&Path>, read_home: bool) -> Result<Option<ConfigText>> {
    if let Some(p) = explicit {
        let text = std::fs::read_to_string(p)
            .with_context(|| format!("cannot read config file {}", p.display()))?;
        return Ok(Some(ConfigText {
            text,
            name: p.display().to_string(),
        }));
    }
    if !read_home {
        return Ok(None);
    }
    let home_file: Option<PathBuf> =
        std::env::var_os("HOME").map(|h| Path::new(&h).join(".autobench.conf"));
    let Some(home_file) = home_file.filter(|p| p.is_file()) else {
        return Ok(None);
    };
    Ok(std::fs::read_to_string(&home_file)
        .ok()
        .map(|text| ConfigText {
            text,
            name: home_file.display().to_string(),
        }))
}

/// The values of the configuration file by autobench's key names; empty when
/// no file was read.
#[derive(Debug, Default)]
pub(crate) struct ConfigValues {
    values: BTreeMap<String, String>,
}

impl ConfigValues {
    /// Reads `explicit`, else (with `read_home`) `~/.autobench.conf`; says
    /// which file it read unless `quiet`, and prints the file's warnings.
    pub(crate) fn load(explicit: Option<&Path>, read_home: bool, quiet: bool) -> Result<Self> {
        let Some(file) = read_config_text(explicit, read_home)? else {
            return Ok(ConfigValues::default());
        };
        let (values, warnings) = parse_config(&file.text);
        if !quiet {
            eprintln!("httplab sweep: reading configuration from {}", file.name);
        }
        for w in &warnings {
            eprintln!("httplab sweep: warning: {}: {w}", file.name);
        }
        Ok(ConfigValues { values })
    }

    /// The value of `key`, if the file sets it.
    pub(crate) fn text(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// The value of `key` as a number; an error naming the key when it is not one.
    pub(crate) fn number(&self, key: &str) -> Result<Option<f64>> {
        match self.text(key) {
            None => Ok(None),
            Some(v) => v
                .parse::<f64>()
                .map(Some)
                .map_err(|_| anyhow!("config: {key} = '{v}' is not a number")),
        }
    }

    /// Whether the file sets `key` to a true value.
    pub(crate) fn is_true(&self, key: &str) -> bool {
        self.text(key).is_some_and(truthy)
    }

    /// The load-generator options the file carries, as autobench passes them:
    /// each `httperf_NAME = VALUE` as `--NAME VALUE` (`NULL`: the bare flag),
    /// then `add_header` as `--add-header VALUE`.
    pub(crate) fn load_options(&self) -> Vec<String> {
        let mut options = Vec::new();
        for (k, v) in &self.values {
            if let Some(opt) = k.strip_prefix("httperf_") {
                options.push(format!("--{}", opt.replace('_', "-")));
                if v != "NULL" {
                    options.push(v.clone());
                }
            }
        }
        if let Some(h) = self.text("add_header") {
            if !h.trim().is_empty() {
                options.push("--add-header".into());
                options.push(h.to_string());
            }
        }
        options
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_warnings() {
        let (m, w) = parse_config("a = 1\na = 2\nnonsense\n  # c\n");
        assert_eq!(m.get("a").map(String::as_str), Some("1"));
        assert_eq!(w.len(), 2);
    }

    #[test]
    fn httperf_keys_and_add_header_become_load_options() {
        let (values, _) = parse_config(
            "httperf_hog = NULL\nhttperf_send_buffer = 4096\nadd_header = X-A: 1\nlow_rate = 10\n",
        );
        let conf = ConfigValues { values };
        assert_eq!(
            conf.load_options(),
            ["--hog", "--send-buffer", "4096", "--add-header", "X-A: 1"]
        );
        assert_eq!(conf.number("low_rate").unwrap(), Some(10.0));
        assert!(conf.number("add_header").is_err());
        assert!(!conf.is_true("quiet"));
    }
}
