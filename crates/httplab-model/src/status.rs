//! Replies counted by status class (`reply.status`).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Replies by status class, 1xx to 5xx (`ReplyStats::status`).
///
/// Written as httperf's five counts in class order, `[1xx, 2xx, 3xx, 4xx,
/// 5xx]`, the form every reader of `httplab.run/1` knows; read from that
/// array or from an object with the field names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatusClasses {
    /// 1xx replies.
    pub informational: u64,
    /// 2xx replies.
    pub success: u64,
    /// 3xx replies.
    pub redirect: u64,
    /// 4xx replies.
    pub client_error: u64,
    /// 5xx replies.
    pub server_error: u64,
}

impl StatusClasses {
    /// Counts one reply with status `code`; a code outside 100..=599 counts
    /// in no class.
    pub fn record(&mut self, code: u16) {
        if let Some(c) = self.class_mut(code) {
            *c += 1;
        }
    }

    /// The counter of `code`'s class, None outside 100..=599.
    pub fn class_mut(&mut self, code: u16) -> Option<&mut u64> {
        match code / 100 {
            1 => Some(&mut self.informational),
            2 => Some(&mut self.success),
            3 => Some(&mut self.redirect),
            4 => Some(&mut self.client_error),
            5 => Some(&mut self.server_error),
            _ => None,
        }
    }

    /// The class sums of two blocks (threads, shards).
    pub fn add(&self, o: &StatusClasses) -> StatusClasses {
        StatusClasses {
            informational: self.informational + o.informational,
            success: self.success + o.success,
            redirect: self.redirect + o.redirect,
            client_error: self.client_error + o.client_error,
            server_error: self.server_error + o.server_error,
        }
    }

    /// Replies of every class.
    pub fn total(&self) -> u64 {
        self.as_array().iter().sum()
    }

    /// Replies outside 2xx.
    pub fn not_success(&self) -> u64 {
        self.total() - self.success
    }

    /// The five counts in class order, 1xx first (the wire form).
    pub fn as_array(&self) -> [u64; 5] {
        [
            self.informational,
            self.success,
            self.redirect,
            self.client_error,
            self.server_error,
        ]
    }

    /// From the five counts in class order, 1xx first.
    pub fn from_array(a: [u64; 5]) -> StatusClasses {
        let [informational, success, redirect, client_error, server_error] = a;
        StatusClasses {
            informational,
            success,
            redirect,
            client_error,
            server_error,
        }
    }
}

impl Serialize for StatusClasses {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.as_array().serialize(s)
    }
}

/// The named form a reader also accepts.
#[derive(Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Named {
    informational: u64,
    success: u64,
    redirect: u64,
    client_error: u64,
    server_error: u64,
}

struct ClassesVisitor;

impl<'de> serde::de::Visitor<'de> for ClassesVisitor {
    type Value = StatusClasses;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("five status-class counts [1xx, 2xx, 3xx, 4xx, 5xx] or an object of them")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<StatusClasses, A::Error> {
        let a = <[u64; 5]>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))?;
        Ok(StatusClasses::from_array(a))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<StatusClasses, A::Error> {
        let n = Named::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
        Ok(StatusClasses {
            informational: n.informational,
            success: n.success,
            redirect: n.redirect,
            client_error: n.client_error,
            server_error: n.server_error,
        })
    }
}

impl<'de> Deserialize<'de> for StatusClasses {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ClassesVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_count_in_their_class() {
        let mut s = StatusClasses::default();
        for c in [100, 200, 204, 301, 404, 503, 599, 99, 600, 0] {
            s.record(c);
        }
        assert_eq!(s.as_array(), [1, 2, 1, 1, 2]);
        assert_eq!((s.total(), s.not_success()), (7, 5));
    }

    #[test]
    fn written_as_the_array_and_read_from_both_forms() {
        let s = StatusClasses::from_array([1, 2, 3, 4, 5]);
        assert_eq!(serde_json::to_string(&s).unwrap(), "[1,2,3,4,5]");
        let a: StatusClasses = serde_json::from_str("[1,2,3,4,5]").unwrap();
        assert_eq!(a, s);
        assert_eq!(a.client_error, 4);
        let n: StatusClasses = serde_json::from_str(
            r#"{"informational":1,"success":2,"redirect":3,"client_error":4,"server_error":5}"#,
        )
        .unwrap();
        assert_eq!(n, s);
        assert!(serde_json::from_str::<StatusClasses>("[1,2,3]").is_err());
    }
}
