//! The workload compiled for the drivers: every distinct request rendered to
//! bytes once, sessions as burst structures, which request each call sends.
//! When sessions and calls are due is `arrivals.rs` (the schedule:
//! `arrivals/schedule.rs`).

use crate::spec::{Arrival, Dist, LoadSpec, Workload};

/// A rendered request.
#[derive(Debug, Clone)]
pub(crate) struct Req {
    pub bytes: Vec<u8>,
    pub head_len: usize,
    pub is_head: bool,
    /// Its method is idempotent (RFC 9110 §9.2.2): a request the server
    /// closed the connection on without answering may be made again.
    pub idempotent: bool,
    pub path: String,
}

/// Which request a call sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReqSel {
    Fixed(u32),
    /// Next file of the --wset walk.
    Wset,
    /// Next path of the --uri-list rotation.
    List,
}

#[derive(Debug, Clone)]
pub(crate) struct PBurst {
    pub calls: Vec<ReqSel>,
    pub think: f64,
}

#[derive(Debug, Clone)]
pub(crate) enum Shape {
    /// Uniform calls: `total` calls (u64::MAX: until the run ends) in bursts of `burst`.
    Calls {
        total: u64,
        burst: u32,
        think: f64,
        req: ReqSel,
    },
    /// Session-log sessions, chosen round-robin.
    Log { sessions: Vec<Vec<PBurst>> },
}

#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub requests: Vec<Req>,
    pub wset: Option<(u64, f64)>,
    pub wset_base: u32,
    /// First request of the --uri-list paths and their number (0: no list).
    pub list_base: u32,
    pub list_len: u32,
    pub shape: Shape,
    /// What a session of the run is (from the workload's kind).
    pub kind: SessionKind,
    /// Paced users: the schedule of all users' requests.
    pub pace: Option<(Dist, u64)>,
    /// Total sessions (None: until --duration ends).
    pub sessions_total: Option<u64>,
    pub arrival: Arrival,
    /// A server close ends a request-oriented connection (httperf) instead
    /// of carrying its remaining calls over to a new connection.
    pub end_on_close: bool,
    /// Closed-loop users: calls of one user session (the session-time row);
    /// with `close_after_group`, the user then closes its connection.
    pub user_group: Option<u64>,
    pub close_after_group: bool,
    /// Calls of a request-oriented session (its connection's calls).
    pub calls_per_session: Option<u64>,
    /// `--client I/N`: this machine runs shard I of N of the schedule.
    pub shard: (u32, u32),
    /// Closed-loop users: their number (the stride of the global call index).
    pub users: u64,
    /// `--stages`: the offered rate's time change of the schedule.
    pub stages: Option<std::sync::Arc<crate::stages::Curve>>,
}

pub(crate) fn wset_path(prefix: &str, n: u64, i: u64) -> String {
    let digits = (n.saturating_sub(1)).max(1).to_string().len();
    let num = format!("{i:0digits$}");
    let mut p = prefix.trim_end_matches('/').to_string();
    for (k, c) in num.chars().enumerate() {
        p.push('/');
        p.push(c);
        if k + 1 == num.len() {
            p.push_str(".html");
        }
    }
    p
}

fn render(spec: &LoadSpec, method: &str, uri: &str, body: Option<&[u8]>, ua: &str) -> Req {
    let mut s = format!(
        "{method} {uri} HTTP/{}\r\nUser-Agent: {ua}\r\n",
        spec.http_version
    );
    if !spec.no_host_hdr {
        let host = spec
            .host_header
            .clone()
            .unwrap_or_else(|| spec.server.clone());
        s.push_str(&format!("Host: {host}\r\n"));
    }
    for h in &spec.headers {
        s.push_str(h);
        s.push_str("\r\n");
    }
    if let Some(b) = body {
        s.push_str(&format!("Content-Length: {}\r\n", b.len()));
    }
    s.push_str("\r\n");
    let head_len = s.len();
    let mut bytes = s.into_bytes();
    if let Some(b) = body {
        bytes.extend_from_slice(b);
    }
    Req {
        bytes,
        head_len,
        is_head: method.eq_ignore_ascii_case("HEAD"),
        idempotent: ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]
            .iter()
            .any(|m| method.eq_ignore_ascii_case(m)),
        path: uri.to_string(),
    }
}

impl Plan {
    pub fn build(spec: &LoadSpec) -> Plan {
        let ua = format!("httplab/{}", env!("CARGO_PKG_VERSION"));
        let mut requests = vec![render(
            spec,
            &spec.method,
            &spec.uri,
            spec.body.as_deref(),
            &ua,
        )];
        let mut wset_base = 0;
        if let Some((n, _)) = spec.wset {
            wset_base = requests.len() as u32;
            for i in 0..n {
                let p = wset_path(&spec.uri, n, i);
                requests.push(render(spec, &spec.method, &p, spec.body.as_deref(), &ua));
            }
        }
        let mut list_base = 0;
        if !spec.uris.is_empty() {
            list_base = requests.len() as u32;
            for u in &spec.uris {
                requests.push(render(spec, &spec.method, u, spec.body.as_deref(), &ua));
            }
        }
        let main = if spec.wset.is_some() {
            ReqSel::Wset
        } else if !spec.uris.is_empty() {
            ReqSel::List
        } else {
            ReqSel::Fixed(0)
        };
        let (user_group, close_after_group) = match &spec.workload {
            Workload::Users {
                requests_per_user, ..
            } => match spec.calls_per_conn {
                Some(n) => (Some(n), true),
                None => (*requests_per_user, false),
            },
            _ => (None, false),
        };
        let calls_per_session = match &spec.workload {
            Workload::Requests { num_calls, .. } => Some(*num_calls),
            _ => None,
        };
        let pace = match &spec.workload {
            Workload::Users { pace, users, .. } => pace.map(|d| (d, *users)),
            _ => None,
        };
        let Shaped {
            shape,
            kind,
            sessions_total,
        } = shape_of(spec, main, &mut requests, &ua);
        Plan {
            requests,
            wset: spec.wset,
            wset_base,
            list_base,
            list_len: spec.uris.len().min(u32::MAX as usize) as u32,
            shape,
            kind,
            pace,
            sessions_total,
            arrival: spec.arrival,
            end_on_close: !spec.reconnect && matches!(spec.workload, Workload::Requests { .. }),
            user_group,
            close_after_group,
            calls_per_session,
            shard: spec.client,
            users: match &spec.workload {
                Workload::Users { users, .. } => *users,
                _ => 0,
            },
            stages: (!spec.stages.is_empty())
                .then(|| std::sync::Arc::new(crate::stages::Curve::new(&spec.stages))),
        }
    }

    /// The request call `sent` of burst `burst` of arrival `arrival` (its
    /// global index in the whole run's schedule) sends.
    ///
    /// `--wset` walks and `--uri-list` rotations are functions of the call's
    /// global index (see [`Plan::call_index`]), not of a per-thread cursor,
    /// so that every shard and thread picks exactly the path the one-machine
    /// run picks for the same call, and a retried call asks for the same path.
    pub fn req_for(&self, sel: ReqSel, arrival: u64, burst: u64, sent: u32) -> u32 {
        match sel {
            ReqSel::Fixed(r) => r,
            ReqSel::Wset => {
                let (n, x) = self.wset.unwrap_or((1, 0.0));
                let c = self.call_index(arrival, burst, sent);
                // The walk moves on by x files per call: after c + 1 calls it
                // is at floor((c + 1) x), the position httperf's accumulator
                // reaches (x = 1: a new file every call).
                let pos = ((c as f64 + 1.0) * x).floor();
                let pos = if pos.is_finite() && pos >= 0.0 {
                    pos as u64
                } else {
                    0
                };
                self.wset_base + (pos % n.max(1)) as u32
            }
            ReqSel::List => {
                let n = u64::from(self.list_len.max(1));
                let c = self.call_index(arrival, burst, sent);
                self.list_base + (c % n) as u32
            }
        }
    }

    /// Global index of a call: closed-loop user u's j-th request is
    /// `j * users + u` (the users take turns); call j of open-loop session k
    /// (C calls each) is `k * C + j`. Unique per call, independent of threads
    /// and shards.
    pub fn call_index(&self, arrival: u64, burst: u64, sent: u32) -> u64 {
        match self.shape {
            Shape::Calls {
                total, burst: b, ..
            } => {
                let j = burst
                    .saturating_mul(u64::from(b))
                    .saturating_add(u64::from(sent));
                if self.kind.is_users() {
                    j.saturating_mul(self.users.max(1)).saturating_add(arrival)
                } else {
                    arrival.saturating_mul(total).saturating_add(j)
                }
            }
            Shape::Log { .. } => arrival,
        }
    }

    /// Length of burst `b` of session template `tmpl`, None when the session is over.
    pub fn burst_len(&self, tmpl: usize, b: u64) -> Option<u32> {
        match &self.shape {
            Shape::Calls { total, burst, .. } => {
                let start = b.checked_mul(u64::from(*burst))?;
                if start >= *total {
                    None
                } else {
                    Some((*total - start).min(u64::from(*burst)) as u32)
                }
            }
            Shape::Log { sessions } => {
                let s = &sessions[tmpl % sessions.len()];
                s.get(b as usize).map(|x| x.calls.len() as u32)
            }
        }
    }

    /// Think time after burst `b`.
    pub fn think_after(&self, tmpl: usize, b: u64) -> f64 {
        match &self.shape {
            Shape::Calls { think, .. } => *think,
            Shape::Log { sessions } => sessions[tmpl % sessions.len()]
                .get(b as usize)
                .map_or(0.0, |x| x.think),
        }
    }

    /// Request selector of call `j` of burst `b`.
    pub fn call(&self, tmpl: usize, b: u64, j: u32) -> ReqSel {
        match &self.shape {
            Shape::Calls { req, .. } => *req,
            Shape::Log { sessions } => sessions[tmpl % sessions.len()]
                .get(b as usize)
                .and_then(|x| x.calls.get(j as usize))
                .copied()
                .unwrap_or(ReqSel::Fixed(0)),
        }
    }

    pub fn templates(&self) -> usize {
        match &self.shape {
            Shape::Calls { .. } => 1,
            Shape::Log { sessions } => sessions.len().max(1),
        }
    }
}

/// What a run's sessions are, from the workload's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SessionKind {
    /// httperf's request-oriented connections (`--num-conns`): no
    /// session between bursts.
    Connections,
    /// httperf sessions (`--wsess`, `--wsesslog`): a burst's first call
    /// goes alone, the rest after its reply; the connection is kept
    /// between bursts.
    HttperfSessions,
    /// Closed-loop users (`--users`): sessions that keep their connection.
    Users,
}

impl SessionKind {
    /// A burst's first call goes alone, the rest after its reply.
    pub fn first_alone(self) -> bool {
        self == SessionKind::HttperfSessions
    }

    /// Sessions keep their connection between bursts.
    pub fn is_session(self) -> bool {
        self != SessionKind::Connections
    }

    /// Closed-loop users.
    pub fn is_users(self) -> bool {
        self == SessionKind::Users
    }
}

/// [`shape_of`]'s answer.
struct Shaped {
    shape: Shape,
    kind: SessionKind,
    /// Sessions in all (None: until --duration ends).
    sessions_total: Option<u64>,
}

/// The shape of the workload's sessions, their kind and their number; a
/// session log's requests are rendered into `requests`.
fn shape_of(spec: &LoadSpec, main: ReqSel, requests: &mut Vec<Req>, ua: &str) -> Shaped {
    match &spec.workload {
        Workload::Requests {
            num_conns,
            num_calls,
            burst,
        } => Shaped {
            shape: Shape::Calls {
                total: *num_calls,
                burst: *burst,
                think: 0.0,
                req: main,
            },
            kind: SessionKind::Connections,
            sessions_total: *num_conns,
        },
        Workload::Sessions {
            num_sessions,
            calls,
            burst,
            think,
        } => Shaped {
            shape: Shape::Calls {
                total: *calls,
                burst: *burst,
                think: *think,
                req: main,
            },
            kind: SessionKind::HttperfSessions,
            sessions_total: *num_sessions,
        },
        Workload::SessionLog {
            num_sessions,
            think,
            sessions,
            ..
        } => {
            let mut out = Vec::new();
            for s in sessions {
                let mut bursts = Vec::new();
                for b in s {
                    let mut calls = Vec::new();
                    for c in &b.calls {
                        let m = c.method.as_deref().unwrap_or(&spec.method);
                        requests.push(render(spec, m, &c.uri, c.body.as_deref(), ua));
                        calls.push(ReqSel::Fixed((requests.len() - 1) as u32));
                    }
                    bursts.push(PBurst {
                        calls,
                        think: b.think.unwrap_or(*think),
                    });
                }
                out.push(bursts);
            }
            Shaped {
                shape: Shape::Log { sessions: out },
                kind: SessionKind::HttperfSessions,
                sessions_total: *num_sessions,
            }
        }
        Workload::Users {
            users,
            requests_per_user,
            think,
            burst,
            ..
        } => Shaped {
            shape: Shape::Calls {
                total: requests_per_user.unwrap_or(u64::MAX),
                burst: (*burst).max(1),
                think: *think,
                req: main,
            },
            kind: SessionKind::Users,
            sessions_total: Some(*users),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wset_names_like_httperf() {
        assert_eq!(wset_path("/f", 500, 0), "/f/0/0/0.html");
        assert_eq!(wset_path("/f/", 500, 12), "/f/0/1/2.html");
        assert_eq!(wset_path("/index.html", 10, 3), "/index.html/3.html");
        assert_eq!(wset_path("/f", 12000, 1), "/f/0/0/0/0/1.html");
    }

    #[test]
    fn wset_and_list_follow_the_global_call() {
        let mut spec = LoadSpec::new("h", 80);
        spec.wset = Some((4, 1.0));
        spec.workload = Workload::Requests {
            num_conns: Some(10),
            num_calls: 2,
            burst: 1,
        };
        let p = Plan::build(&spec);
        let w: Vec<u32> = (0..3)
            .flat_map(|k| (0..2).map(move |j| (k, j)))
            .map(|(k, j)| p.req_for(ReqSel::Wset, k, j, 0) - p.wset_base)
            .collect();
        assert_eq!(w, vec![1, 2, 3, 0, 1, 2]);
        assert_eq!(p.req_for(ReqSel::Fixed(0), 5, 1, 0), 0);
    }
}
