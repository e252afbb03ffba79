//! One connection's HTTP/2 state machine (RFC 9113), without I/O: the twin
//! of the HTTP/1.1 [`crate::session::Session`].
//!
//! A driver feeds the bytes it received ([`H2Session::feed`]), writes
//! [`H2Session::out`] (the same [`OutQueue`] as HTTP/1.1: memory bytes with
//! file ranges spliced in, so sendfile, pread + sendmsg and TLS all work
//! unchanged), reports writes ([`H2Session::wrote`], which frames more body
//! data as the queue drains) and asks [`H2Session::deadline`] when to call
//! [`H2Session::on_timeout`]. Framing and HPACK are `httplab-wire`'s `h2`
//! codec, the one the load generator's client uses. The event model's epoll
//! engine drives it with `--http2 on` for a connection whose first bytes
//! are the client preface ([`sniff`]: h2c by prior knowledge).
//!
//! **Requests go to the same handler as HTTP/1.1.** A stream's decoded
//! header list becomes the wire crate's typed `Request` (the type the
//! HTTP/1.1 parser makes), answered by [`Handler::respond`] into a scratch
//! [`OutQueue`] in the HTTP/1.1 layout: a head, then body bytes and file
//! ranges. The seam is [`OutQueue::pieces`]: the head is re-encoded as an
//! HPACK block (names lower-cased, connection fields dropped) in HEADERS
//! (and CONTINUATION) frames, the body pieces become DATA frames — memory
//! bytes copied, file ranges queued as file segments after each frame's
//! header. The head's re-reading costs some work per response that
//! pre-rendered HTTP/2 header blocks in the file cache would save.
//!
//! **Flow control.** DATA is framed within the peer's connection and stream
//! windows and its SETTINGS_MAX_FRAME_SIZE; what does not fit waits on its
//! stream (file ranges as ranges, memory bytes copied only then) and goes
//! out as WINDOW_UPDATEs arrive. Framing also stops while the output queue
//! is above its high-water marks, so a large file is framed as it is sent,
//! not all at once. Request bodies are read and dropped, the windows topped
//! up as they are used; once its response is complete, a stream whose
//! request has not ended is reset with NO_ERROR (RFC 9113 §8.1).
//!
//! **Streams** (RFC 9113 §5.1): a client HEADERS opens an odd stream id
//! above every earlier one; the response is queued at once (END_HEADERS),
//! so a stream stays in the table only while its response body waits for
//! windows. Beyond SETTINGS_MAX_CONCURRENT_STREAMS a stream is refused
//! (RST_STREAM REFUSED_STREAM). PRIORITY is read and ignored. A frame on an
//! idle stream, a HEADERS on a closed one, an even id: connection errors.
//! A malformed request (pseudo-header rules) is reset with PROTOCOL_ERROR;
//! requests too large get their status (414, 431) as over HTTP/1.1.
//!
//! **Ending.** A connection error queues a GOAWAY naming it and the last
//! stream processed, then the connection ends once it is written.
//! [`H2Session::begin_shutdown`] sends a GOAWAY with NO_ERROR and the last
//! stream id, and the connection ends when the streams it names are
//! answered. An idle connection is ended the same way at the idle timeout;
//! a peer that stops reading (or never opens its windows) for the send
//! timeout is cut off.
//!
//! **Hostile input** is bounded from the first byte ([`H2Limits`]): a frame
//! over 16 KiB is refused from its header (FRAME_SIZE_ERROR); a header block
//! over [`H2Limits::max_header_block`] octets (COMPRESSION_ERROR: it cannot
//! be decoded without keeping it) or of more than
//! [`H2Limits::max_continuations`] CONTINUATION frames (ENHANCE_YOUR_CALM)
//! ends the connection; a decoded header list over the request limits (the
//! HPACK bomb) is read to the end without being kept and answered 431; per
//! [`H2Limits::flood_window`], client resets (rapid reset), SETTINGS,
//! PINGs, empty frames and refused streams beyond their budgets end the
//! connection with ENHANCE_YOUR_CALM; input is not read while the output
//! queue is above its high-water mark (PING and SETTINGS answers cannot pile
//! up), and a connection's memory is bounded by one frame of input, one
//! header block, the output high-water mark and, per stream, one waiting
//! response body.

use std::collections::VecDeque;
use std::fs::File;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use httplab_wire::h2::hpack::{self, ListSize};
use httplab_wire::h2::request::RequestFields;
use httplab_wire::h2::{
    self as wire, code, flag, frame, setting, Error, Frame, FrameReader, Head, MAX_WINDOW, PREFACE,
};
use httplab_wire::request::RequestError;

use crate::handler::{ConnHeader, Handler};
use crate::out::{OutQueue, Piece};
use crate::session::CloseReason;
use crate::tls::Alpn;

/// Stop framing (and reading) while more than this many bytes wait in
/// memory.
const OUT_HIGH_WATER: usize = 256 * 1024;
/// Stop framing file data while this many file segments (one per DATA
/// frame, at most 16 KiB each by default) wait.
const FILES_HIGH_WATER: usize = 64;
/// The receive window of the connection and of every stream (the
/// protocol's default, never raised: request bodies are dropped).
const RECV_WINDOW: u32 = wire::DEFAULT_WINDOW;

/// The bounds of one HTTP/2 connection (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct H2Limits {
    /// SETTINGS_MAX_CONCURRENT_STREAMS announced and enforced.
    pub max_concurrent_streams: u32,
    /// Largest header block (HEADERS and its CONTINUATIONs) kept.
    pub max_header_block: usize,
    /// Most CONTINUATION frames in one header block.
    pub max_continuations: u32,
    /// The window the flood budgets below are counted in.
    pub flood_window: Duration,
    /// RST_STREAM frames from the client per window (rapid reset).
    pub max_resets: u32,
    /// SETTINGS frames (besides the first) per window.
    pub max_settings: u32,
    /// PING frames per window.
    pub max_pings: u32,
    /// Frames that carry nothing and end nothing per window: DATA without
    /// data nor END_STREAM, header fragments without octets nor
    /// END_HEADERS.
    pub max_empty: u32,
    /// Streams refused beyond the concurrency limit per window.
    pub max_refused: u32,
}

impl Default for H2Limits {
    fn default() -> Self {
        H2Limits {
            max_concurrent_streams: 128,
            max_header_block: 64 * 1024,
            max_continuations: 32,
            flood_window: Duration::from_secs(1),
            max_resets: 200,
            max_settings: 32,
            max_pings: 32,
            max_empty: 64,
            max_refused: 128,
        }
    }
}

/// What a flood budget counts.
#[derive(Debug, Clone, Copy)]
enum Abuse {
    Reset,
    Settings,
    Ping,
    Empty,
    Refused,
}

impl Abuse {
    fn limit(self, l: &H2Limits) -> u32 {
        match self {
            Abuse::Reset => l.max_resets,
            Abuse::Settings => l.max_settings,
            Abuse::Ping => l.max_pings,
            Abuse::Empty => l.max_empty,
            Abuse::Refused => l.max_refused,
        }
    }

    fn what(self) -> &'static str {
        match self {
            Abuse::Reset => "too many stream resets",
            Abuse::Settings => "too many SETTINGS",
            Abuse::Ping => "too many PINGs",
            Abuse::Empty => "too many empty frames",
            Abuse::Refused => "too many streams beyond the limit",
        }
    }
}

/// The flood budgets of the current window.
#[derive(Debug)]
struct Budget {
    start: Instant,
    counts: [u32; 5],
}

impl Budget {
    fn spend(&mut self, what: Abuse, now: Instant, limits: &H2Limits) -> Result<(), Error> {
        if now.saturating_duration_since(self.start) >= limits.flood_window {
            self.start = now;
            self.counts = [0; 5];
        }
        let c = &mut self.counts[what as usize];
        *c += 1;
        if *c > what.limit(limits) {
            return Err(Error::Calm(what.what()));
        }
        Ok(())
    }
}

/// The protocol a connection of the event model speaks, on either engine
/// (`event`, `uring`).
pub(crate) enum Proto {
    /// HTTP/1.1: the connection's `Session`.
    Http1,
    /// `--http2 on`, nothing decided yet: in cleartext the first bytes
    /// gather in the session's read buffer until [`decide`] says; over
    /// TLS (epoll only) the handshake's ALPN choice decides, once per
    /// connection.
    Sniff,
    /// HTTP/2. The session only lends its read buffer (bytes read there
    /// are fed to the machine at once).
    Http2(Box<H2Session>),
}

/// What a connection's first bytes say it speaks (`--http2 on`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sniffed {
    /// Too few bytes yet, all of them the start of the preface.
    Wait,
    /// Anything but the preface: HTTP/1.1.
    Http1,
    /// The whole 24-octet client preface: HTTP/2 by prior knowledge.
    Http2,
}

/// Decides a connection's protocol (`--http2 on`): over TLS by what ALPN
/// chose (`alpn`; `Wait` while handshaking), in cleartext (`None`) by its
/// first bytes ([`sniff`]). `ended`: the peer sent nothing more, or the
/// server is closing.
pub(crate) fn decide(alpn: Option<Alpn>, first: &[u8], ended: bool) -> Sniffed {
    match alpn {
        None => sniff(first, ended),
        Some(Alpn::Handshaking) if ended => Sniffed::Http1,
        Some(Alpn::Handshaking) => Sniffed::Wait,
        Some(Alpn::H2) => Sniffed::Http2,
        Some(Alpn::Http1) => Sniffed::Http1,
    }
}

/// Decides a connection's protocol from its first bytes `first` (looked
/// at once per connection, until decided); `ended`: the peer sent nothing
/// more, so a partial preface is HTTP/1.1 (which answers or closes it).
pub(crate) fn sniff(first: &[u8], ended: bool) -> Sniffed {
    let n = first.len().min(PREFACE.len());
    if first[..n] != PREFACE[..n] {
        Sniffed::Http1
    } else if n == PREFACE.len() {
        Sniffed::Http2
    } else if ended {
        Sniffed::Http1
    } else {
        Sniffed::Wait
    }
}

/// Response body waiting for windows.
#[derive(Debug)]
enum Waiting {
    /// Memory bytes and how many were sent.
    Mem(Vec<u8>, usize),
    /// A file range still to send, and the length of the whole range the
    /// body began with (what the driver's send path is chosen by).
    File(Arc<File>, u64, u64, u64),
}

/// A stream whose response body is not all framed yet.
#[derive(Debug)]
struct Stream {
    id: u32,
    /// The client ended its side (half-closed remote).
    remote_closed: bool,
    /// The response body still to frame; END_STREAM goes on its last frame.
    body: VecDeque<Waiting>,
    /// The peer's window for this stream.
    send_window: i64,
    /// Octets received since this stream's window was topped up.
    recv_unacked: u32,
}

/// What a header block being gathered is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    /// A request on a new stream.
    Request,
    /// Trailers of a request (decoded, dropped).
    Trailers,
    /// A stream refused or reset, or above our GOAWAY: decoded only to keep
    /// the table in step.
    Dropped,
}

/// A header block being gathered.
#[derive(Debug, Clone, Copy)]
struct Block {
    stream: u32,
    end_stream: bool,
    purpose: Purpose,
    continuations: u32,
}

/// How far a stream's waiting body got.
enum Sent {
    /// All of it: END_STREAM was sent.
    All,
    /// Some is still waiting for windows or room.
    Partly,
}

/// One HTTP/2 connection's protocol state (see the module docs).
#[derive(Debug)]
pub struct H2Session {
    /// Frames waiting to be written.
    pub out: OutQueue,
    /// The handler's answer in the HTTP/1.1 layout, reused.
    scratch: OutQueue,
    reader: FrameReader,
    decoder: hpack::Decoder,
    encoder: hpack::Encoder,
    fields: RequestFields,
    /// Fragments of a header block awaiting CONTINUATION.
    block: Vec<u8>,
    gathering: Option<Block>,
    /// A response header block being encoded.
    hblock: Vec<u8>,
    /// The HTTP/1.1 head `hblock` encodes, when encoding it changed nothing
    /// in the encoder (its generation is `memo_generation`): while that
    /// holds, the same head encodes to the same block (empty: none).
    memo_head: Vec<u8>,
    memo_generation: u64,
    streams: Vec<Stream>,
    /// Octets of the client preface received.
    preface: usize,
    /// The client's first SETTINGS arrived.
    settled: bool,
    /// The highest stream id the client opened.
    last_client: u32,
    /// The last stream id our GOAWAY named.
    goaway_sent: Option<u32>,
    peer_goaway: bool,
    closing: bool,
    eof: bool,
    error: Option<Error>,
    /// The peer's connection window, and its initial stream window.
    conn_send: i64,
    initial_send: i64,
    peer_max_frame: usize,
    conn_recv_unacked: u32,
    /// The decoded header list bound (the HTTP/1.1 head limits).
    max_list: usize,
    limits: H2Limits,
    budget: Budget,
    peer: Option<IpAddr>,
    last_activity: Instant,
    /// The last write, window opened or response queued.
    last_progress: Instant,
    /// A preface or header block started and not yet complete.
    started: Option<Instant>,
    served: u64,
}

impl H2Session {
    /// A connection an engine has just found to speak HTTP/2, with the
    /// default limits; `shutting`: the server's graceful shutdown has begun,
    /// so the connection starts with its GOAWAY.
    pub fn accepted(peer: Option<IpAddr>, now: Instant, h: &Handler, shutting: bool) -> H2Session {
        let mut s = H2Session::new(peer, now, h, H2Limits::default());
        if shutting {
            s.begin_shutdown();
        }
        s
    }

    /// A new connection from `peer` at `now` (its first bytes will be the
    /// client preface); the server's SETTINGS are queued at once.
    pub fn new(peer: Option<IpAddr>, now: Instant, h: &Handler, limits: H2Limits) -> H2Session {
        let l = h.config().limits;
        let max_list = l.max_request_line + l.max_header_bytes;
        let mut s = H2Session {
            out: OutQueue::default(),
            scratch: OutQueue::scratch(),
            reader: FrameReader::default(),
            decoder: hpack::Decoder::new(),
            encoder: hpack::Encoder::new(),
            fields: RequestFields::default(),
            block: Vec::new(),
            gathering: None,
            hblock: Vec::new(),
            memo_head: Vec::new(),
            memo_generation: 0,
            streams: Vec::new(),
            preface: 0,
            settled: false,
            last_client: 0,
            goaway_sent: None,
            peer_goaway: false,
            closing: false,
            eof: false,
            error: None,
            conn_send: i64::from(wire::DEFAULT_WINDOW),
            initial_send: i64::from(wire::DEFAULT_WINDOW),
            peer_max_frame: wire::DEFAULT_MAX_FRAME,
            conn_recv_unacked: 0,
            max_list,
            limits,
            budget: Budget {
                start: now,
                counts: [0; 5],
            },
            peer,
            last_activity: now,
            last_progress: now,
            started: None,
            served: 0,
        };
        wire::write_settings(
            &mut s.out.buf,
            &[
                (
                    setting::MAX_CONCURRENT_STREAMS,
                    limits.max_concurrent_streams,
                ),
                (setting::MAX_HEADER_LIST_SIZE, max_list as u32),
            ],
        );
        s
    }

    /// The connection error that ended the connection, if one did.
    pub fn error(&self) -> Option<Error> {
        self.error
    }

    /// Requests answered on this connection.
    pub fn served(&self) -> u64 {
        self.served
    }

    /// Streams whose response body is still being sent.
    pub fn open_streams(&self) -> usize {
        self.streams.len()
    }

    /// Whether the driver should read now (not closing, output not backed
    /// up).
    pub fn wants_input(&self) -> bool {
        !self.closing && !self.eof && !self.backed_up()
    }

    fn backed_up(&self) -> bool {
        self.out.mem_pending() > OUT_HIGH_WATER || self.out.files_pending() > FILES_HIGH_WATER
    }

    /// The peer closed its sending side.
    pub fn on_eof(&mut self) {
        self.eof = true;
    }

    /// The connection is done: close it once [`Self::out`] is written (it
    /// then is).
    pub fn finished(&self) -> bool {
        self.out.is_empty()
            && (self.closing
                || (self.streams.is_empty()
                    && (self.eof || self.peer_goaway || self.goaway_sent.is_some())))
    }

    /// Records write progress at `now` and frames more waiting body data
    /// into the room the write made.
    pub fn wrote(&mut self, now: Instant) {
        self.last_progress = now;
        self.fill();
    }

    /// Stops taking new streams (graceful shutdown): a GOAWAY with
    /// NO_ERROR names the last stream opened; the connection ends once
    /// those are answered.
    pub fn begin_shutdown(&mut self) {
        if self.goaway_sent.is_none() && !self.closing {
            wire::write_goaway(&mut self.out.buf, self.last_client, code::NO_ERROR);
            self.goaway_sent = Some(self.last_client);
        }
    }

    /// When the driver must call [`Self::on_timeout`].
    pub fn deadline(&self, h: &Handler) -> Instant {
        let cfg = h.config();
        if !self.out.is_empty() || !self.streams.is_empty() {
            self.last_progress + cfg.send_timeout
        } else if let Some(t) = self.started {
            t + cfg.header_timeout
        } else {
            self.last_activity + cfg.idle_timeout
        }
    }

    /// A deadline passed. `Some`: close the connection now (the peer made
    /// no progress reading); otherwise a GOAWAY was queued and the
    /// connection ends once it is written.
    pub fn on_timeout(&mut self, h: &Handler, now: Instant) -> Option<CloseReason> {
        if now < self.deadline(h) {
            return None;
        }
        if self.out.is_empty() && self.streams.is_empty() && !self.closing {
            let code = if self.started.is_some() {
                code::PROTOCOL_ERROR
            } else {
                code::NO_ERROR
            };
            wire::write_goaway(&mut self.out.buf, self.last_client, code);
            self.closing = true;
            self.last_progress = now;
            return None;
        }
        Some(CloseReason::Timeout)
    }

    /// Takes received bytes: every complete frame is processed (requests
    /// answered through `h`), the rest kept for the next call. After a
    /// connection error (a GOAWAY queued, [`Self::error`]) or once closing,
    /// input is dropped.
    pub fn feed(&mut self, data: &[u8], h: &mut Handler, now: Instant) {
        if self.closing || data.is_empty() {
            return;
        }
        self.last_activity = now;
        if let Err(e) = self.feed_frames(data, h, now) {
            self.fail(e);
        }
        self.fill();
    }

    fn feed_frames(&mut self, mut data: &[u8], h: &mut Handler, now: Instant) -> Result<(), Error> {
        if self.preface < PREFACE.len() {
            let n = (PREFACE.len() - self.preface).min(data.len());
            if data[..n] != PREFACE[self.preface..self.preface + n] {
                return Err(Error::Protocol("not the HTTP/2 client preface"));
            }
            self.preface += n;
            data = &data[n..];
            if self.preface < PREFACE.len() {
                self.started.get_or_insert(now);
                return Ok(());
            }
            self.started = None;
        }
        let mut reader = std::mem::take(&mut self.reader);
        let r = reader.feed(data, |f| self.frame(f, h, now));
        self.reader = reader;
        r
    }

    /// A connection error: a GOAWAY naming it; nothing more is framed.
    fn fail(&mut self, e: Error) {
        self.error = Some(e);
        wire::write_goaway(&mut self.out.buf, self.last_client, e.code());
        self.closing = true;
        self.streams.clear();
        self.gathering = None;
    }

    fn index(&self, id: u32) -> Option<usize> {
        self.streams.iter().position(|s| s.id == id)
    }

    fn spend(&mut self, what: Abuse, now: Instant) -> Result<(), Error> {
        self.budget.spend(what, now, &self.limits)
    }

    /// One whole frame.
    fn frame(&mut self, f: &[u8], h: &mut Handler, now: Instant) -> Result<(), Error> {
        let fr = wire::decode::frame(f)?;
        if let Some(b) = self.gathering {
            if !matches!(fr, Frame::Continuation { stream, .. } if stream == b.stream) {
                return Err(Error::Protocol("a header block was interrupted"));
            }
        }
        if !self.settled && !matches!(fr, Frame::Settings { ack: false, .. }) {
            return Err(Error::Protocol("the client preface lacks its SETTINGS"));
        }
        match fr {
            Frame::Data {
                stream,
                end_stream,
                data,
                flow_len,
            } => self.data(stream, end_stream, data.is_empty(), flow_len, now),
            Frame::Headers {
                stream,
                end_stream,
                end_headers,
                fragment,
                depends_on,
            } => {
                if fragment.is_empty() && !end_headers {
                    self.spend(Abuse::Empty, now)?;
                }
                let purpose = self.open(stream, end_stream, depends_on, now)?;
                let b = Block {
                    stream,
                    end_stream,
                    purpose,
                    continuations: 0,
                };
                self.fragment(b, fragment, end_headers, h, now)
            }
            Frame::Continuation {
                end_headers,
                fragment,
                ..
            } => {
                let Some(mut b) = self.gathering.take() else {
                    return Err(Error::Protocol("CONTINUATION without HEADERS"));
                };
                b.continuations += 1;
                if b.continuations > self.limits.max_continuations {
                    return Err(Error::Calm("too many CONTINUATION frames"));
                }
                if fragment.is_empty() && !end_headers {
                    self.spend(Abuse::Empty, now)?;
                }
                self.fragment(b, fragment, end_headers, h, now)
            }
            Frame::Priority { stream, depends_on } => {
                if stream == depends_on {
                    self.reset(stream, code::PROTOCOL_ERROR);
                }
                Ok(())
            }
            Frame::RstStream { stream, .. } => {
                if stream > self.last_client {
                    return Err(Error::Protocol("RST_STREAM on an idle stream"));
                }
                self.spend(Abuse::Reset, now)?;
                if let Some(i) = self.index(stream) {
                    self.streams.swap_remove(i);
                }
                Ok(())
            }
            Frame::Settings { ack, payload } => self.settings(ack, payload, now),
            Frame::PushPromise { .. } => Err(Error::Protocol("PUSH_PROMISE from a client")),
            Frame::Ping { ack, data } => {
                if !ack {
                    self.spend(Abuse::Ping, now)?;
                    wire::write_frame(&mut self.out.buf, frame::PING, flag::ACK, 0, &data);
                }
                Ok(())
            }
            Frame::GoAway { .. } => {
                self.peer_goaway = true;
                Ok(())
            }
            Frame::WindowUpdate { stream, increment } => self.window_update(stream, increment, now),
            Frame::Unknown { .. } => Ok(()),
        }
    }

    /// A HEADERS frame on `id`: what its header block will be for.
    fn open(
        &mut self,
        id: u32,
        end_stream: bool,
        depends_on: Option<u32>,
        now: Instant,
    ) -> Result<Purpose, Error> {
        if let Some(i) = self.index(id) {
            if self.streams[i].remote_closed {
                return Err(Error::StreamClosed("HEADERS after the request ended"));
            }
            if !end_stream {
                return Err(Error::Protocol("trailers without END_STREAM"));
            }
            return Ok(Purpose::Trailers);
        }
        if id % 2 == 0 {
            return Err(Error::Protocol("an even stream id from a client"));
        }
        if id <= self.last_client {
            return Err(Error::StreamClosed("HEADERS on a closed stream"));
        }
        self.last_client = id;
        if depends_on == Some(id) {
            self.reset(id, code::PROTOCOL_ERROR);
            return Ok(Purpose::Dropped);
        }
        if self.goaway_sent.is_some() {
            // Above the last id our GOAWAY named: not processed.
            return Ok(Purpose::Dropped);
        }
        if self.streams.len() >= self.limits.max_concurrent_streams as usize {
            self.spend(Abuse::Refused, now)?;
            wire::write_rst_stream(&mut self.out.buf, id, code::REFUSED_STREAM);
            return Ok(Purpose::Dropped);
        }
        Ok(Purpose::Request)
    }

    /// A header block fragment (HEADERS or CONTINUATION) for `b`.
    fn fragment(
        &mut self,
        b: Block,
        fragment: &[u8],
        end_headers: bool,
        h: &mut Handler,
        now: Instant,
    ) -> Result<(), Error> {
        if end_headers && b.continuations == 0 {
            // The common case: the whole block in one frame, decoded where
            // it lies.
            return self.complete(b, fragment, h, now);
        }
        if b.continuations == 0 {
            self.block.clear();
        }
        if self.block.len() + fragment.len() > self.limits.max_header_block {
            return Err(Error::Compression);
        }
        self.block.extend_from_slice(fragment);
        if !end_headers {
            self.gathering = Some(b);
            self.started.get_or_insert(now);
            return Ok(());
        }
        let block = std::mem::take(&mut self.block);
        let r = self.complete(b, &block, h, now);
        self.block = block;
        self.block.clear();
        r
    }

    /// A complete header block: decoded (always, to keep the table in
    /// step), then answered if it opens a request.
    fn complete(
        &mut self,
        b: Block,
        block: &[u8],
        h: &mut Handler,
        now: Instant,
    ) -> Result<(), Error> {
        self.started = None;
        self.fields.clear();
        let fields = &mut self.fields;
        let size = if b.purpose == Purpose::Request {
            self.decoder
                .decode_known(block, self.max_list, |n, v, k| fields.field_known(n, v, k))?
        } else {
            self.decoder.decode(block, self.max_list, |_, _| {})?
        };
        match b.purpose {
            Purpose::Request => self.dispatch(b, size, h, now),
            Purpose::Trailers => {
                if let Some(i) = self.index(b.stream) {
                    self.streams[i].remote_closed = true;
                }
            }
            Purpose::Dropped => {}
        }
        Ok(())
    }

    /// Answers the request just decoded on stream `b.stream`.
    fn dispatch(&mut self, b: Block, size: ListSize, h: &mut Handler, now: Instant) {
        let limits = h.config().limits;
        let mut scratch = std::mem::take(&mut self.scratch);
        let answered = match (size, self.fields.request(&limits)) {
            (ListSize::TooLarge, _) => {
                h.respond_error(431, self.fields.is_head(), self.peer, &mut scratch);
                true
            }
            (ListSize::Whole, Ok(req)) => {
                let head = self.fields.head();
                h.respond(&req, head, ConnHeader::None, self.peer, &mut scratch, now);
                true
            }
            // Malformed (RFC 9113 §8.1.1): a stream error.
            (ListSize::Whole, Err(RequestError::BadRequest(_))) => false,
            (ListSize::Whole, Err(e)) => {
                h.respond_error(e.status(), self.fields.is_head(), self.peer, &mut scratch);
                true
            }
        };
        if answered {
            self.served += 1;
            self.last_progress = now;
            self.respond(b, &scratch);
        } else {
            wire::write_rst_stream(&mut self.out.buf, b.stream, code::PROTOCOL_ERROR);
        }
        scratch.clear();
        self.scratch = scratch;
    }

    /// Frames the handler's answer (`scratch`, HTTP/1.1 layout) on stream
    /// `b.stream`: HEADERS, then as much of the body as windows allow; the
    /// rest waits on the stream.
    fn respond(&mut self, b: Block, scratch: &OutQueue) {
        let mut pieces = scratch.pieces().peekable();
        let Some(Piece::Mem(first)) = pieces.next() else {
            wire::write_rst_stream(&mut self.out.buf, b.stream, code::INTERNAL_ERROR);
            return;
        };
        let Some(end) = self.encode_head(first) else {
            wire::write_rst_stream(&mut self.out.buf, b.stream, code::INTERNAL_ERROR);
            return;
        };
        let rest = &first[end..];
        let has_body = !rest.is_empty() || pieces.peek().is_some();
        self.headers_frames(b.stream, !has_body);
        if !has_body {
            self.stream_done(b.stream, b.end_stream);
            return;
        }
        let mut s = Stream {
            id: b.stream,
            remote_closed: b.end_stream,
            body: VecDeque::new(),
            send_window: self.initial_send,
            recv_unacked: 0,
        };
        let rest = (!rest.is_empty()).then_some(Piece::Mem(rest));
        let mut body = rest.into_iter().chain(pieces).peekable();
        while let Some(p) = body.next() {
            let last = body.peek().is_none();
            let waiting = !s.body.is_empty();
            match p {
                Piece::Mem(m) => {
                    let n = if waiting {
                        0
                    } else {
                        self.frame_mem(s.id, &mut s.send_window, m, last)
                    };
                    if n < m.len() {
                        // Copied only now, when it has to wait.
                        s.body.push_back(Waiting::Mem(m.to_vec(), n));
                    }
                }
                Piece::File(f, a, e) => {
                    let n = if waiting {
                        0
                    } else {
                        self.frame_file(s.id, &mut s.send_window, f, (a, e, e - a), last)
                    };
                    if a + n < e {
                        s.body
                            .push_back(Waiting::File(Arc::clone(f), a + n, e, e - a));
                    }
                }
            }
        }
        if s.body.is_empty() {
            self.stream_done(s.id, s.remote_closed);
        } else {
            self.streams.push(s);
        }
    }

    /// How many octets one DATA frame may carry now on a stream with
    /// `window`: within the windows and the peer's frame size, none while
    /// the output queue is above its memory high-water mark.
    fn room(&self, window: i64) -> usize {
        if self.out.mem_pending() > OUT_HIGH_WATER {
            return 0;
        }
        let r = self.conn_send.min(window).max(0) as u64;
        r.min(self.peer_max_frame as u64) as usize
    }

    /// Frames as much of `bytes` as fits now on stream `id` (END_STREAM on
    /// the frame that ends the last piece); returns the octets framed.
    fn frame_mem(&mut self, id: u32, window: &mut i64, bytes: &[u8], last: bool) -> usize {
        let mut at = 0;
        while at < bytes.len() {
            let n = (bytes.len() - at).min(self.room(*window));
            if n == 0 {
                break;
            }
            let end = if last && at + n == bytes.len() {
                flag::END_STREAM
            } else {
                0
            };
            Head::write(&mut self.out.buf, n, frame::DATA, end, id);
            self.out.buf.extend_from_slice(&bytes[at..at + n]);
            self.conn_send -= n as i64;
            *window -= n as i64;
            at += n;
        }
        at
    }

    /// Like [`Self::frame_mem`] for `file[off..end]` of a body range of
    /// `whole` octets (`range`: off, end, whole): each frame's header in
    /// memory, its payload a file segment (sent by sendfile, or read and
    /// sent, as the driver's send path decides for a file of the body's
    /// length); at most [`FILES_HIGH_WATER`] segments wait at once.
    fn frame_file(
        &mut self,
        id: u32,
        window: &mut i64,
        file: &Arc<File>,
        (off, end, whole): (u64, u64, u64),
        last: bool,
    ) -> u64 {
        let mut at = off;
        while at < end && self.out.files_pending() < FILES_HIGH_WATER {
            let n = ((end - at) as usize).min(self.room(*window));
            if n == 0 {
                break;
            }
            let fin = if last && at + n as u64 == end {
                flag::END_STREAM
            } else {
                0
            };
            Head::write(&mut self.out.buf, n, frame::DATA, fin, id);
            self.out.push_file_part(file, at, at + n as u64, whole);
            self.conn_send -= n as i64;
            *window -= n as i64;
            at += n as u64;
        }
        at - off
    }

    /// Frames what waits on every stream, as far as windows and room allow;
    /// streams whose body is all sent are done.
    fn fill(&mut self) {
        if self.streams.is_empty() || self.closing {
            return;
        }
        let mut streams = std::mem::take(&mut self.streams);
        streams.retain_mut(|s| match self.send_waiting(s) {
            Sent::All => {
                self.stream_done(s.id, s.remote_closed);
                false
            }
            Sent::Partly => true,
        });
        self.streams = streams;
    }

    fn send_waiting(&mut self, s: &mut Stream) -> Sent {
        let Stream {
            id,
            body,
            send_window,
            ..
        } = s;
        loop {
            let last = body.len() == 1;
            let Some(w) = body.front_mut() else {
                break;
            };
            let done = match w {
                Waiting::Mem(v, pos) => {
                    *pos += self.frame_mem(*id, send_window, &v[*pos..], last);
                    *pos == v.len()
                }
                Waiting::File(f, off, end, whole) => {
                    *off += self.frame_file(*id, send_window, f, (*off, *end, *whole), last);
                    *off == *end
                }
            };
            if !done {
                return Sent::Partly;
            }
            body.pop_front();
        }
        Sent::All
    }

    /// Stream `id`'s response is all framed: a request still being sent is
    /// cut short with NO_ERROR (RFC 9113 §8.1).
    fn stream_done(&mut self, id: u32, remote_closed: bool) {
        if !remote_closed {
            wire::write_rst_stream(&mut self.out.buf, id, code::NO_ERROR);
        }
    }

    /// Resets stream `id` with `code` (a stream error) and forgets it.
    fn reset(&mut self, id: u32, code: u32) {
        wire::write_rst_stream(&mut self.out.buf, id, code);
        if let Some(i) = self.index(id) {
            self.streams.swap_remove(i);
        }
    }

    /// Encodes the HTTP/1.1 head at the start of `answer` (status line,
    /// fields, empty line) into `hblock` as HPACK, in one pass over its
    /// lines, leaving out the fields HTTP/2 forbids (connection-specific,
    /// RFC 9113 §8.2.2: [`crate::head`]). Returns the head's length, or None when `answer`
    /// holds no whole head.
    ///
    /// A head equal to the last one, with the encoder unchanged since,
    /// reuses the last block: the same file's responses differ only when
    /// the Date changes, so most skip the parse and the encoding (about a
    /// quarter of a small h2c response's instructions, callgrind). The
    /// memo's head ends at its own first empty line, so `answer` starting
    /// with it has exactly that head.
    fn encode_head(&mut self, answer: &[u8]) -> Option<usize> {
        if !self.memo_head.is_empty()
            && self.memo_generation == self.encoder.generation()
            && answer.starts_with(&self.memo_head)
        {
            return Some(self.memo_head.len());
        }
        self.memo_head.clear();
        self.hblock.clear();
        let before = self.encoder.generation();
        self.encoder.begin(&mut self.hblock);
        let (status, at) = crate::head::status(answer)?;
        self.encoder.status(status, &mut self.hblock);
        let (encoder, hblock) = (&mut self.encoder, &mut self.hblock);
        let end = crate::head::each_field(answer, at, |name, value| {
            encoder.field(name, &answer[value], hblock);
        })?;
        if self.encoder.generation() == before {
            self.memo_head.extend_from_slice(&answer[..end]);
            self.memo_generation = before;
        }
        Some(end)
    }

    /// The block in `hblock` as HEADERS and CONTINUATION frames of stream
    /// `id` (END_STREAM with `end_stream`).
    fn headers_frames(&mut self, id: u32, end_stream: bool) {
        let max = self.peer_max_frame;
        let mut at = 0;
        loop {
            let n = (self.hblock.len() - at).min(max);
            let (kind, mut flags) = if at == 0 {
                let end = if end_stream { flag::END_STREAM } else { 0 };
                (frame::HEADERS, end)
            } else {
                (frame::CONTINUATION, 0)
            };
            if at + n == self.hblock.len() {
                flags |= flag::END_HEADERS;
            }
            Head::write(&mut self.out.buf, n, kind, flags, id);
            self.out.buf.extend_from_slice(&self.hblock[at..at + n]);
            at += n;
            if at == self.hblock.len() {
                return;
            }
        }
    }

    /// DATA from the client (a request body): counted against the
    /// connection's and the stream's windows, topped up as used, dropped.
    fn data(
        &mut self,
        id: u32,
        end_stream: bool,
        empty: bool,
        flow_len: u32,
        now: Instant,
    ) -> Result<(), Error> {
        if empty && !end_stream {
            self.spend(Abuse::Empty, now)?;
        }
        if let Some(inc) = consume(&mut self.conn_recv_unacked, flow_len)? {
            wire::write_window_update(&mut self.out.buf, 0, inc);
        }
        let Some(i) = self.index(id) else {
            return if id > self.last_client {
                Err(Error::Protocol("DATA on an idle stream"))
            } else {
                // A stream answered and closed: the connection's window
                // only (counted above).
                Ok(())
            };
        };
        let s = &mut self.streams[i];
        if s.remote_closed {
            self.reset(id, code::STREAM_CLOSED);
            return Ok(());
        }
        match consume(&mut s.recv_unacked, flow_len) {
            Err(_) => self.reset(id, code::FLOW_CONTROL_ERROR),
            Ok(top_up) => {
                s.remote_closed = end_stream;
                if let Some(inc) = top_up.filter(|_| !end_stream) {
                    wire::write_window_update(&mut self.out.buf, id, inc);
                }
            }
        }
        Ok(())
    }

    fn settings(&mut self, ack: bool, payload: &[u8], now: Instant) -> Result<(), Error> {
        if ack {
            return Ok(());
        }
        if self.settled {
            self.spend(Abuse::Settings, now)?;
        }
        self.settled = true;
        for (id, value) in wire::settings(payload)? {
            match id {
                setting::HEADER_TABLE_SIZE => self.encoder.set_peer_table_size(value),
                setting::ENABLE_PUSH if value > 1 => {
                    return Err(Error::Protocol("ENABLE_PUSH neither 0 nor 1"))
                }
                setting::INITIAL_WINDOW_SIZE => {
                    if value > MAX_WINDOW {
                        return Err(Error::FlowControl);
                    }
                    let delta = i64::from(value) - self.initial_send;
                    self.initial_send = i64::from(value);
                    for s in &mut self.streams {
                        s.send_window += delta;
                        if s.send_window > i64::from(MAX_WINDOW) {
                            return Err(Error::FlowControl);
                        }
                    }
                    self.last_progress = now;
                }
                setting::MAX_FRAME_SIZE => {
                    if !(wire::DEFAULT_MAX_FRAME as u32..=wire::MAX_MAX_FRAME).contains(&value) {
                        return Err(Error::Protocol("MAX_FRAME_SIZE out of range"));
                    }
                    self.peer_max_frame = value as usize;
                }
                _ => {}
            }
        }
        wire::write_frame(&mut self.out.buf, frame::SETTINGS, flag::ACK, 0, &[]);
        Ok(())
    }

    fn window_update(&mut self, id: u32, increment: u32, now: Instant) -> Result<(), Error> {
        let inc = i64::from(increment);
        if id == 0 {
            if increment == 0 {
                return Err(Error::Protocol("WINDOW_UPDATE of 0 on the connection"));
            }
            self.conn_send += inc;
            if self.conn_send > i64::from(MAX_WINDOW) {
                return Err(Error::FlowControl);
            }
        } else {
            let Some(i) = self.index(id) else {
                return if id > self.last_client {
                    Err(Error::Protocol("WINDOW_UPDATE on an idle stream"))
                } else {
                    Ok(())
                };
            };
            let s = &mut self.streams[i];
            s.send_window += inc;
            if increment == 0 {
                self.reset(id, code::PROTOCOL_ERROR);
            } else if s.send_window > i64::from(MAX_WINDOW) {
                self.reset(id, code::FLOW_CONTROL_ERROR);
            }
        }
        self.last_progress = now;
        Ok(())
    }
}

/// `n` octets received against [`RECV_WINDOW`] of which `unacked` were
/// already used: a flow-control error beyond it, else the top-up to send
/// (all that was used) once half of it is used.
fn consume(unacked: &mut u32, n: u32) -> Result<Option<u32>, Error> {
    *unacked = unacked.saturating_add(n);
    if *unacked > RECV_WINDOW {
        return Err(Error::FlowControl);
    }
    if *unacked < RECV_WINDOW / 2 {
        return Ok(None);
    }
    Ok(Some(std::mem::take(unacked)))
}

#[cfg(test)]
mod tests;
