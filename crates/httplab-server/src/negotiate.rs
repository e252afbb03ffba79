//! Content-coding negotiation for `--precompressed`: the request's
//! `Accept-Encoding` (RFC 9110 §12.5.3) against the codings a file has
//! sibling files for. Reads borrowed bytes, keeps five numbers, allocates
//! nothing.
//!
//! Hand-written rather than taken from a crate: the ones that parse
//! `Accept-Encoding` (headers, http-types) build a list per request, and
//! the hot path of the server allocates nothing.

use crate::config::Coding;

/// Quality values in thousandths (`q=0.5` is 500).
type Q = u16;

/// What a request's `Accept-Encoding` fields say about the codings the
/// server can produce. Only the first mention of a coding counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct AcceptEncoding {
    /// At least one `Accept-Encoding` field was sent.
    present: bool,
    /// Explicit weights of br, zstd, gzip (also `x-gzip`).
    coding: [Option<Q>; 3],
    /// Explicit weight of `identity`.
    identity: Option<Q>,
    /// Weight of `*`.
    star: Option<Q>,
}

/// Which representation to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Choice {
    /// The file itself.
    Identity,
    /// The sibling of this coding.
    Coded(Coding),
    /// Nothing acceptable and identity refused explicitly: 406.
    NotAcceptable,
}

fn slot(c: Coding) -> usize {
    match c {
        Coding::Br => 0,
        Coding::Zstd => 1,
        Coding::Gzip => 2,
    }
}

impl AcceptEncoding {
    /// Reads every `Accept-Encoding` field of a request head (`head`: the
    /// bytes the request parser validated, request line first). Several
    /// fields count as one comma-joined list (RFC 9110 §5.3).
    pub(crate) fn from_head(head: &[u8]) -> AcceptEncoding {
        let mut a = AcceptEncoding::default();
        for line in head.split(|&b| b == b'\n').skip(1) {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let Some(colon) = line.iter().position(|&b| b == b':') else {
                continue;
            };
            if line[..colon].eq_ignore_ascii_case(b"accept-encoding") {
                a.add_field(&line[colon + 1..]);
            }
        }
        a
    }

    /// Adds one field value (a comma-separated list of codings, each with
    /// an optional `;q=` weight).
    pub(crate) fn add_field(&mut self, value: &[u8]) {
        self.present = true;
        for element in value.split(|&b| b == b',') {
            let mut parts = element.split(|&b| b == b';');
            let name = trim(parts.next().unwrap_or_default());
            if name.is_empty() {
                continue;
            }
            let mut q: Q = 1000;
            let mut valid = name.iter().all(|&b| is_tchar(b));
            for p in parts {
                let p = trim(p);
                let Some(eq) = p.iter().position(|&b| b == b'=') else {
                    continue;
                };
                if trim(&p[..eq]).eq_ignore_ascii_case(b"q") {
                    match qvalue(trim(&p[eq + 1..])) {
                        Some(v) => q = v,
                        None => valid = false,
                    }
                }
            }
            if !valid {
                // A malformed element says nothing (not even a refusal).
                continue;
            }
            let target = if name.eq_ignore_ascii_case(b"br") {
                &mut self.coding[slot(Coding::Br)]
            } else if name.eq_ignore_ascii_case(b"zstd") {
                &mut self.coding[slot(Coding::Zstd)]
            } else if name.eq_ignore_ascii_case(b"gzip") || name.eq_ignore_ascii_case(b"x-gzip") {
                &mut self.coding[slot(Coding::Gzip)]
            } else if name.eq_ignore_ascii_case(b"identity") {
                &mut self.identity
            } else if name == b"*" {
                &mut self.star
            } else {
                continue;
            };
            if target.is_none() {
                *target = Some(q);
            }
        }
    }

    /// The weight of `c`: its own entry, else `*`'s, else 0.
    fn weight(&self, c: Coding) -> Q {
        self.coding[slot(c)].or(self.star).unwrap_or(0)
    }

    /// Picks among identity and the codings in `available` (server
    /// preference order): the coding of highest weight above 0, the first
    /// in server order on a tie, unless identity is weighted explicitly
    /// (or through `*`) higher. Identity not mentioned is acceptable but
    /// loses to any acceptable coding. Without any `Accept-Encoding` the
    /// file itself is sent (RFC 9110 §12.5.3 allows any coding then, but
    /// not every client copes).
    pub(crate) fn choose(&self, available: impl IntoIterator<Item = Coding>) -> Choice {
        if !self.present {
            return Choice::Identity;
        }
        let mut best: Option<(Coding, Q)> = None;
        for c in available {
            let q = self.weight(c);
            if q > 0 && best.map_or(true, |(_, b)| q > b) {
                best = Some((c, q));
            }
        }
        let identity = self.identity.or(self.star);
        match (best, identity) {
            (Some((_, q)), Some(iq)) if iq > q => Choice::Identity,
            (Some((c, _)), _) => Choice::Coded(c),
            (None, Some(0)) => Choice::NotAcceptable,
            (None, _) => Choice::Identity,
        }
    }
}

/// `qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )`.
fn qvalue(v: &[u8]) -> Option<Q> {
    let (&first, rest) = v.split_first()?;
    let frac = match rest {
        [] => &[][..],
        [b'.', f @ ..] if f.len() <= 3 => f,
        _ => return None,
    };
    let mut thousandths: Q = 0;
    let mut scale: Q = 100;
    for &d in frac {
        if !d.is_ascii_digit() {
            return None;
        }
        thousandths += Q::from(d - b'0') * scale;
        scale /= 10;
    }
    match first {
        b'0' => Some(thousandths),
        b'1' if thousandths == 0 => Some(1000),
        _ => None,
    }
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn trim(v: &[u8]) -> &[u8] {
    let s = v
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(v.len());
    let e = v
        .iter()
        .rposition(|&b| b != b' ' && b != b'\t')
        .map_or(s, |p| p + 1);
    &v[s..e.max(s)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use Choice::*;
    use Coding::*;

    fn pick(fields: &[&str], available: &[Coding]) -> Choice {
        let mut a = AcceptEncoding::default();
        for f in fields {
            a.add_field(f.as_bytes());
        }
        a.choose(available.iter().copied())
    }

    const ALL: &[Coding] = &[Br, Zstd, Gzip];

    #[test]
    fn negotiation_follows_rfc_9110() {
        let cases: &[(&[&str], &[Coding], Choice)] = &[
            // No field: the file itself.
            (&[], ALL, Identity),
            // Empty field: no coding wanted.
            (&[""], ALL, Identity),
            (&["gzip"], ALL, Coded(Gzip)),
            (&["GZip"], ALL, Coded(Gzip)),
            (&["x-gzip"], ALL, Coded(Gzip)),
            (&["gzip, br"], ALL, Coded(Br)),
            (&["gzip, deflate, br, zstd"], &[Gzip, Br], Coded(Gzip)),
            (&["gzip;q=1, br;q=0.5"], ALL, Coded(Gzip)),
            (&["gzip ; q=0.8 , br;Q=0.9"], ALL, Coded(Br)),
            (&["br;q=0"], ALL, Identity),
            (&["br;q=0"], &[Br], Identity),
            (&["br"], &[Gzip], Identity),
            (&["*"], ALL, Coded(Br)),
            (&["*"], &[Gzip], Coded(Gzip)),
            (&["*;q=0.5, br;q=0"], ALL, Coded(Zstd)),
            // Identity weighted higher than every coding wins.
            (&["gzip;q=0.5, identity"], ALL, Identity),
            (&["gzip;q=0.5, *;q=0.8"], &[Gzip], Identity),
            // Identity not mentioned loses to any acceptable coding.
            (&["gzip;q=0.1"], ALL, Coded(Gzip)),
            // Equal weights: the coding.
            (&["gzip, identity"], ALL, Coded(Gzip)),
            // 406 only when identity is refused explicitly.
            (&["identity;q=0"], &[Br], NotAcceptable),
            (&["*;q=0"], ALL, NotAcceptable),
            (&["*;q=0, identity"], ALL, Identity),
            (&["identity;q=0, gzip;q=0"], &[Gzip], NotAcceptable),
            (&["identity;q=0, gzip;q=0.001"], &[Gzip], Coded(Gzip)),
            (&["deflate"], ALL, Identity),
            // Several fields are one list; the first mention counts.
            (&["deflate", "gzip"], ALL, Coded(Gzip)),
            (&["gzip;q=0", "gzip"], ALL, Identity),
            // Malformed weights make the element say nothing.
            (&["gzip;q=2"], ALL, Identity),
            (&["gzip;q=0.5000"], ALL, Identity),
            (&["gzip;q=1.001"], ALL, Identity),
            (&["gzip;q=", "br"], ALL, Coded(Br)),
            (&["identity;q=x"], &[Br], Identity),
            (&["gzip;level=9"], ALL, Coded(Gzip)),
            (&["g zip"], ALL, Identity),
        ];
        for (fields, available, want) in cases {
            assert_eq!(
                pick(fields, available),
                *want,
                "{fields:?} of {available:?}"
            );
        }
    }

    #[test]
    fn qvalues() {
        for (v, want) in [
            ("0", Some(0)),
            ("0.", Some(0)),
            ("0.5", Some(500)),
            ("0.05", Some(50)),
            ("0.123", Some(123)),
            ("1", Some(1000)),
            ("1.000", Some(1000)),
            ("1.0001", None),
            ("1.5", None),
            ("2", None),
            ("", None),
            (".5", None),
            ("0.1234", None),
            ("0,5", None),
        ] {
            assert_eq!(qvalue(v.as_bytes()), want, "{v}");
        }
    }

    #[test]
    fn fields_are_found_in_a_head() {
        let head = b"GET /a.js HTTP/1.1\r\nHost: t\r\nACCEPT-ENCODING: identity;q=0\r\nX-Accept-Encoding: gzip\r\nAccept-Encoding:br\n\r\n";
        let a = AcceptEncoding::from_head(head);
        assert_eq!(a.choose([Br]), Coded(Br));
        assert_eq!(a.choose([Gzip]), NotAcceptable);
        let none = AcceptEncoding::from_head(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(none.choose([Gzip]), Identity);
    }

    /// Hostile input never panics and always gives one of the three answers.
    #[test]
    fn hostile_input_does_not_panic() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let alphabet = b"gzipbrzstdidentity*;=q0.15, \t\r\n:xX-\xff\x00";
        for _ in 0..20_000 {
            let mut v = Vec::new();
            for _ in 0..(x % 40) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                v.push(alphabet[(x % alphabet.len() as u64) as usize]);
            }
            let mut a = AcceptEncoding::default();
            a.add_field(&v);
            let _ = a.choose(ALL.iter().copied());
            let mut head = b"GET / HTTP/1.1\r\nAccept-Encoding:".to_vec();
            head.extend_from_slice(&v);
            let _ = AcceptEncoding::from_head(&head).choose([Gzip]);
        }
        for v in [
            &b";;;;"[..],
            b",,,",
            b"q=1",
            b";q=0",
            b"*;q",
            b"\xff;q=0.5",
            b"=;=",
        ] {
            let mut a = AcceptEncoding::default();
            a.add_field(v);
            let _ = a.choose(ALL.iter().copied());
        }
    }
}
