//! The engine's receive path: socket reads and io_uring completions,
//! bytes into `H1Conn`, replies into the statistics and the session.

use std::io;
use std::time::{Duration, Instant};

use crate::h1::{Eof, FeedError, H1Conn, Reply};
use crate::record;
use crate::slot::{Got, Verify};
use crate::stats::ErrClass;
use crate::uring::Done;

use super::Worker;

impl Worker<'_> {
    /// io_uring: one turn's submission and wait, then its completions.
    pub(super) fn uring_turn(&mut self, wait: Option<Duration>) -> io::Result<()> {
        let Some(ring) = self.ring.as_mut() else {
            return Ok(());
        };
        let mut done = ring.turn(wait)?;
        for c in done.drain(..) {
            let Some(ev) = self.ring.as_mut().and_then(|r| r.complete(c)) else {
                continue;
            };
            let now = Instant::now();
            match ev {
                Done::Connected { slot, res } => {
                    if !self.slots[slot].in_use || !self.slots[slot].connecting {
                        continue;
                    }
                    match res {
                        Ok(()) => self.connected(slot, now),
                        Err(e) => self.fail(slot, ErrClass::from_io(&e), now),
                    }
                }
                Done::Sent { slot, id, res } => {
                    let s = &self.slots[slot];
                    if !s.in_use || s.uc != Some(id) {
                        continue;
                    }
                    match res {
                        Ok(()) => self.flush(slot, now),
                        Err(e) => self.fail(slot, ErrClass::from_io(&e), now),
                    }
                }
                Done::Recv { slot, id, res } => {
                    let s = &self.slots[slot];
                    if !s.in_use || s.uc != Some(id) {
                        continue;
                    }
                    self.uring_recv(slot, id, res, now);
                }
            }
        }
        if let Some(ring) = self.ring.as_mut() {
            ring.give_back(done);
        }
        Ok(())
    }

    /// io_uring: a RECV of slot `idx`'s connection `id` completed.
    fn uring_recv(&mut self, idx: usize, id: u32, res: io::Result<usize>, now: Instant) {
        match res {
            Ok(0) => self.on_eof(idx, now),
            Ok(n) => {
                self.count_received(idx, n);
                let Some(ring) = self.ring.as_mut() else {
                    return;
                };
                let buf = std::mem::take(ring.spare());
                let alive = self.process(idx, &buf[..n.min(buf.len())], now);
                let Some(ring) = self.ring.as_mut() else {
                    return;
                };
                *ring.spare() = buf;
                let s = &self.slots[idx];
                if alive && s.in_use && s.uc == Some(id) {
                    if let Err(e) = ring.arm_recv(id) {
                        self.fail(idx, ErrClass::from_io(&e), now);
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                if let Some(ring) = self.ring.as_mut() {
                    let _ = ring.arm_recv(id);
                }
            }
            Err(e) => self.fail(idx, ErrClass::from_io(&e), now),
        }
    }

    /// `n` bytes arrived on slot `idx`'s connection: they belong to the
    /// oldest call waiting, else to the connection.
    fn count_received(&mut self, idx: usize, n: usize) {
        let s = &self.slots[idx];
        let measured = s.wire.oldest().map_or(s.conn_measured, |p| p.measured);
        self.tally.received(measured, n as u64);
    }

    /// Reads until the socket is drained. `closed`: the peer's FIN (or an
    /// error) came with this event, so read on to see it even after a short read.
    pub(super) fn read(&mut self, idx: usize, closed: bool, now: Instant) {
        let mut buf = std::mem::take(&mut self.rbuf);
        let gen = self.slots[idx].gen;
        loop {
            let s = &mut self.slots[idx];
            if !s.in_use || s.gen != gen || s.sock.is_none() {
                break;
            }
            let is_tls = s.tls.is_some();
            match s.read(&mut buf) {
                Got::Eof if s.handshaking => {
                    self.tls_failed(idx, || {
                        "the server closed the connection during the TLS handshake (refused?)"
                            .into()
                    });
                    self.fail(idx, ErrClass::ConnReset, now);
                    break;
                }
                Got::Eof => {
                    self.on_eof(idx, now);
                    break;
                }
                Got::HandshakeDone => self.on_handshake(idx, now),
                Got::Tls(e) => {
                    // Send the alert rustls queued, then give up.
                    s.send_alert();
                    if s.handshaking {
                        if s.wire.h2.is_some()
                            && matches!(
                                e,
                                rustls::Error::AlertReceived(
                                    rustls::AlertDescription::NoApplicationProtocol
                                )
                            )
                        {
                            self.tally.of(s.conn_measured).h2.failed(|| {
                                "server refused h2: no ALPN protocol in common (alert no_application_protocol)".into()
                            });
                        }
                        self.tls_failed(idx, || crate::tls::describe_error(&e));
                    } else {
                        self.tally.of(s.conn_measured).framing_errors += 1;
                    }
                    self.fail(idx, ErrClass::Tls, now);
                    break;
                }
                Got::Data(n) => {
                    self.count_received(idx, n);
                    if !self.process(idx, &buf[..n], now) {
                        break;
                    }
                    if n < buf.len() && !closed && !is_tls {
                        // A short read drained the socket (epoll(7)): no need
                        // for one more read to see EAGAIN. (Not over TLS: a
                        // short plaintext read says nothing about the socket.)
                        break;
                    }
                }
                Got::Io(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Got::Io(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Got::Io(e) => {
                    self.fail(idx, ErrClass::from_io(&e), now);
                    break;
                }
            }
        }
        self.rbuf = buf;
        // TLS: records the handshake (or a key update) wants sent.
        let s = &self.slots[idx];
        if s.in_use && s.gen == gen && s.tls.as_ref().is_some_and(|t| t.wants_write()) {
            self.flush(idx, now);
        }
    }

    /// Feeds received bytes to the connection's HTTP/1.1 machine. Returns
    /// false when the connection is gone (closed, failed) and reading must stop.
    fn process(&mut self, idx: usize, data: &[u8], now: Instant) -> bool {
        if self.slots[idx].wire.h2.is_some() {
            return self.process_h2(idx, data, now);
        }
        // The server is serving this connection: it has left setup.
        self.setup_done(idx);
        let conn_id = self.slots[idx].conn_id;
        let mut pos = 0;
        while pos < data.len() {
            let s = &mut self.slots[idx];
            let fed = match s.wire.h1.feed(&data[pos..], now) {
                Ok(f) => f,
                Err(e) => {
                    let (measured, class) = match e {
                        FeedError::Unsolicited => (s.conn_measured, ErrClass::BodyOverrun),
                        FeedError::Malformed { measured, error } => {
                            (measured, ErrClass::from_response(error))
                        }
                    };
                    self.tally.of(measured).framing_errors += 1;
                    self.fail(idx, class, now);
                    return false;
                }
            };
            if fed.head_done {
                let status = fed
                    .reply
                    .map_or_else(|| s.wire.h1.head_status(), |r| r.info.status);
                s.verify = Verify {
                    on: self.verifier.is_some() && status == 200,
                    off: 0,
                    bad: false,
                };
            }
            if let Some((off, len)) = fed.body {
                self.verify_body(
                    idx,
                    fed.reply.map(|r| r.call.req),
                    &data[pos + off..][..len],
                );
            }
            pos += fed.consumed;
            // Progress: push the deadline out.
            self.slots[idx].deadline = self.timeout.map(|t| now + t);
            if let Some(r) = fed.reply {
                let measured = r.call.measured;
                let more_expected = self.slots[idx].wire.outstanding() > 0;
                self.on_reply(idx, r, now);
                let s = &self.slots[idx];
                let alive = s.in_use && s.has_conn() && s.conn_id == conn_id;
                if !alive {
                    if pos < data.len() && !more_expected {
                        // The connection ended after this reply, yet more
                        // bytes followed it: the server sent beyond its framing.
                        let st = self.tally.of(measured);
                        st.framing_errors += 1;
                        self.tally.error(measured, ErrClass::BodyOverrun);
                    }
                    return false;
                }
            } else if fed.consumed == 0 {
                break;
            }
        }
        true
    }

    /// `--verify-root`: compares a piece of the body being received.
    fn verify_body(&mut self, idx: usize, done_req: Option<u32>, body: &[u8]) {
        let s = &mut self.slots[idx];
        if !s.verify.on {
            return;
        }
        let front = done_req
            .or_else(|| s.wire.oldest().map(|p| p.req))
            .unwrap_or(0);
        let path = &self.ctx.plan.requests[front as usize].path;
        let vo = s.verify.off as usize;
        let ok = match self.verifier.as_mut().and_then(|v| v.file(front, path)) {
            Some(f) => f.get(vo..vo + body.len()) == Some(body),
            None => false,
        };
        if !ok {
            s.verify.bad = true;
        }
        s.verify.off += body.len() as u64;
    }

    fn on_eof(&mut self, idx: usize, now: Instant) {
        let s = &mut self.slots[idx];
        if s.wire.h2.is_some() {
            if s.wire.outstanding() > 0 {
                self.fail(idx, ErrClass::ConnReset, now);
            } else {
                self.close_conn(idx, true);
                self.slots[idx].sess.server_closed();
                self.drive(idx, now);
            }
            return;
        }
        match s.wire.h1.eof(now) {
            Eof::Idle => {
                // Idle keep-alive connection closed by the server: reconnect on demand.
                self.close_conn(idx, true);
                self.slots[idx].sess.server_closed();
                self.drive(idx, now);
            }
            // A close-delimited body ended; its reply has keep_alive
            // false, so the session closes and carries on.
            Eof::Reply(r) => self.on_reply(idx, r, now),
            Eof::Truncated => self.fail(idx, ErrClass::ConnReset, now),
            Eof::Malformed {
                measured,
                info,
                error,
            } => {
                let st = self.tally.of(measured);
                if let Some((expected, got)) = H1Conn::expected_received(&info) {
                    st.bytes_expected += expected;
                    st.body_received += got;
                }
                st.framing_errors += 1;
                self.fail(idx, ErrClass::from_response(error), now);
            }
        }
    }

    /// A reply completed: record it, tell the session, do what it says.
    fn on_reply(&mut self, idx: usize, reply: Reply, now: Instant) {
        let spec = self.ctx.spec;
        let Reply {
            call: p,
            info,
            first,
        } = reply;
        record::reply(&mut self.tally, &p, &info, first, now);
        let s = &mut self.slots[idx];
        if s.verify.on {
            let st = self.tally.of(p.measured);
            st.verified += 1;
            let path = &self.ctx.plan.requests[p.req as usize].path;
            let len = self
                .verifier
                .as_mut()
                .and_then(|v| v.file(p.req, path))
                .map(|f| f.len() as u64);
            if s.verify.bad || len != Some(s.verify.off) {
                st.mismatches += 1;
            }
            s.verify.on = false;
        }
        if spec.print_reply.any() {
            let raw = s.wire.h1.captured();
            record::print_reply(spec.print_reply, p.serial, raw, &info);
            raw.clear();
        }
        s.conn_replies += 1;
        s.deadline = if s.wire.outstanding() > 0 {
            self.reply_timeout.map(|t| now + t)
        } else {
            None
        };
        let behind = !info.keep_alive && s.wire.outstanding() > 0;
        s.sess.reply(&self.rules, now, info.status, info.keep_alive);
        if behind {
            // `Connection: close`: the server processes no request after
            // this one (RFC 9112 §9.6). The calls pipelined behind it go
            // again on a new connection, or (httperf's request-oriented
            // connections) are not made.
            let retried = !self.slots[idx].sess.ending();
            self.take_back_unanswered(idx, retried);
        }
        self.drive(idx, now);
    }

    /// The calls outstanding on slot `idx`'s HTTP/1.1 connection will not be
    /// answered there, and the server did not process them: they are taken
    /// back from the requests sent; `retried`: the session makes them again.
    fn take_back_unanswered(&mut self, idx: usize, retried: bool) {
        for p in self.slots[idx].wire.h1.calls() {
            self.tally.take_back(p);
            if retried {
                self.tally.of(p.measured).retried_calls += 1;
            }
        }
    }

    /// Slot `idx`'s HTTP/1.1 connection ended (the server's FIN, or a reset)
    /// before a byte of the reply to its oldest call. When it had served
    /// replies before, that is a keep-alive connection the server closed as
    /// it went idle, its close crossing these requests; RFC 9112 §9.3.1 lets
    /// a client make such an aborted sequence again on a new connection when
    /// every request in it is idempotent: they go again, counted as sent
    /// once, without an error. Returns whether it did that. Not for a
    /// connection that served nothing (a server closing at every request
    /// fails instead of being asked again), nor for httperf's
    /// request-oriented connections, which end at the server's close.
    pub(super) fn retry_unanswered(&mut self, idx: usize) -> bool {
        let plan = self.ctx.plan;
        let s = &self.slots[idx];
        let h1 = &s.wire.h1;
        if s.wire.h2.is_some()
            || plan.end_on_close
            || s.conn_replies == 0
            || h1.outstanding() == 0
            || h1.answering()
            || !h1.calls().all(|p| {
                plan.requests
                    .get(p.req as usize)
                    .is_some_and(|r| r.idempotent)
            })
        {
            return false;
        }
        self.take_back_unanswered(idx, true);
        self.close_conn(idx, true);
        self.slots[idx].sess.closed_unanswered();
        true
    }
}
