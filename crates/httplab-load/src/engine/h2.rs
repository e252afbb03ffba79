//! The engine's HTTP/2 side (`--http2`): the same slots, sockets, TLS and
//! session machine as HTTP/1.1, with `H2Conn` (`h2proto.rs`) instead of
//! `H1Conn`. A session's calls become streams on its connection (up to the
//! server's stream limit; beyond it they wait in the slot), the machine's
//! events become statistics and session events, and every stream has its
//! own `--timeout` and `--max-response-time`.

use std::time::Instant;

use httplab_wire::response::{Framing, ResponseInfo};

use crate::h1::Pending;
use crate::h2proto::{self, reason_index, Event, H2Error};
use crate::record;
use crate::stats::ErrClass;

use super::Worker;

impl Worker<'_> {
    /// Sends call `p` on slot `idx`'s HTTP/2 connection: a stream now, or a
    /// wait for one; after the server's GOAWAY the call is refused (made
    /// again on a new connection).
    pub(super) fn h2_send(&mut self, idx: usize, p: Pending, now: Instant) {
        self.tally.of(p.measured).h2.streams.started += 1;
        let s = &mut self.slots[idx];
        if s.wire.h2.as_ref().is_some_and(|h| h.going_away()) {
            self.h2_refused(idx, &p, now);
            return;
        }
        s.wire.h2_wait.push_back(p);
        self.h2_open_waiting(idx, now);
    }

    /// A call the server did not process and will not: no longer counted as
    /// sent, and the session told (it makes the call again on a new
    /// connection).
    fn h2_refused(&mut self, idx: usize, p: &Pending, now: Instant) {
        let st = self.tally.of(p.measured);
        st.h2.streams.started = st.h2.streams.started.saturating_sub(1);
        st.h2.streams.retried += 1;
        self.tally.take_back(p);
        self.slots[idx].sess.refused(&self.rules, now);
    }

    /// Calls waiting for a stream get one, in order, while the server's
    /// limit allows; their time waiting counts only in the corrected latency.
    fn h2_open_waiting(&mut self, idx: usize, now: Instant) {
        let Some(plan) = self.h2.as_ref() else { return };
        let s = &mut self.slots[idx];
        let Some(h) = s.wire.h2.as_mut() else { return };
        while h.can_open() {
            let Some(mut p) = s.wire.h2_wait.pop_front() else {
                break;
            };
            p.sent = now;
            h.open_stream(&plan.blocks[p.req as usize], plan.body.as_deref(), p);
        }
    }

    /// Slot `idx`'s deadline: its connection's set-up, else its oldest
    /// call's `--timeout`.
    pub(super) fn h2_deadline(&mut self, idx: usize) {
        let s = &mut self.slots[idx];
        if s.connecting || s.handshaking {
            return;
        }
        s.deadline = match (s.wire.oldest(), self.reply_timeout) {
            (Some(p), Some(t)) => Some(p.sent + t),
            _ => None,
        };
    }

    /// Bytes from slot `idx`'s HTTP/2 connection. Returns false when the
    /// connection is gone.
    pub(super) fn process_h2(&mut self, idx: usize, data: &[u8], now: Instant) -> bool {
        let Some(plan) = self.h2.as_mut() else {
            return false;
        };
        let mut events = std::mem::take(&mut plan.events);
        events.clear();
        let s = &mut self.slots[idx];
        let Some(h) = s.wire.h2.as_mut() else {
            return false;
        };
        let fed = h.feed(data, now, &mut |e| events.push(e));
        let conn_id = s.conn_id;
        for e in events.drain(..) {
            let s = &self.slots[idx];
            if !s.in_use || s.conn_id != conn_id || !s.has_conn() {
                break;
            }
            self.h2_event(idx, e, now);
        }
        if let Some(plan) = self.h2.as_mut() {
            plan.events = events;
        }
        let s = &self.slots[idx];
        if !s.in_use || s.conn_id != conn_id || !s.has_conn() {
            return false;
        }
        if let Err(e) = fed {
            let st = self.tally.of(s.conn_measured);
            st.framing_errors += 1;
            if e == H2Error::Http1Answer {
                let line =
                    String::from_utf8_lossy(data.split(|&b| b == b'\r').next().unwrap_or(b""))
                        .chars()
                        .take(60)
                        .collect::<String>();
                st.h2.failed(|| format!("not an HTTP/2 server: got '{line}' (an HTTP/1.x answer to the h2c preface; use TLS with ALPN, or drop --http2)"));
            } else if st.h2.first_error.is_none() {
                st.h2.first_error = Some(e.to_string());
            }
            // The GOAWAY naming the error goes out before the close.
            self.flush(idx, now);
            self.fail(idx, ErrClass::Other, now);
            return false;
        }
        self.h2_open_waiting(idx, now);
        self.h2_deadline(idx);
        self.drive(idx, now);
        let s = &self.slots[idx];
        if s.in_use && s.conn_id == conn_id && !s.wire.output().is_empty() {
            // Acknowledgements, window top-ups, new streams.
            self.flush(idx, now);
        }
        let s = &self.slots[idx];
        s.in_use && s.conn_id == conn_id && s.has_conn()
    }

    /// One event of slot `idx`'s connection.
    fn h2_event(&mut self, idx: usize, e: Event, now: Instant) {
        match e {
            Event::Head => self.setup_done(idx),
            Event::Reply(r) => {
                let info = ResponseInfo {
                    status: r.status,
                    minor_version: 1,
                    header_bytes: r.header_bytes,
                    body_bytes: r.body,
                    chunk_overhead_bytes: 0,
                    footer_bytes: 0,
                    content_length: r.content_length,
                    framing: if r.content_length.is_some() {
                        Framing::Length
                    } else {
                        Framing::Close
                    },
                    keep_alive: true,
                };
                record::reply(&mut self.tally, &r.call, &info, r.first, now);
                self.tally.of(r.call.measured).h2.streams.completed += 1;
                let s = &mut self.slots[idx];
                s.conn_replies += 1;
                s.sess.reply(&self.rules, now, r.status, true);
            }
            Event::Reset { call, code } => {
                let st = self.tally.of(call.measured);
                st.h2.rst[reason_index(code)] += 1;
                st.h2.streams.failed += 1;
                self.tally.error(call.measured, ErrClass::Other);
                self.slots[idx].sess.call_failed(&self.rules, now, false);
            }
            Event::Refused { call, reset } => {
                if reset {
                    let st = self.tally.of(call.measured);
                    st.h2.rst[reason_index(h2proto::code::REFUSED_STREAM)] += 1;
                }
                self.h2_refused(idx, &call, now);
            }
            Event::GoAway { code, previous } => {
                let m = self.slots[idx].conn_measured;
                let st = self.tally.of(m);
                match previous {
                    None => st.h2.goaway_conns += 1,
                    Some(p) => {
                        let r = &mut st.h2.goaway_reasons[reason_index(p)];
                        *r = r.saturating_sub(1);
                    }
                }
                st.h2.goaway_reasons[reason_index(code)] += 1;
                // Calls still waiting for a stream will not get one here.
                while let Some(p) = self.slots[idx].wire.h2_wait.pop_front() {
                    self.h2_refused(idx, &p, now);
                }
            }
        }
    }

    /// Slot `idx`'s connection broke with calls in flight: each fails with
    /// `class`, as the stream it was; then the connection closes.
    pub(super) fn h2_lose_streams(&mut self, idx: usize, class: ErrClass, now: Instant) {
        let Some(plan) = self.h2.as_mut() else { return };
        let mut calls = std::mem::take(&mut plan.calls);
        calls.clear();
        let s = &mut self.slots[idx];
        if let Some(h) = s.wire.h2.as_mut() {
            calls.extend(h.drain_calls());
        }
        calls.extend(s.wire.h2_wait.drain(..));
        for c in &calls {
            self.tally.error(c.measured, class);
            self.tally.of(c.measured).h2.streams.failed += 1;
        }
        self.close_conn(idx, false);
        for _ in &calls {
            self.slots[idx].sess.call_failed(&self.rules, now, true);
        }
        if let Some(plan) = self.h2.as_mut() {
            plan.calls = calls;
        }
    }

    /// The oldest call of slot `idx` reached its `--timeout` (or
    /// `--max-response-time`, `class`): its stream is cancelled, the call
    /// fails, the connection goes on.
    pub(super) fn h2_stream_timeout(&mut self, idx: usize, class: ErrClass, now: Instant) {
        let s = &mut self.slots[idx];
        let Some(oldest) = s.wire.oldest().copied() else {
            return;
        };
        let gone = match s
            .wire
            .h2_wait
            .iter()
            .position(|p| p.serial == oldest.serial)
        {
            Some(i) => s.wire.h2_wait.remove(i),
            None => s.wire.h2.as_mut().and_then(|h| h.cancel(oldest.serial)),
        };
        let Some(call) = gone else { return };
        self.tally.error(call.measured, class);
        self.tally.of(call.measured).h2.streams.failed += 1;
        self.slots[idx].sess.call_failed(&self.rules, now, false);
        self.h2_open_waiting(idx, now);
        self.h2_deadline(idx);
        self.drive(idx, now);
        if self.slots[idx].in_use {
            self.flush(idx, now);
        }
    }

    /// The TLS handshake of slot `idx` ended: HTTP/2 needs ALPN "h2".
    /// Returns false (the connection failed) otherwise.
    pub(super) fn h2_alpn_ok(&mut self, idx: usize, now: Instant) -> bool {
        let s = &self.slots[idx];
        let alpn = s.tls.as_ref().and_then(|t| t.alpn_protocol());
        if alpn == Some(b"h2") {
            return true;
        }
        let why = match alpn {
            Some(p) => format!(
                "server refused h2: ALPN chose {}",
                String::from_utf8_lossy(p)
            ),
            None => "server refused h2: it chose no ALPN protocol (no HTTP/2 over TLS)".into(),
        };
        let m = s.conn_measured;
        self.tally.of(m).h2.failed(|| why);
        self.fail(idx, ErrClass::Other, now);
        false
    }

    /// Slot `idx`'s established HTTP/2 connection is closing: whether it
    /// spoke HTTP/2, and if not, why.
    pub(super) fn h2_closing(&mut self, idx: usize) {
        let s = &self.slots[idx];
        if s.connecting || s.handshaking {
            return;
        }
        let Some(h) = s.wire.h2.as_ref() else { return };
        let m = s.conn_measured;
        if h.settled() {
            self.tally.of(m).h2.connections += 1;
        } else if s.conn_replies == 0 {
            self.tally
                .of(m)
                .h2
                .failed(|| "the server did not speak HTTP/2 (no SETTINGS frame)".into());
        }
    }

    /// The run gives up on slot `idx`'s calls in flight (Ctrl-C, the drain):
    /// abandoned, or (the drain) failed as timed out.
    pub(super) fn h2_abandon(&mut self, idx: usize, interrupted: bool) {
        let s = &self.slots[idx];
        let mut n = 0u64;
        let mut measured = 0u64;
        if let Some(h) = s.wire.h2.as_ref() {
            for p in h.calls().chain(s.wire.h2_wait.iter()) {
                n += 1;
                measured += u64::from(p.measured);
            }
        }
        if interrupted {
            self.tally.st.abandoned += n;
        } else {
            for _ in 0..measured {
                self.tally.error(true, ErrClass::ClientTimo);
            }
            self.tally.st.h2.streams.failed += measured;
        }
    }
}
