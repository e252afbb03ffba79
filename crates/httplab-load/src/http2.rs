//! HTTP/2 (`--http2`): the `h2` crate (framing, HPACK, flow control) as a
//! [`Proto`] of the shared stream driver (`streams.rs`: a tokio
//! current-thread runtime per load thread, arrivals, the `session.rs`
//! rules in streams mode, statistics). Connections are `h2conn.rs`'s; here
//! is one stream's exchange and what an `h2` error means.

use std::cell::RefMut;
use std::io;
use std::rc::Rc;
use std::time::Instant;

use bytes::Bytes;

use crate::h2conn::{Conn, Conns};
use crate::spec::Http2Spec;
use crate::stats::{ErrClass, StreamCounts, WorkerStats};
use crate::streams::{self, Driver, Exchange, Fail, Proto};
use crate::worker::{Tally, WorkerCtx};

/// Runs one worker thread's share of an HTTP/2 run.
pub(crate) fn run_worker(ctx: &WorkerCtx<'_>, h2: &Http2Spec) -> io::Result<WorkerStats> {
    let rt = streams::runtime()?;
    let window = crate::worker::Window::new(ctx);
    let conns = Conns::new(ctx, h2, Tally::new(ctx.spec), window.win);
    let d = Driver::new(ctx, conns, h2.max_concurrent_streams)
        .map_err(|e| io::Error::other(format!("{e:#}")))?;
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
        conn.driver.is_finished()
    }

    fn streams(st: &mut WorkerStats) -> &mut StreamCounts {
        &mut st.h2.streams
    }

    /// The request/response exchange of one stream. A stream the server did
    /// not process comes back as [`Fail::Refused`].
    async fn exchange(
        &self,
        conn: &Conn,
        rq: http::Request<()>,
        body: Option<&Bytes>,
    ) -> Result<Exchange, Fail> {
        let mut send = conn.send.clone();
        std::future::poll_fn(|cx| send.poll_ready(cx))
            .await
            .map_err(|e| stream_class(&e))?;
        // Sent now: a wait above for a stream slot (the server's
        // SETTINGS_MAX_CONCURRENT_STREAMS) counts only in the corrected latency.
        let sent = Instant::now();
        let end = body.is_none();
        let (resp, mut out) = send.send_request(rq, end).map_err(|e| stream_class(&e))?;
        if let Some(b) = body {
            out.send_data(b.clone(), true)
                .map_err(|e| stream_class(&e))?;
        }
        let resp = resp.await.map_err(|e| stream_class(&e))?;
        let first = Instant::now();
        let status = resp.status().as_u16();
        let header_bytes = streams::head_bytes(resp.headers());
        let content_length = streams::content_length(resp.headers());
        let mut body = resp.into_body();
        let mut body_bytes = 0u64;
        while let Some(chunk) = body.data().await {
            let chunk = chunk.map_err(|e| stream_class(&e))?;
            body_bytes += chunk.len() as u64;
            let _ = body.flow_control().release_capacity(chunk.len());
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

fn stream_class(e: &h2::Error) -> Fail {
    if let Some(io) = e.get_io() {
        return Fail::Class(ErrClass::from_io(io), true);
    }
    let refused = e.reason() == Some(h2::Reason::REFUSED_STREAM)
        || (e.is_go_away() && e.is_remote() && e.reason() == Some(h2::Reason::NO_ERROR));
    if refused {
        Fail::Refused
    } else {
        // A stream reset is the stream's; a GOAWAY with an error (ours or
        // the server's) ends the connection.
        Fail::Class(ErrClass::Other, e.is_go_away())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_streams_are_made_again_and_resets_are_errors() {
        assert!(matches!(
            stream_class(&h2::Error::from(h2::Reason::REFUSED_STREAM)),
            Fail::Refused
        ));
        assert!(matches!(
            stream_class(&h2::Error::from(h2::Reason::CANCEL)),
            Fail::Class(ErrClass::Other, false)
        ));
    }
}
