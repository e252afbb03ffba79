//! The async stream driver (`--http3`): one tokio
//! *current-thread* runtime per load thread, the main loop (arrivals from
//! `arrivals.rs`, interval ticks, the drain), each session as a future
//! obeying `session.rs` in its streams mode, and each stream's accounting
//! (requests, replies, status classes, bytes, corrected latency). What a
//! protocol adds — its connections and one request/response exchange — is a
//! [`Proto`]: `http3.rs` (`h3` over quinn, which is async). HTTP/2 does not
//! come here: it runs on the engine (`engine/h2.rs`) like HTTP/1.1.
//!
//! Accuracy: the open-loop schedule is not left to tokio's timer wheel
//! (millisecond granularity) but waits on a timerfd registered with the
//! runtime's reactor (`AsyncFd`), so arrivals start within microseconds of
//! their instant; every stream's corrected latency counts from its intended
//! instant (the arrival's scheduled time for a connection's first streams,
//! the pace schedule for paced users, the end of the previous stream or
//! think time otherwise) and lateness is recorded exactly as in the epoll
//! engine (schedule lag, late starts, setup cap waits). Think times and
//! pacing sleep on tokio's timer (1 ms granularity); their lateness is
//! measured and counted, never hidden.

use std::cell::{Cell, RefMut};
use std::io;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use bytes::Bytes;
use futures_util::stream::{FuturesUnordered, StreamExt};

use crate::arrivals::{Arrivals, Start, Turn};
use crate::clock::{us, MAX_SLEEP};
use crate::session::{Action, Call, Rules, Session};
use crate::spec::LoadSpec;
use crate::stats::{rec, ErrClass, StreamCounts, WorkerStats};
use crate::sys;
use crate::worker::{Tally, Window, WorkerCtx};

/// What a protocol gives the shared stream driver: its connections (opened,
/// closed, counted) and one exchange on a connection.
pub(crate) trait Proto {
    /// One connection in use by a session (shared with its streams).
    type Conn;
    /// The worker's statistics (never held across an await).
    fn tally(&self) -> RefMut<'_, Tally>;
    /// The statistics, at the end of the run.
    fn into_tally(self) -> Tally;
    /// Connections open now.
    fn open_conns(&self) -> u64;
    /// Connections in setup now (the open-loop arrivals' cap).
    fn setup_now(&self) -> u64;
    /// Woken when a connection leaves setup.
    fn setup_freed(&self) -> &tokio::sync::Notify;
    /// Opens a connection; on failure the error is counted there and its class returned.
    async fn connect(&self, measured: bool) -> std::result::Result<Self::Conn, ErrClass>;
    /// Closes a connection gracefully and counts what it carried.
    async fn close(&self, conn: Rc<Self::Conn>);
    /// The connection has left setup (served, or gone).
    fn setup_done(&self, conn: &Self::Conn);
    /// Moves the connection's byte counts into the statistics (as streams end).
    fn count_bytes(&self, conn: &Self::Conn, measured: bool);
    /// A reply came on the connection.
    fn replied(&self, conn: &Self::Conn);
    /// The connection is gone (its driver ended).
    fn gone(&self, conn: &Self::Conn) -> bool;
    /// The stream counters of this protocol.
    fn streams(st: &mut WorkerStats) -> &mut StreamCounts;
    /// One request/response exchange of `rq` (and `body`) on `conn`.
    async fn exchange(
        &self,
        conn: &Self::Conn,
        rq: http::Request<()>,
        body: Option<&Bytes>,
    ) -> std::result::Result<Exchange, Fail>;
}

/// What an exchange gives back.
pub(crate) struct Exchange {
    /// When the request went out (after any wait for a stream slot).
    pub sent: Instant,
    /// When the response head arrived.
    pub first: Instant,
    pub status: u16,
    pub header_bytes: u64,
    pub body_bytes: u64,
    pub content_length: Option<u64>,
}

/// Why a stream failed.
pub(crate) enum Fail {
    /// Counted as an error of this class; true: the connection failed too.
    Class(ErrClass, bool),
    /// The server did not process it (HTTP/2 GOAWAY past its last stream or
    /// REFUSED_STREAM, HTTP/3 GOAWAY or H3_REQUEST_REJECTED): the call is
    /// made again on a new connection.
    Refused,
}

/// How a stream ended.
enum StreamEnd {
    /// Answered, with this status.
    Ok(u16),
    /// Failed (reset, lost, timed out): counted as an error; `conn_lost`:
    /// the connection is gone with it.
    Failed { conn_lost: bool },
    /// Not processed by the server: the call may be made again on a new connection.
    Refused,
}

/// One worker's stream driver over protocol `P`.
pub(crate) struct Driver<'a, P: Proto> {
    ctx: &'a WorkerCtx<'a>,
    rules: Rules<'a>,
    proto: P,
    reqs: Vec<http::Uri>,
    method: http::Method,
    headers: http::HeaderMap,
    body: Option<Bytes>,
    reply_timeout: Option<Duration>,
    /// `--max-response-time`.
    max_resp: Option<Duration>,
    lag_threshold_us: u64,
    /// Streams in flight that were scheduled in the window / in all.
    inflight_measured: Cell<u64>,
    inflight: Cell<u64>,
    /// Sessions started and not yet polled: their connections are about
    /// to open, so they count as in setup for the arrivals' cap (the
    /// engine's connect counts at once; a future connects when polled).
    starting: Cell<u64>,
}

/// The runtime of one load thread: tokio current-thread, I/O and timers.
pub(crate) fn runtime() -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
}

/// A stream in flight: counted until it ends or is dropped.
struct InFlight<'w> {
    c: &'w Cell<u64>,
    m: Option<&'w Cell<u64>>,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.c.set(self.c.get().saturating_sub(1));
        if let Some(m) = self.m {
            m.set(m.get().saturating_sub(1));
        }
    }
}

impl<'a, P: Proto> Driver<'a, P> {
    /// A driver for `ctx` with at most `depth` streams per connection.
    pub fn new(ctx: &'a WorkerCtx<'a>, proto: P, depth: u32) -> Result<Driver<'a, P>> {
        let spec = ctx.spec;
        let scheme = if spec.tls.is_some() { "https" } else { "http" };
        let auth = spec.authority();
        let mut reqs = Vec::with_capacity(ctx.plan.requests.len());
        for r in &ctx.plan.requests {
            let uri = http::Uri::builder()
                .scheme(scheme)
                .authority(auth.as_str())
                .path_and_query(r.path.as_str())
                .build()
                .map_err(|e| anyhow!("request target '{}{}': {e}", auth, r.path))?;
            reqs.push(uri);
        }
        let method = http::Method::from_bytes(spec.method.as_bytes())
            .map_err(|_| anyhow!("--method '{}' is not a valid method", spec.method))?;
        let window = Window::new(ctx);
        Ok(Driver {
            ctx,
            rules: Rules::for_worker(ctx, &window, depth, true),
            proto,
            reqs,
            method,
            headers: headers(spec)?,
            body: spec.body.clone().map(Bytes::from),
            reply_timeout: ctx.reply_timeout(),
            max_resp: ctx.max_resp(),
            lag_threshold_us: ctx.lag_threshold_us(),
            inflight_measured: Cell::new(0),
            inflight: Cell::new(0),
            starting: Cell::new(0),
        })
    }

    fn tally(&self) -> RefMut<'_, Tally> {
        self.proto.tally()
    }

    fn stopped(&self) -> bool {
        self.ctx.stop.load(Ordering::Relaxed)
    }

    /// Connections in setup now, with the sessions about to open theirs.
    fn in_setup(&self) -> u64 {
        self.proto.setup_now() + self.starting.get()
    }

    /// The main loop: arrivals (`arrivals.rs`), interval ticks, the drain,
    /// the sessions.
    pub async fn run(self) -> io::Result<WorkerStats> {
        let ctx = self.ctx;
        let t0 = ctx.t0;
        let mut window = Window::new(ctx);
        let mut arrivals = Arrivals::new(ctx, &mut self.tally());
        // Precise wake-ups (arrivals, ticks, the drain): a timerfd in the reactor.
        let timer = sys::TimerFd::new()?.into_async()?;
        let mut timer_target: Option<Instant> = None;
        let mut sessions = FuturesUnordered::new();
        if t0 > Instant::now() {
            tokio::time::sleep_until(t0.into()).await;
            while Instant::now() < t0 {
                std::hint::spin_loop();
            }
        }
        loop {
            let now = Instant::now();
            if self.stopped() {
                break;
            }
            let open = self.proto.open_conns();
            window.turn(now, &mut self.tally(), open, ctx.collector);
            // Every session due now.
            loop {
                let setup = self.in_setup();
                let due = arrivals.due(now, setup, &window, &mut self.tally());
                let Some(a) = due else { break };
                self.starting.set(self.starting.get() + 1);
                sessions.push(self.session(a));
            }
            let running = !sessions.is_empty();
            match arrivals.after_turn(now, &window, self.reply_timeout, running) {
                Turn::Wait => {}
                Turn::Drained | Turn::Done => break,
            }
            // Sleep until the next thing to do (or a session progresses).
            let next = arrivals
                .wake(now, self.in_setup(), &window)
                .min(now + MAX_SLEEP);
            if timer_target != Some(next) {
                timer
                    .get_ref()
                    .arm(next.saturating_duration_since(Instant::now()))?;
                timer_target = Some(next);
            }
            tokio::select! {
                biased;
                g = timer.readable() => {
                    if let Ok(mut g) = g {
                        g.get_inner().drain();
                        g.clear_ready();
                    }
                    timer_target = None;
                }
                Some(()) = sessions.next(), if !sessions.is_empty() => {
                    // Sequential httperf runs: the next connection when one ends.
                    arrivals.ended(Instant::now(), &window);
                }
                _ = self.proto.setup_freed().notified() => {}
            }
        }
        self.give_up();
        drop(sessions);
        let open = self.proto.open_conns();
        let tally = self.proto.into_tally();
        Ok(window.finish(Instant::now(), tally, open, ctx.collector))
    }

    /// Gives up on what is still running (Ctrl-C, or the drain expired).
    fn give_up(&self) {
        let interrupted = self.stopped();
        let mut a = self.tally();
        if interrupted {
            a.st.abandoned += self.inflight.get();
        } else {
            let n = self.inflight_measured.get();
            for _ in 0..n {
                a.error(true, ErrClass::ClientTimo);
            }
            P::streams(&mut a.st).failed += n;
        }
        self.inflight.set(0);
        self.inflight_measured.set(0);
    }

    /// One session (an open-loop connection's calls, a sequential
    /// connection, a closed-loop user): its rules are `session.rs`'s; here
    /// connections open and close, streams run, waits are slept.
    async fn session(&self, start: Start) {
        let Start { arrival, sched } = start;
        // Polled: from here its connection counts in `setup_now`.
        self.starting.set(self.starting.get().saturating_sub(1));
        let r = &self.rules;
        self.tally().of(sched >= r.win).sessions.started += 1;
        let mut s = Session::new(sched);
        s.start(r, arrival, sched, Instant::now());
        let mut conn: Option<Rc<P::Conn>> = None;
        let mut inflight = FuturesUnordered::new();
        loop {
            let now = Instant::now();
            match s.poll(r, now) {
                Action::Open { measured } => match self.proto.connect(measured).await {
                    Ok(c) => {
                        conn = Some(Rc::new(c));
                        s.connected();
                    }
                    Err(_) => {
                        tokio::task::yield_now().await;
                        s.conn_failed(r, Instant::now());
                    }
                },
                Action::Send(call) => {
                    if let Some(c) = &conn {
                        inflight.push(self.stream(c.clone(), call));
                    }
                }
                Action::Close => {
                    inflight.clear();
                    if let Some(c) = conn.take() {
                        self.proto.close(c).await;
                    }
                }
                Action::Wait(t) => {
                    let end = if inflight.is_empty() {
                        tokio::time::sleep_until(t.into()).await;
                        None
                    } else {
                        tokio::select! {
                            e = inflight.next() => e,
                            _ = tokio::time::sleep_until(t.into()) => None,
                        }
                    };
                    match end {
                        Some(e) => self.stream_ended(&mut s, e, conn.as_deref()),
                        None => self.timer(&mut s),
                    }
                }
                Action::Idle => match inflight.next().await {
                    Some(e) => self.stream_ended(&mut s, e, conn.as_deref()),
                    // Nothing can happen any more (the run is stopping).
                    None => s.abandon(false),
                },
                Action::Yield => {
                    tokio::task::yield_now().await;
                    s.resume(r, Instant::now());
                }
                Action::GroupDone { start, measured } => rec(
                    &mut self.tally().of(measured).session,
                    us(now.saturating_duration_since(start)),
                ),
                Action::Reset { measured } => self.tally().error(measured, ErrClass::ConnReset),
                Action::Unsent { calls, measured } => {
                    self.tally().of(measured).unsent_calls += calls;
                }
                Action::Done(o) => {
                    self.tally().session_done(&o, Instant::now());
                    break;
                }
            }
        }
        drop(inflight);
        if let Some(c) = conn.take() {
            self.proto.close(c).await;
        }
    }

    /// A think time or paced wait is over: record how late it fired.
    fn timer(&self, s: &mut Session) {
        let now = Instant::now();
        if let Some(due) = s.timer(&self.rules, now) {
            let lag = us(now.saturating_duration_since(due.at));
            self.tally().lag(due.measured, lag, self.lag_threshold_us);
        }
    }

    fn stream_ended(&self, s: &mut Session, end: StreamEnd, conn: Option<&P::Conn>) {
        let now = Instant::now();
        let r = &self.rules;
        match end {
            StreamEnd::Ok(status) => s.reply(r, now, status, true),
            StreamEnd::Failed { conn_lost } => {
                let lost = conn_lost || conn.map_or(true, |c| self.proto.gone(c));
                s.call_failed(r, now, lost);
            }
            StreamEnd::Refused => s.refused(r, now),
        }
    }

    /// One stream: request out, response head and body in; records the reply.
    async fn stream(&self, conn: Rc<P::Conn>, call: Call) -> StreamEnd {
        let Call {
            req,
            intended,
            measured,
        } = call;
        let sent = Instant::now();
        self.inflight.set(self.inflight.get() + 1);
        if measured {
            self.inflight_measured.set(self.inflight_measured.get() + 1);
        }
        let guard = InFlight {
            c: &self.inflight,
            m: measured.then_some(&self.inflight_measured),
        };
        {
            let mut a = self.tally();
            if measured {
                a.part.requests += 1;
            }
            a.stage_sent(intended);
            let st = a.of(measured);
            st.requests += 1;
            P::streams(st).started += 1;
        }
        // --timeout bounds the whole stream here; --max-response-time too,
        // with its own class when it is the nearer limit.
        let timeo = self.reply_timeout.map(|t| sent + t);
        let limit = self.max_resp.map(|t| sent + t);
        let (deadline, late_class) = match (timeo, limit) {
            (Some(a), Some(b)) if b < a => (Some(b), ErrClass::ResponseTimo),
            (None, Some(b)) => (Some(b), ErrClass::ResponseTimo),
            (a, _) => (a, ErrClass::ClientTimo),
        };
        let rq = self.request(req as usize);
        let x = self.proto.exchange(&conn, rq, self.body.as_ref());
        let r = with_deadline(deadline, x).await;
        let now = Instant::now();
        self.proto.count_bytes(&conn, measured);
        drop(guard);
        match r.unwrap_or(Err(Fail::Class(late_class, false))) {
            Ok(x) => {
                self.proto.setup_done(&conn);
                self.proto.replied(&conn);
                self.record(&x, intended, measured, now);
                StreamEnd::Ok(x.status)
            }
            Err(Fail::Refused) => {
                // Not processed by the server: made again.
                let mut a = self.tally();
                let st = a.of(measured);
                st.requests = st.requests.saturating_sub(1);
                let c = P::streams(st);
                c.started = c.started.saturating_sub(1);
                if measured {
                    a.part.requests = a.part.requests.saturating_sub(1);
                }
                StreamEnd::Refused
            }
            Err(Fail::Class(class, conn_lost)) => {
                let mut a = self.tally();
                a.error(measured, class);
                P::streams(a.of(measured)).failed += 1;
                StreamEnd::Failed { conn_lost }
            }
        }
    }

    /// The request of plan entry `req`.
    fn request(&self, req: usize) -> http::Request<()> {
        let mut rq = http::Request::new(());
        *rq.method_mut() = self.method.clone();
        if let Some(u) = self.reqs.get(req) {
            *rq.uri_mut() = u.clone();
        }
        *rq.headers_mut() = self.headers.clone();
        rq
    }

    /// Records a complete exchange (scheduled at `intended`, ended at `now`).
    fn record(&self, x: &Exchange, intended: Instant, measured: bool, now: Instant) {
        let mut a = self.tally();
        let total_unc = us(now.saturating_duration_since(x.sent));
        if measured {
            a.part.replies += 1;
            rec(&mut a.ihist, total_unc);
        }
        let st = a.of(measured);
        P::streams(st).completed += 1;
        st.replies += 1;
        st.status.record(x.status);
        st.header_bytes += x.header_bytes;
        st.body_bytes += x.body_bytes;
        st.body_received += x.body_bytes;
        st.bytes_expected += x.content_length.unwrap_or(x.body_bytes);
        let resp_us = us(x.first.saturating_duration_since(x.sent));
        st.response_sum_us += resp_us as f64;
        st.transfer_sum_us += us(now.saturating_duration_since(x.first)) as f64;
        rec(&mut st.first_byte, resp_us);
        rec(&mut st.response_unc, total_unc);
        let corrected = us(now.saturating_duration_since(intended));
        st.record_response(corrected);
        a.stage_reply(intended, corrected, total_unc);
    }
}

/// Header bytes of a response head as the HTTP/1.1 path counts them
/// (`name: value\r\n` per field, the `:status` line).
pub(crate) fn head_bytes(h: &http::HeaderMap) -> u64 {
    h.iter()
        .map(|(n, v)| (n.as_str().len() + v.len() + 4) as u64)
        .sum::<u64>()
        + 13 // ":status: NNN\r\n"
}

/// The Content-Length of a response head, when it has a valid one.
pub(crate) fn content_length(h: &http::HeaderMap) -> Option<u64> {
    h.get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
}

/// `f`, or None when deadline `d` passes first.
pub(crate) async fn with_deadline<F: std::future::Future>(
    d: Option<Instant>,
    f: F,
) -> Option<F::Output> {
    match d {
        Some(d) => tokio::time::timeout_at(d.into(), f).await.ok(),
        None => Some(f.await),
    }
}

// ---------------------------------------------------------------- requests

fn headers(spec: &LoadSpec) -> Result<http::HeaderMap> {
    let mut h = http::HeaderMap::new();
    for (n, v) in spec.stream_header_fields()? {
        let name = http::HeaderName::from_bytes(n.as_bytes())
            .map_err(|_| anyhow!("--add-header '{n}': not a valid header name"))?;
        let value = http::HeaderValue::from_str(&v)
            .map_err(|_| anyhow!("--add-header '{n}: {v}': not a valid header value"))?;
        h.append(name, value);
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::net::SocketAddr;
    use std::sync::atomic::AtomicBool;

    use crate::plan::Plan;
    use crate::stats::Collector;

    /// A protocol whose connections never leave setup: they count as in
    /// setup from their first poll on and never answer.
    struct Stuck {
        tally: RefCell<Tally>,
        setup_now: Cell<u64>,
        freed: tokio::sync::Notify,
    }

    impl Proto for Stuck {
        type Conn = ();
        fn tally(&self) -> RefMut<'_, Tally> {
            self.tally.borrow_mut()
        }
        fn into_tally(self) -> Tally {
            self.tally.into_inner()
        }
        fn open_conns(&self) -> u64 {
            0
        }
        fn setup_now(&self) -> u64 {
            self.setup_now.get()
        }
        fn setup_freed(&self) -> &tokio::sync::Notify {
            &self.freed
        }
        async fn connect(&self, measured: bool) -> std::result::Result<(), ErrClass> {
            let t0 = Instant::now();
            self.tally().connection(measured, t0, t0);
            self.setup_now.set(self.setup_now.get() + 1);
            std::future::pending().await
        }
        async fn close(&self, _conn: Rc<()>) {}
        fn setup_done(&self, _conn: &()) {}
        fn count_bytes(&self, _conn: &(), _measured: bool) {}
        fn replied(&self, _conn: &()) {}
        fn gone(&self, _conn: &()) -> bool {
            false
        }
        fn streams(st: &mut WorkerStats) -> &mut StreamCounts {
            &mut st.h3.streams
        }
        async fn exchange(
            &self,
            _conn: &(),
            _rq: http::Request<()>,
            _body: Option<&Bytes>,
        ) -> std::result::Result<Exchange, Fail> {
            std::future::pending().await
        }
    }

    /// The cap on connections in setup holds within one turn of the
    /// stream driver as in the engine: with a cap of 1 and connections
    /// that never leave setup, one connection is opened however many
    /// arrivals a turn finds due (sessions handed out count as in setup
    /// before their future first runs).
    #[test]
    fn the_setup_cap_holds_within_a_turn() {
        let spec = crate::cli::parse_args(
            "--server 127.0.0.1 --port 80 --rate 200000 --duration 0.05 --timeout 0.02"
                .split_whitespace(),
        )
        .expect("valid test arguments");
        let plan = Plan::build(&spec);
        let stop = AtomicBool::new(false);
        let collector = Collector::new(1, 1.0);
        let addr: SocketAddr = "127.0.0.1:80".parse().expect("address");
        let ctx = WorkerCtx {
            thread: 0,
            threads: 1,
            t0: Instant::now(),
            spec: &spec,
            plan: &plan,
            addr,
            stop: &stop,
            collector: &collector,
            tls: None,
            local_addrs: &[],
            setup_cap: 1,
            uring: false,
        };
        let proto = Stuck {
            tally: RefCell::new(Tally::new(&spec, ctx.t0)),
            setup_now: Cell::new(0),
            freed: tokio::sync::Notify::new(),
        };
        let d = Driver::new(&ctx, proto, 1).expect("driver");
        let st = runtime().expect("runtime").block_on(d.run()).expect("run");
        assert_eq!(st.connections, 1, "one connection in setup at a time");
        assert_eq!(st.max_burst, 1);
        assert_eq!(st.sessions.started, 1);
        assert!(st.setup_capped >= 1, "the other arrivals waited");
    }

    #[test]
    fn authority_is_the_host_header_or_server_and_port() {
        let mut s = LoadSpec::new("127.0.0.1", 8443);
        assert_eq!(s.authority(), "127.0.0.1:8443");
        s.server = "::1".into();
        assert_eq!(s.authority(), "[::1]:8443");
        s.host_header = Some("example.org".into());
        assert_eq!(s.authority(), "example.org");
    }

    #[test]
    fn headers_drop_what_http2_and_http3_forbid_and_refuse_bad_ones() {
        let mut s = LoadSpec::new("h", 80);
        s.headers = vec![
            "Connection: keep-alive".into(),
            "Host: other".into(),
            "X-Test: 1".into(),
            "Accept-Encoding: gzip".into(),
        ];
        s.body = Some(b"abc".to_vec());
        let h = headers(&s).unwrap();
        assert!(h.get("connection").is_none());
        assert!(h.get("host").is_none());
        assert_eq!(h.get("x-test").unwrap(), "1");
        assert_eq!(h.get("accept-encoding").unwrap(), "gzip");
        assert_eq!(h.get("content-length").unwrap(), "3");
        assert!(h.get("user-agent").is_some());
        s.headers = vec!["no colon here".into()];
        assert!(headers(&s).is_err());
        s.headers = vec!["Bad Name: x".into()];
        assert!(headers(&s).is_err());
    }

    #[test]
    fn head_bytes_and_content_length() {
        let mut h = http::HeaderMap::new();
        h.insert("content-length", http::HeaderValue::from(14));
        assert_eq!(head_bytes(&h), 13 + "content-length".len() as u64 + 2 + 4);
        assert_eq!(content_length(&h), Some(14));
        h.insert("content-length", http::HeaderValue::from_static("x"));
        assert_eq!(content_length(&h), None);
    }
}
