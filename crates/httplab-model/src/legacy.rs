//! The reading of older documents' words: a fact an older version kept as a
//! word in an `extra` map is moved into its typed field when its value
//! parses, and left in the map otherwise.

use std::collections::BTreeMap;

/// The free-form `extra` map of a configuration or an environment.
pub type Extra = BTreeMap<String, String>;

/// Moves `extra[key]` into `slot` when the slot is empty and the value
/// parses; otherwise leaves both as they are.
pub(crate) fn adopt<T>(
    slot: &mut Option<T>,
    extra: &mut Extra,
    key: &str,
    parse: impl Fn(&str) -> Option<T>,
) {
    if slot.is_some() {
        return;
    }
    if let Some(v) = extra.get(key).and_then(|s| parse(s)) {
        *slot = Some(v);
        extra.remove(key);
    }
}

/// [`adopt`] for a flag written as "true" only when set.
pub(crate) fn adopt_flag(slot: &mut bool, extra: &mut Extra, key: &str) {
    let mut v = None;
    adopt(&mut v, extra, key, |s| s.trim().parse::<bool>().ok());
    *slot |= v.unwrap_or(false);
}

/// [`adopt`] for a list written as words joined by `sep`.
pub(crate) fn adopt_list<T>(
    slot: &mut Vec<T>,
    extra: &mut Extra,
    key: &str,
    sep: &str,
    parse: impl Fn(&str) -> Option<T>,
) {
    if !slot.is_empty() {
        return;
    }
    let mut v = None;
    adopt(&mut v, extra, key, |s| {
        s.split(sep)
            .filter(|w| !w.trim().is_empty())
            .map(|w| parse(w.trim()))
            .collect::<Option<Vec<T>>>()
    });
    *slot = v.unwrap_or_default();
}

pub(crate) fn num<T: std::str::FromStr>(s: &str) -> Option<T> {
    s.trim().parse().ok()
}

pub(crate) fn text(s: &str) -> Option<String> {
    Some(s.to_string())
}
