//! The HTTP/2 client connection as a state machine without I/O (RFC 9113),
//! the twin of `h1.rs`.
//!
//! [`H2Conn`] knows frames, streams, flow control and header compression and
//! nothing else: the driver opens a stream per call ([`H2Conn::open_stream`],
//! with a header block encoded once per request by [`request_block`]), takes
//! the bytes to write ([`H2Conn::output`], [`H2Conn::wrote`]) and feeds the
//! bytes it received ([`H2Conn::feed`]), getting back events: a reply with
//! the call it answers, a stream the server reset or refused, the server's
//! GOAWAY, a change of its stream limit. Sockets, TLS, timers and statistics
//! stay in the driver; the session rules (how many calls in flight) in
//! `session.rs`.
//!
//! Why framing is written in this workspace and not taken from the `h2`
//! crate: `h2` owns its I/O (an async stream) and allocates per stream; this
//! connection must be driven by the same engine as HTTP/1.1 and allocate
//! nothing per request once warm. The codec is `httplab-wire`'s `h2` module,
//! shared with the server: frame headers and constants, the bounded frame
//! reader, and header compression — httplab-wire's HPACK decoder
//! (responses may use the dynamic table and Huffman coding); requests are encoded
//! without the dynamic table (literals with static-table names), so a
//! request's header block never changes and is encoded once
//! ([`request_block`]). The frame checks stay here, per type, as this client
//! has always made them (the server decodes typed frames with the RFC's
//! error codes instead).
//!
//! Flow control: the connection announces the windows it is given
//! (`--http2-window`-style settings in `Http2Spec`; h2load's defaults are
//! 2^30 − 1 octets) for itself and every stream and tops them up when half
//! is consumed, so the server is never held back by the client's windows.

use std::time::Instant;

#[cfg(test)]
use httplab_wire::h2::frame_len;
use httplab_wire::h2::{self as wire, be32, flag, frame, hpack, FrameReader, Head, HEAD, PREFACE};

use crate::h1::Pending;

/// Error codes (RFC 9113 §7) this client sends or names.
pub(crate) use httplab_wire::h2::code;
/// The header block of a request (encoded once, no compression state).
pub(crate) use httplab_wire::h2::hpack::request_block;
/// The names of HTTP/2 error codes by code, and a code's index among them.
pub(crate) use httplab_wire::h2::{reason_index, REASONS};

/// The largest frame payload this client accepts (the protocol's default;
/// it announces no other).
const MAX_FRAME: usize = wire::DEFAULT_MAX_FRAME;
/// A window of 2^30 − 1 octets (h2load's default), for tests.
#[cfg(test)]
const WINDOW: u32 = (1 << 30) - 1;
/// The protocol's initial window, before SETTINGS and WINDOW_UPDATE.
const DEFAULT_WINDOW: u32 = wire::DEFAULT_WINDOW;
/// The largest header block (all HEADERS and CONTINUATION fragments of one
/// response) accepted: a bound on memory against a hostile server.
const MAX_HEADER_BLOCK: usize = 64 * 1024;

/// A complete reply and the call it answers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct H2Reply {
    pub call: Pending,
    pub status: u16,
    /// DATA payload octets of the reply (padding excluded).
    pub body: u64,
    /// The `content-length` the server announced, if any.
    pub content_length: Option<u64>,
    /// The size of the decoded response head, counted as HTTP/1.1 would
    /// write it (`name: value` and CRLF per field, the status line).
    pub header_bytes: u64,
    /// When the reply's first frame arrived.
    pub first: Instant,
}

/// What the server did, in the order it happened.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Event {
    /// A stream's final response head arrived: the server is serving.
    Head,
    /// A stream completed.
    Reply(H2Reply),
    /// The server reset a stream it had started to process (`code`).
    Reset { call: Pending, code: u32 },
    /// The server did not process the call (`reset`: a RST_STREAM with
    /// REFUSED_STREAM; else a stream above a GOAWAY's last id): it may be
    /// made again on another connection.
    Refused { call: Pending, reset: bool },
    /// The server will accept no new streams on this connection (`code`:
    /// why); the streams it did not process follow as [`Event::Refused`].
    /// `previous`: the code of an earlier GOAWAY on the same connection.
    GoAway { code: u32, previous: Option<u32> },
}

/// Input after which the connection cannot go on; the driver closes it
/// (after writing [`H2Conn::output`], which then holds a GOAWAY).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum H2Error {
    /// A frame or sequence of frames the protocol forbids.
    Protocol(&'static str),
    /// A frame larger than this client accepts.
    FrameSize,
    /// A header block the HPACK decoder refused, or one too large.
    Compression,
    /// The server sent more than the windows allowed.
    FlowControl,
    /// The response head lacks a valid `:status`.
    BadStatus,
    /// The server answered the preface in HTTP/1.x: it does not speak
    /// HTTP/2 on this port (its first line is in the input).
    Http1Answer,
}

impl H2Error {
    fn code(self) -> u32 {
        match self {
            H2Error::Protocol(_) | H2Error::BadStatus | H2Error::Http1Answer => {
                code::PROTOCOL_ERROR
            }
            H2Error::FrameSize => code::FRAME_SIZE_ERROR,
            H2Error::Compression => code::COMPRESSION_ERROR,
            H2Error::FlowControl => code::FLOW_CONTROL_ERROR,
        }
    }
}

/// The codec's connection errors, as this client names them.
impl From<wire::Error> for H2Error {
    fn from(e: wire::Error) -> H2Error {
        match e {
            wire::Error::Protocol(what)
            | wire::Error::StreamClosed(what)
            | wire::Error::Calm(what) => H2Error::Protocol(what),
            wire::Error::FrameSize => H2Error::FrameSize,
            wire::Error::Compression => H2Error::Compression,
            wire::Error::FlowControl => H2Error::FlowControl,
        }
    }
}

impl std::fmt::Display for H2Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            H2Error::Protocol(what) => write!(f, "HTTP/2 protocol error: {what}"),
            H2Error::FrameSize => write!(f, "HTTP/2 frame larger than {MAX_FRAME} octets"),
            H2Error::Compression => write!(f, "HTTP/2 header block could not be decoded"),
            H2Error::FlowControl => write!(f, "HTTP/2 flow-control window exceeded"),
            H2Error::BadStatus => write!(f, "HTTP/2 response without a valid :status"),
            H2Error::Http1Answer => write!(f, "the server answered in HTTP/1.x"),
        }
    }
}

/// One stream in flight.
#[derive(Debug, Clone, Copy)]
struct Stream {
    id: u32,
    call: Pending,
    status: u16,
    body: u64,
    content_length: Option<u64>,
    header_bytes: u64,
    first: Option<Instant>,
    /// Octets received since this stream's window was last topped up.
    unacked: u32,
}

/// The HTTP/2 client side of one connection (see the module docs).
#[derive(Debug)]
pub(crate) struct H2Conn {
    out: Vec<u8>,
    out_pos: usize,
    /// Cuts the input into frames (a frame not yet complete, bounded).
    reader: FrameReader,
    /// Fragments of a header block awaiting CONTINUATION, and its stream.
    block: Vec<u8>,
    block_stream: Option<(u32, bool)>,
    /// The HPACK decoder (its table is the connection's state).
    decoder: hpack::Decoder,
    streams: Vec<Stream>,
    next_id: u32,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (unlimited unless said;
    /// before its first SETTINGS, see [`H2Conn::can_open`]).
    peer_limit: u32,
    /// The server's SETTINGS_MAX_FRAME_SIZE (for our HEADERS).
    peer_max_frame: usize,
    /// A GOAWAY arrived: no new streams.
    going_away: bool,
    /// The code of the last GOAWAY received.
    goaway_code: Option<u32>,
    /// Octets received on the connection since its window was topped up.
    conn_unacked: u32,
    /// The server's first SETTINGS arrived.
    settled: bool,
    /// Nothing was received yet (the first bytes show an HTTP/1.x server).
    fresh: bool,
    /// The windows announced for each stream and for the connection.
    stream_window: u32,
    conn_window: u32,
}

impl H2Conn {
    /// A connection whose output starts with the preface, the client's
    /// SETTINGS (no push, `stream_window`) and the connection window's
    /// top-up to `conn_window`.
    pub fn new(stream_window: u32, conn_window: u32) -> H2Conn {
        let mut c = H2Conn {
            out: Vec::with_capacity(4096),
            out_pos: 0,
            reader: FrameReader::new(MAX_FRAME),
            block: Vec::new(),
            block_stream: None,
            decoder: hpack::Decoder::new(),
            streams: Vec::new(),
            next_id: 1,
            peer_limit: u32::MAX,
            peer_max_frame: MAX_FRAME,
            going_away: false,
            goaway_code: None,
            conn_unacked: 0,
            settled: false,
            fresh: true,
            stream_window: stream_window.clamp(1, 0x7fff_ffff),
            conn_window: conn_window.clamp(DEFAULT_WINDOW, 0x7fff_ffff),
        };
        c.start();
        c
    }

    /// Forgets everything (the connection closed) and starts over with a new
    /// preface; buffers are kept.
    pub fn reset(&mut self) {
        self.out.clear();
        self.out_pos = 0;
        self.reader.clear();
        self.block.clear();
        self.block_stream = None;
        self.decoder = hpack::Decoder::new();
        self.streams.clear();
        self.next_id = 1;
        self.peer_limit = u32::MAX;
        self.peer_max_frame = MAX_FRAME;
        self.going_away = false;
        self.goaway_code = None;
        self.conn_unacked = 0;
        self.settled = false;
        self.fresh = true;
        self.start();
    }

    fn start(&mut self) {
        self.out.extend_from_slice(PREFACE);
        // SETTINGS: ENABLE_PUSH = 0, INITIAL_WINDOW_SIZE.
        wire::write_settings(
            &mut self.out,
            &[
                (wire::setting::ENABLE_PUSH, 0),
                (wire::setting::INITIAL_WINDOW_SIZE, self.stream_window),
            ],
        );
        if self.conn_window > DEFAULT_WINDOW {
            self.window_update(0, self.conn_window - DEFAULT_WINDOW);
        }
    }

    fn frame_head(&mut self, len: usize, kind: u8, flags: u8, stream: u32) {
        Head::write(&mut self.out, len, kind, flags, stream);
    }

    fn window_update(&mut self, stream: u32, inc: u32) {
        wire::write_window_update(&mut self.out, stream, inc);
    }

    /// Bytes waiting to be written.
    pub fn output(&self) -> &[u8] {
        &self.out[self.out_pos..]
    }

    /// `n` bytes of [`Self::output`] were written.
    pub fn wrote(&mut self, n: usize) {
        self.out_pos += n;
        if self.out_pos >= self.out.len() {
            self.out.clear();
            self.out_pos = 0;
        }
    }

    /// Streams in flight.
    pub fn outstanding(&self) -> usize {
        self.streams.len()
    }

    /// The call waiting longest (the oldest stream), for timeouts.
    pub fn oldest(&self) -> Option<&Pending> {
        self.streams.iter().map(|s| &s.call).min_by_key(|c| c.sent)
    }

    /// Another stream may be opened now: the server's limit allows it, no
    /// GOAWAY came, and stream ids are not exhausted. Until the server's
    /// first SETTINGS says its limit, one stream: streams opened beyond a
    /// limit not yet known are refused (nginx's `http2_max_concurrent_streams
    /// 2` answers REFUSED_STREAM to the third of 16 sent with the preface).
    pub fn can_open(&self) -> bool {
        let limit = if self.settled { self.peer_limit } else { 1 };
        !self.going_away
            && (self.streams.len() as u64) < u64::from(limit)
            && self.next_id < 0x7fff_fff0
    }

    /// The server's first SETTINGS arrived (its limits are known).
    pub fn settled(&self) -> bool {
        self.settled
    }

    /// A GOAWAY arrived: no new streams on this connection.
    pub fn going_away(&self) -> bool {
        self.going_away
    }

    /// The calls in flight.
    pub fn calls(&self) -> impl Iterator<Item = &Pending> + '_ {
        self.streams.iter().map(|s| &s.call)
    }

    /// Opens a stream for `call` with the request header `block` (from
    /// [`request_block`]) and `body` (at most the protocol's initial window,
    /// 65 535 octets: this client does not wait for send windows). Returns
    /// the stream id, or `None` when [`Self::can_open`] is false.
    pub fn open_stream(&mut self, block: &[u8], body: Option<&[u8]>, call: Pending) -> Option<u32> {
        if !self.can_open() {
            return None;
        }
        let id = self.next_id;
        self.next_id += 2;
        let body = body.filter(|b| !b.is_empty());
        let no_body = if body.is_none() { flag::END_STREAM } else { 0 };
        // HEADERS then CONTINUATION frames, END_HEADERS on the last.
        let kinds = (frame::HEADERS, frame::CONTINUATION);
        self.split(id, block, kinds, no_body, flag::END_HEADERS);
        if let Some(b) = body {
            self.split(id, b, (frame::DATA, frame::DATA), 0, flag::END_STREAM);
        }
        self.streams.push(Stream {
            id,
            call,
            status: 0,
            body: 0,
            content_length: None,
            header_bytes: 0,
            first: None,
            unacked: 0,
        });
        Some(id)
    }

    /// `bytes` on stream `id` in frames of at most the server's frame size:
    /// the first of kind `kinds.0` with `first_flags`, the others of kind
    /// `kinds.1`, `last_flag` on the last.
    fn split(&mut self, id: u32, bytes: &[u8], kinds: (u8, u8), first_flags: u8, last_flag: u8) {
        let max = self.peer_max_frame;
        let mut at = 0;
        loop {
            let n = (bytes.len() - at).min(max);
            let (kind, flags) = if at == 0 {
                (kinds.0, first_flags)
            } else {
                (kinds.1, 0)
            };
            let last = if at + n == bytes.len() { last_flag } else { 0 };
            self.frame_head(n, kind, flags | last, id);
            self.out.extend_from_slice(&bytes[at..at + n]);
            at += n;
            if at == bytes.len() {
                return;
            }
        }
    }

    /// Gives up on the stream of the call with `serial` (a timeout): a
    /// RST_STREAM with CANCEL is queued; returns its call.
    pub fn cancel(&mut self, serial: u64) -> Option<Pending> {
        let i = self.streams.iter().position(|s| s.call.serial == serial)?;
        let s = self.streams.swap_remove(i);
        wire::write_rst_stream(&mut self.out, s.id, code::CANCEL);
        Some(s.call)
    }

    /// Closes the connection politely: a GOAWAY with NO_ERROR is queued.
    #[cfg(test)]
    pub fn go_away(&mut self) {
        self.goaway_frame(code::NO_ERROR);
    }

    fn goaway_frame(&mut self, code: u32) {
        wire::write_goaway(&mut self.out, 0, code);
    }

    /// The calls still in flight, taken out (the connection is gone).
    pub fn drain_calls(&mut self) -> impl Iterator<Item = Pending> + '_ {
        self.streams.drain(..).map(|s| s.call)
    }

    /// Feeds received bytes; every complete frame is processed, events are
    /// given to `on` in order, and an incomplete frame is kept for the next
    /// call. On an error the connection must be closed after writing the
    /// output (a GOAWAY naming the error is queued).
    pub fn feed(
        &mut self,
        data: &[u8],
        now: Instant,
        on: &mut impl FnMut(Event),
    ) -> Result<(), H2Error> {
        let r = (|| {
            if self.fresh && !data.is_empty() {
                self.fresh = false;
                let n = data.len().min(5);
                if data[..n] == b"HTTP/"[..n] {
                    return Err(H2Error::Http1Answer);
                }
            }
            // Frames are cut by the codec's bounded reader (taken out for
            // the call, so that each frame may change the connection).
            let mut reader = std::mem::take(&mut self.reader);
            let r = reader.feed(data, |f| self.frame(f, now, on));
            self.reader = reader;
            r
        })();
        if let Err(e) = r {
            self.goaway_frame(e.code());
        }
        r
    }

    fn index(&self, id: u32) -> Option<usize> {
        self.streams.iter().position(|s| s.id == id)
    }

    /// One whole frame.
    fn frame(&mut self, f: &[u8], now: Instant, on: &mut impl FnMut(Event)) -> Result<(), H2Error> {
        let kind = f[3];
        let flags = f[4];
        let id = u32::from_be_bytes([f[5], f[6], f[7], f[8]]) & 0x7fff_ffff;
        let payload = &f[HEAD..];
        if self.block_stream.is_some() && kind != frame::CONTINUATION {
            return Err(H2Error::Protocol("a header block was interrupted"));
        }
        match kind {
            frame::DATA => self.data(id, flags, payload, now, on),
            frame::HEADERS => self.headers(id, flags, payload, now, on),
            frame::CONTINUATION => self.continuation(id, flags, payload, now, on),
            frame::PRIORITY => Ok(()),
            frame::RST_STREAM => {
                if payload.len() != 4 {
                    return Err(H2Error::FrameSize);
                }
                let code = be32(payload);
                if let Some(i) = self.index(id) {
                    let call = self.streams.swap_remove(i).call;
                    on(if code == code::REFUSED_STREAM {
                        Event::Refused { call, reset: true }
                    } else {
                        Event::Reset { call, code }
                    });
                }
                Ok(())
            }
            frame::SETTINGS => self.settings(id, flags, payload),
            frame::PUSH_PROMISE => Err(H2Error::Protocol("PUSH_PROMISE although push is off")),
            frame::PING => {
                if payload.len() != 8 || id != 0 {
                    return Err(H2Error::Protocol("malformed PING"));
                }
                if flags & flag::ACK == 0 {
                    self.frame_head(8, frame::PING, flag::ACK, 0);
                    self.out.extend_from_slice(payload);
                }
                Ok(())
            }
            frame::GOAWAY => {
                if payload.len() < 8 || id != 0 {
                    return Err(H2Error::Protocol("malformed GOAWAY"));
                }
                let last = be32(payload) & 0x7fff_ffff;
                let code = be32(&payload[4..]);
                // A connection may carry several GOAWAYs (a graceful one
                // with the largest id, then the real last id): the
                // connection is counted once, by its last code.
                on(Event::GoAway {
                    code,
                    previous: self.goaway_code.replace(code),
                });
                self.going_away = true;
                // Streams above `last` were not processed.
                let mut i = 0;
                while i < self.streams.len() {
                    if self.streams[i].id > last {
                        let call = self.streams.swap_remove(i).call;
                        on(Event::Refused { call, reset: false });
                    } else {
                        i += 1;
                    }
                }
                Ok(())
            }
            frame::WINDOW_UPDATE => {
                if payload.len() != 4 {
                    return Err(H2Error::FrameSize);
                }
                // This client sends no bodies: the server's windows never
                // limit it.
                Ok(())
            }
            // Unknown frame types are ignored (RFC 9113 §4.1).
            _ => Ok(()),
        }
    }

    fn settings(&mut self, id: u32, flags: u8, payload: &[u8]) -> Result<(), H2Error> {
        if id != 0 {
            return Err(H2Error::Protocol("SETTINGS on a stream"));
        }
        if flags & flag::ACK != 0 {
            return if payload.is_empty() {
                Ok(())
            } else {
                Err(H2Error::FrameSize)
            };
        }
        for (id, value) in wire::settings(payload)? {
            match id {
                // MAX_CONCURRENT_STREAMS
                0x3 => self.peer_limit = value,
                // INITIAL_WINDOW_SIZE (of the server's streams' send
                // windows: this client sends no bodies).
                0x4 if value > 0x7fff_ffff => return Err(H2Error::FlowControl),
                // MAX_FRAME_SIZE
                0x5 => {
                    if !(16_384..=16_777_215).contains(&value) {
                        return Err(H2Error::Protocol("MAX_FRAME_SIZE out of range"));
                    }
                    self.peer_max_frame = value as usize;
                }
                _ => {}
            }
        }
        self.settled = true;
        self.frame_head(0, frame::SETTINGS, flag::ACK, 0);
        Ok(())
    }

    fn data(
        &mut self,
        id: u32,
        flags: u8,
        payload: &[u8],
        now: Instant,
        on: &mut impl FnMut(Event),
    ) -> Result<(), H2Error> {
        if id == 0 {
            return Err(H2Error::Protocol("DATA on stream 0"));
        }
        // Flow control counts the whole payload, padding included.
        let counted = payload.len() as u32;
        if let Some(inc) = consume(&mut self.conn_unacked, self.conn_window, counted)? {
            self.window_update(0, inc);
        }
        let body = wire::unpad(flags, payload, false)?;
        let Some(i) = self.index(id) else {
            // A stream already reset or finished: its window is the
            // connection's only (counted above).
            return if id >= self.next_id {
                Err(H2Error::Protocol("DATA on a stream never opened"))
            } else {
                Ok(())
            };
        };
        let window = self.stream_window;
        let s = &mut self.streams[i];
        if s.status == 0 {
            return Err(H2Error::Protocol("DATA before the response head"));
        }
        let top_up = consume(&mut s.unacked, window, counted)?;
        s.body += body.len() as u64;
        // A stream that ends needs no more window.
        if let Some(inc) = top_up.filter(|_| flags & flag::END_STREAM == 0) {
            self.window_update(id, inc);
        }
        if flags & flag::END_STREAM != 0 {
            self.finish(i, now, on);
        }
        Ok(())
    }

    fn finish(&mut self, i: usize, now: Instant, on: &mut impl FnMut(Event)) {
        let s = self.streams.swap_remove(i);
        on(Event::Reply(H2Reply {
            call: s.call,
            status: s.status,
            body: s.body,
            content_length: s.content_length,
            header_bytes: s.header_bytes,
            first: s.first.unwrap_or(now),
        }));
    }

    fn headers(
        &mut self,
        id: u32,
        flags: u8,
        payload: &[u8],
        now: Instant,
        on: &mut impl FnMut(Event),
    ) -> Result<(), H2Error> {
        if id == 0 {
            return Err(H2Error::Protocol("HEADERS on stream 0"));
        }
        let fragment = wire::unpad(flags, payload, true)?;
        if let Some(i) = self.index(id) {
            let s = &mut self.streams[i];
            s.first.get_or_insert(now);
        }
        let end_stream = flags & flag::END_STREAM != 0;
        if flags & flag::END_HEADERS == 0 {
            self.block.clear();
            self.block.extend_from_slice(fragment);
            self.block_stream = Some((id, end_stream));
            return Ok(());
        }
        self.head_block(id, end_stream, fragment, now, on)
    }

    fn continuation(
        &mut self,
        id: u32,
        flags: u8,
        payload: &[u8],
        now: Instant,
        on: &mut impl FnMut(Event),
    ) -> Result<(), H2Error> {
        let Some((sid, end_stream)) = self.block_stream else {
            return Err(H2Error::Protocol("CONTINUATION without HEADERS"));
        };
        if sid != id {
            return Err(H2Error::Protocol("CONTINUATION on another stream"));
        }
        if self.block.len() + payload.len() > MAX_HEADER_BLOCK {
            return Err(H2Error::Compression);
        }
        self.block.extend_from_slice(payload);
        if flags & flag::END_HEADERS == 0 {
            return Ok(());
        }
        self.block_stream = None;
        let block = std::mem::take(&mut self.block);
        let r = self.head_block(id, end_stream, &block, now, on);
        self.block = block;
        self.block.clear();
        r
    }

    /// A complete header block for stream `id`: decoded (always, to keep the
    /// decoder's table in step), then applied to the stream if it is ours.
    fn head_block(
        &mut self,
        id: u32,
        end_stream: bool,
        block: &[u8],
        now: Instant,
        on: &mut impl FnMut(Event),
    ) -> Result<(), H2Error> {
        let mut status: Option<u16> = None;
        let mut content_length: Option<u64> = None;
        let mut bad = false;
        // "HTTP/1.1 200 OK\r\n"-sized status line, then "name: value\r\n".
        let mut header_bytes = 2u64;
        // No bound on the decoded list beyond the block's (a response's
        // fields are only counted here).
        self.decoder
            .decode(block, usize::MAX, |name, value| match name {
                b":status" => {
                    status = parse_status(value);
                    header_bytes += 17;
                }
                n => {
                    header_bytes += (n.len() + value.len() + 4) as u64;
                    if n == b"content-length" {
                        match parse_u64(value) {
                            Some(v) => content_length = Some(v),
                            None => bad = true,
                        }
                    }
                }
            })?;
        let Some(i) = self.index(id) else {
            return if id >= self.next_id {
                Err(H2Error::Protocol("HEADERS on a stream never opened"))
            } else {
                Ok(())
            };
        };
        if self.streams[i].status != 0 {
            // Trailers (no pseudo-fields).
            if !end_stream || status.is_some() {
                return Err(H2Error::Protocol(
                    "trailers without END_STREAM or with :status",
                ));
            }
            self.finish(i, now, on);
            return Ok(());
        }
        let status = match status {
            Some(s) if !bad => s,
            _ => return Err(H2Error::BadStatus),
        };
        if (100..200).contains(&status) {
            // An interim response: the final one follows.
            if end_stream {
                return Err(H2Error::Protocol("an interim response ended its stream"));
            }
            return Ok(());
        }
        let s = &mut self.streams[i];
        s.status = status;
        s.content_length = content_length;
        s.header_bytes = header_bytes;
        on(Event::Head);
        if end_stream {
            self.finish(i, now, on);
        }
        Ok(())
    }
}

/// `n` octets received against a window of `window` of which `unacked`
/// were already used: a flow-control error beyond the window, else the
/// top-up to send (all that was used) once half the window is used.
fn consume(unacked: &mut u32, window: u32, n: u32) -> Result<Option<u32>, H2Error> {
    *unacked = unacked.saturating_add(n);
    if *unacked > window {
        return Err(H2Error::FlowControl);
    }
    if *unacked < window / 2 {
        return Ok(None);
    }
    Ok(Some(std::mem::take(unacked)))
}

fn parse_status(v: &[u8]) -> Option<u16> {
    if v.len() != 3 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

fn parse_u64(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

#[cfg(test)]
mod tests;
