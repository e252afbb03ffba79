//! The source text as the textual checkers read it (`function_length.rs`,
//! `module_cycles.rs`): comments and the contents of string and character
//! literals blanked, `#[cfg(test)]` items left out, braces matched.

pub(crate) fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Overwrites `text[from..to]` with spaces, newlines kept.
fn blank(text: &mut [u8], from: usize, to: usize) {
    let to = to.min(text.len());
    for b in &mut text[from..to] {
        if *b != b'\n' {
            *b = b' ';
        }
    }
}

/// The end of the raw string starting at `i` (`r`, `br`), if it is one.
fn raw_string_end(s: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    let mut hashes = 0;
    while s.get(j) == Some(&b'#') {
        hashes += 1;
        j += 1;
    }
    if s.get(j) != Some(&b'"') {
        return None;
    }
    j += 1;
    while j < s.len() {
        if s[j] == b'"'
            && s[j + 1..]
                .iter()
                .take(hashes)
                .filter(|&&b| b == b'#')
                .count()
                == hashes
        {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(s.len())
}

/// The end of the character literal starting at `i`, or `None` for a
/// lifetime or a label.
fn char_end(s: &[u8], i: usize) -> Option<usize> {
    if s.get(i + 1) == Some(&b'\\') {
        let close = s[i + 3..].iter().position(|&b| b == b'\'')?;
        return Some(i + 3 + close + 1);
    }
    let first = *s.get(i + 1)?;
    let width = match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    };
    (s.get(i + 1 + width) == Some(&b'\'')).then_some(i + 2 + width)
}

/// The source with comments and the contents of string and character
/// literals blanked (same length, same lines).
pub(crate) fn code_only(text: &str) -> Vec<u8> {
    let src = text.as_bytes();
    let mut out = src.to_vec();
    let mut i = 0;
    while i < src.len() {
        let prev_ident = i > 0 && is_ident(src[i - 1]);
        if src[i..].starts_with(b"//") {
            let end = src[i..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(src.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if src[i..].starts_with(b"/*") {
            let mut depth = 0;
            let mut j = i;
            while j < src.len() {
                if src[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if src[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if !prev_ident && (src[i] == b'r' || src[i..].starts_with(b"br")) {
            let r = if src[i] == b'r' { i } else { i + 1 };
            match raw_string_end(src, r) {
                Some(end) => {
                    blank(&mut out, i, end);
                    i = end;
                }
                None => i += 1,
            }
        } else if src[i] == b'"' {
            let mut j = i + 1;
            while j < src.len() && src[j] != b'"' {
                j += if src[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i + 1, j);
            i = j + 1;
        } else if src[i] == b'\'' {
            match char_end(src, i) {
                Some(end) => {
                    blank(&mut out, i + 1, end - 1);
                    i = end;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The index just past the brace matching the `{` at `open`.
pub(crate) fn matching_brace(code: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    for (k, &b) in code.iter().enumerate().skip(open) {
        match b {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return k + 1;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// Where the item starting at `i` opens its body (`Some` index of `{`), or
/// `None` when a `;` at depth 0 ends it first.
pub(crate) fn body_start(code: &[u8], i: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (k, &b) in code.iter().enumerate().skip(i) {
        match b {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b'{' if depth == 0 => return Some(k),
            b';' if depth == 0 => return None,
            _ => {}
        }
    }
    None
}

/// Blanks every `#[cfg(test)]` (or `#[cfg(all(test, …))]`) item, and answers
/// the text of each such item (after its attribute) as it was before.
pub(crate) fn drop_test_items(code: &mut [u8]) -> Vec<String> {
    let mut items = Vec::new();
    let mut from = 0;
    while let Some(p) = find(code, b"#[cfg(", from) {
        let rest = &code[p + 6..];
        let is_test = rest.starts_with(b"test)]") || rest.starts_with(b"all(test");
        from = p + 6;
        if !is_test {
            continue;
        }
        let attr_end = match find(code, b"]", p) {
            Some(e) => e + 1,
            None => break,
        };
        let end = match body_start(code, attr_end) {
            Some(open) => matching_brace(code, open),
            None => find(code, b";", attr_end).map_or(code.len(), |e| e + 1),
        };
        items.push(String::from_utf8_lossy(&code[attr_end..end]).into_owned());
        blank(code, p, end);
    }
    items
}

pub(crate) fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| from + p)
}
