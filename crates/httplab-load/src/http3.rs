//! HTTP/3 (`--http3`): the `h3` crate over quinn (QUIC) as a [`Proto`] of
//! the shared stream driver (`streams.rs`): like `--http2`, one tokio
//! current-thread runtime per load thread (quinn is async), arrivals from
//! `arrivals.rs`, the `session.rs` rules in streams mode (up to
//! `--max-concurrent-streams` request streams in flight per connection),
//! statistics through `worker.rs`, the same report and JSON. Connections
//! are `h3conn.rs`'s; here is one request stream's exchange and what an
//! `h3` error means.

use std::cell::RefMut;
use std::io;
use std::rc::Rc;
use std::time::Instant;

use bytes::{Buf, Bytes};

use crate::h3conn::{conn_class, Conn, Conns};
use crate::spec::Http3Spec;
use crate::stats::{ErrClass, StreamCounts, WorkerStats};
use crate::streams::{self, Driver, Exchange, Fail, Proto};
use crate::worker::{Tally, Window, WorkerCtx};

/// Runs one worker thread's share of an HTTP/3 run.
pub(crate) fn run_worker(ctx: &WorkerCtx<'_>, h3: &Http3Spec) -> io::Result<WorkerStats> {
    let rt = streams::runtime()?;
    let window = Window::new(ctx);
    let setup = || -> anyhow::Result<_> {
        let conns = Conns::new(ctx, Tally::new(ctx.spec, ctx.t0), window.win)?;
        Driver::new(ctx, conns, h3.max_concurrent_streams)
    };
    let d = setup().map_err(|e| io::Error::other(format!("{e:#}")))?;
    rt.block_on(d.run())
}

impl Proto for Conns<'_> {
    type Conn = Conn;

    fn tally(&self) -> RefMut<'_, Tally> {
        Conns::tally(self)
    }

    fn into_tally(self) -> Tally {
        Conns::into_tally(self)
    }

    fn open_conns(&self) -> u64 {
        self.open_conns.get()
    }

    fn setup_now(&self) -> u64 {
        self.setup_now.get()
    }

    fn setup_freed(&self) -> &tokio::sync::Notify {
        &self.setup_freed
    }

    async fn connect(&self, measured: bool) -> Result<Conn, ErrClass> {
        Conns::connect(self, measured).await
    }

    async fn close(&self, conn: Rc<Conn>) {
        Conns::close(self, conn).await;
    }

    fn setup_done(&self, conn: &Conn) {
        Conns::setup_done(self, conn);
    }

    fn count_bytes(&self, conn: &Conn, measured: bool) {
        Conns::count_bytes(self, conn, measured);
    }

    fn replied(&self, conn: &Conn) {
        conn.replies.set(conn.replies.get() + 1);
    }

    fn gone(&self, conn: &Conn) -> bool {
        conn.gone()
    }

    fn streams(st: &mut WorkerStats) -> &mut StreamCounts {
        &mut st.h3.streams
    }

    /// One request stream: headers (and body) out, response head and body
    /// in. A request the server did not process comes back as [`Fail::Refused`].
    async fn exchange(
        &self,
        conn: &Conn,
        rq: http::Request<()>,
        body: Option<&Bytes>,
    ) -> Result<Exchange, Fail> {
        let fail = |e: h3::error::StreamError| self.stream_failed(conn, e);
        let mut send = conn.send.clone();
        let mut stream = send.send_request(rq).await.map_err(fail)?;
        // Sent now: a wait above for a stream credit (the server's
        // MAX_STREAMS) counts only in the corrected latency.
        let sent = Instant::now();
        if let Some(b) = body {
            stream.send_data(b.clone()).await.map_err(fail)?;
        }
        stream.finish().await.map_err(fail)?;
        let resp = stream.recv_response().await.map_err(fail)?;
        let first = Instant::now();
        let status = resp.status().as_u16();
        let header_bytes = streams::head_bytes(resp.headers());
        let content_length = streams::content_length(resp.headers());
        let mut body_bytes = 0u64;
        while let Some(mut chunk) = stream.recv_data().await.map_err(fail)? {
            let n = chunk.remaining();
            body_bytes += n as u64;
            chunk.advance(n);
        }
        Ok(Exchange {
            sent,
            first,
            status,
            header_bytes,
            body_bytes,
            content_length,
        })
    }
}

impl Conns<'_> {
    /// What a failed stream means: made again (GOAWAY, H3_REQUEST_REJECTED),
    /// a reset of this stream (counted by code), or the connection's end.
    fn stream_failed(&self, conn: &Conn, e: h3::error::StreamError) -> Fail {
        match stream_verdict(&e) {
            Verdict::Refused => Fail::Refused,
            Verdict::Reset(code) => {
                let mut a = self.tally();
                let st = a.of(conn.measured);
                *st.h3.stream_reset.entry(code).or_default() += 1;
                Fail::Class(ErrClass::Other, false)
            }
            Verdict::Connection => match conn.quic.close_reason() {
                Some(r) => Fail::Class(conn_class(&r), true),
                None => Fail::Class(ErrClass::Other, conn.gone()),
            },
        }
    }
}

/// What an `h3` stream error says.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// Not processed: make the call again.
    Refused,
    /// The server reset the stream with this code.
    Reset(u64),
    /// The connection failed (or the stream for a reason of its own).
    Connection,
}

fn stream_verdict(e: &h3::error::StreamError) -> Verdict {
    use h3::error::{Code, StreamError};
    match e {
        StreamError::RemoteClosing { .. } => Verdict::Refused,
        StreamError::RemoteTerminate { code, .. } if *code == Code::H3_REQUEST_REJECTED => {
            Verdict::Refused
        }
        StreamError::RemoteTerminate { code, .. } => Verdict::Reset(code.value()),
        _ => Verdict::Connection,
    }
}
