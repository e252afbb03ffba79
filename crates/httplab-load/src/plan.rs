//! The workload compiled for the engine: every distinct request rendered to
//! bytes once, sessions as burst structures, the arrival schedule per thread.

use crate::spec::{Arrival, Dist, LoadSpec, Workload};

/// A rendered request.
#[derive(Debug, Clone)]
pub(crate) struct Req {
    pub bytes: Vec<u8>,
    pub head_len: usize,
    pub is_head: bool,
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
    /// First call of a burst goes alone, the rest after its reply (httperf sessions).
    pub first_alone: bool,
    /// Sessions keep their connection between bursts (all but request-oriented).
    pub is_session: bool,
    pub is_users: bool,
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
        let (shape, first_alone, is_session, is_users, sessions_total) = match &spec.workload {
            Workload::Requests {
                num_conns,
                num_calls,
                burst,
            } => (
                Shape::Calls {
                    total: *num_calls,
                    burst: *burst,
                    think: 0.0,
                    req: main,
                },
                false,
                false,
                false,
                *num_conns,
            ),
            Workload::Sessions {
                num_sessions,
                calls,
                burst,
                think,
            } => (
                Shape::Calls {
                    total: *calls,
                    burst: *burst,
                    think: *think,
                    req: main,
                },
                true,
                true,
                false,
                *num_sessions,
            ),
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
                            requests.push(render(spec, m, &c.uri, c.body.as_deref(), &ua));
                            calls.push(ReqSel::Fixed((requests.len() - 1) as u32));
                        }
                        bursts.push(PBurst {
                            calls,
                            think: b.think.unwrap_or(*think),
                        });
                    }
                    out.push(bursts);
                }
                (
                    Shape::Log { sessions: out },
                    true,
                    true,
                    false,
                    *num_sessions,
                )
            }
            Workload::Users {
                users,
                requests_per_user,
                think,
                ..
            } => (
                Shape::Calls {
                    total: requests_per_user.unwrap_or(u64::MAX),
                    burst: 1,
                    think: *think,
                    req: main,
                },
                false,
                true,
                true,
                Some(*users),
            ),
        };
        Plan {
            requests,
            wset: spec.wset,
            wset_base,
            list_base,
            list_len: spec.uris.len().min(u32::MAX as usize) as u32,
            shape,
            first_alone,
            is_session,
            is_users,
            pace,
            sessions_total,
            arrival: spec.arrival,
            end_on_close: !spec.reconnect && matches!(spec.workload, Workload::Requests { .. }),
            user_group,
            close_after_group,
            calls_per_session,
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

/// Share of `total` items for thread `i` of `n` (items i, i+n, i+2n, ...).
pub(crate) fn share(total: u64, i: u32, n: u32) -> u64 {
    let (i, n) = (u64::from(i), u64::from(n));
    if total <= i {
        0
    } else {
        (total - i).div_ceil(n)
    }
}

/// splitmix64: small, fast, seedable; good enough for arrival times.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Arrival times (seconds from t0) of one thread's share of an open-loop schedule.
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    dist: Dist,
    threads: u32,
    rng: Rng,
    next: f64,
}

impl Schedule {
    pub fn new(dist: Dist, thread: u32, threads: u32, seed: u64) -> Schedule {
        let mut rng =
            Rng::new(seed.wrapping_add(u64::from(thread).wrapping_mul(0xA24B_AED4_963E_E407)));
        let first = match dist {
            // Threads interleave: thread i fires at i*p, i*p + T*p, ...
            Dist::Deterministic(p) => p * f64::from(thread),
            Dist::Uniform(a, b) => {
                (a + (b - a) * rng.next_f64()) * f64::from(thread) / f64::from(threads.max(1))
            }
            Dist::Exponential(m) => -(1.0 - rng.next_f64()).ln() * m * f64::from(threads),
        };
        Schedule {
            dist,
            threads,
            rng,
            next: first,
        }
    }

    /// The next arrival, seconds from t0.
    pub fn peek(&self) -> f64 {
        self.next
    }

    /// Moves to the following arrival.
    pub fn advance(&mut self) {
        let t = f64::from(self.threads);
        let gap = match self.dist {
            Dist::Deterministic(p) => p * t,
            Dist::Uniform(a, b) => (a + (b - a) * self.rng.next_f64()) * t,
            Dist::Exponential(m) => -(1.0 - self.rng.next_f64()).ln() * m * t,
        };
        self.next += gap;
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
    fn shares_sum_to_total() {
        for total in [0u64, 1, 7, 100, 6001] {
            for n in 1..=5 {
                let s: u64 = (0..n).map(|i| share(total, i, n)).sum();
                assert_eq!(s, total);
            }
        }
    }

    #[test]
    fn deterministic_threads_interleave_exactly() {
        let p = 0.001;
        let mut all = Vec::new();
        for i in 0..3 {
            let mut s = Schedule::new(Dist::Deterministic(p), i, 3, 1);
            for _ in 0..100 {
                all.push(s.peek());
                s.advance();
            }
        }
        all.sort_by(f64::total_cmp);
        for (k, t) in all.iter().enumerate() {
            assert!((t - k as f64 * p).abs() < 1e-9, "{k}: {t}");
        }
    }

    #[test]
    fn exponential_mean_and_reproducible() {
        let mut a = Schedule::new(Dist::Exponential(0.01), 0, 1, 42);
        let mut b = Schedule::new(Dist::Exponential(0.01), 0, 1, 42);
        for _ in 0..20_000 {
            assert_eq!(a.peek(), b.peek());
            a.advance();
            b.advance();
        }
        let mean = a.peek() / 20_000.0;
        assert!((mean - 0.01).abs() < 0.0005, "mean {mean}");
        let mut u = Schedule::new(Dist::Uniform(1.0, 3.0), 0, 1, 7);
        let mut last = u.peek();
        for _ in 0..1000 {
            u.advance();
            let gap = u.peek() - last;
            assert!((1.0..3.0).contains(&gap));
            last = u.peek();
        }
    }
}
