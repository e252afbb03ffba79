//! The blocking models (`single`, `threads`, `fork`): each connection is
//! served start to end by one thread or process with blocking writes and
//! `poll`-guarded reads, through the same [`Session`] and [`Handler`] as
//! the event model. With `--http2 on` a connection that chooses HTTP/2 (by
//! ALPN over TLS, by its first bytes in cleartext) is driven through the
//! same [`H2Session`]: its streams are answered in the order they come on
//! that one thread or process, which writes each answer before it reads
//! more — what a thread or a process per connection means under
//! multiplexing.

use std::io;
use std::io::Read;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::h2session::{decide, H2Limits, H2Session, Sniffed};
use crate::handler::Handler;
use crate::out::Flush;
use crate::sendpath::SendPath;
use crate::session::Session;
use crate::sys::{self, WakePipe};
use crate::tls::{Fill, Transport};

/// TLS configuration shared by every connection (None: cleartext).
pub type Tls = Option<Arc<rustls::ServerConfig>>;

/// A worker's reusable buffers: the session read buffer and the scratch
/// buffer for file chunks on their way into TLS.
#[derive(Default)]
pub struct Buffers {
    rbuf: Vec<u8>,
    scratch: Vec<u8>,
}

/// What a blocking model needs to notice shutdown.
#[derive(Clone)]
pub struct Stop {
    /// Set once shutdown was requested.
    pub flag: Arc<AtomicBool>,
    /// Readable once shutdown was requested.
    pub wake: Arc<WakePipe>,
}

impl Stop {
    fn requested(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }
}

/// Serves one connection to the end with blocking I/O.
pub fn serve_connection(
    stream: TcpStream,
    h: &mut Handler,
    stop: &Stop,
    bufs: &mut Buffers,
    tls: &Tls,
) {
    let now = Instant::now();
    let Ok(mut tp) = Transport::new(tls.as_ref(), h.config().tls_handshake_timeout, now) else {
        h.stats().closed();
        h.flush();
        return;
    };
    let rbuf = &mut bufs.rbuf;
    let peer = stream.peer_addr().ok().map(|a| a.ip());
    let _ = stream.set_nodelay(true);
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_write_timeout(Some(h.config().send_timeout));
    let mut s = Session::new(peer, now);
    if rbuf.len() != h.config().pipeline_buffer.max(1024) {
        *rbuf = vec![0; h.config().pipeline_buffer.max(1024)];
    }
    let _ = s.attach_rbuf(std::mem::take(rbuf));
    let proto = if h.config().http2 {
        decide_protocol(&stream, &mut s, &mut tp, h, stop, &mut bufs.scratch)
    } else {
        Some(Sniffed::Http1)
    };
    match proto {
        Some(Sniffed::Http2) => {
            let mut h2 = H2Session::new(peer, Instant::now(), h, H2Limits::default());
            run_h2(
                &stream,
                &mut s,
                &mut h2,
                &mut tp,
                h,
                stop,
                &mut bufs.scratch,
            );
        }
        Some(_) => run_session(&stream, &mut s, &mut tp, h, stop, &mut bufs.scratch),
        // Ended (or failed) before a protocol was chosen.
        None => {}
    }
    if let Some(b) = s.detach_rbuf() {
        *rbuf = b;
    }
    h.stats().closed();
    h.flush();
}

fn run_session(
    stream: &TcpStream,
    s: &mut Session,
    tp: &mut Transport,
    h: &mut Handler,
    stop: &Stop,
    scratch: &mut Vec<u8>,
) {
    let fd = stream.as_raw_fd();
    let mut shutting = false;
    let mut path = SendPath::from_config(h.config(), false);
    loop {
        h.tick();
        let now = Instant::now();
        if !shutting && stop.requested() {
            shutting = true;
            s.begin_shutdown();
        }
        s.process(h, now, shutting);
        if tp.has_output(s) {
            let mut written = 0;
            let opts = path.for_write(s, tp.is_plain());
            let r = tp.write(s, fd, usize::MAX, opts, scratch, &mut written);
            path.count_sent(opts, &mut s.out);
            path.flush_into(h.stats());
            let writes = std::mem::take(&mut s.out.writes);
            h.count_io(written, writes);
            s.wrote(Instant::now());
            match r {
                Ok(Flush::Done) | Ok(Flush::Yield) => continue,
                // SO_SNDTIMEO expired: the peer is not reading.
                Ok(Flush::Blocked) | Err(_) => return,
            }
        }
        if s.finished() {
            if tp.close_notify() {
                continue;
            }
            if tp.needs_linger(s) {
                let wake = if shutting {
                    None
                } else {
                    Some(stop.wake.read_fd())
                };
                linger(
                    stream,
                    h.config().idle_timeout.min(Duration::from_secs(2)),
                    wake,
                );
            }
            return;
        }
        if tp.has_buffered_input() {
            // Decrypted input is waiting: hand it over without polling.
            match tp.fill(s, fd, Instant::now()) {
                Ok(Fill::NoRoom) if !tp.has_output(s) && !s.finished() => return,
                Ok(_) => continue,
                Err(_) => return,
            }
        }
        let deadline = tp.deadline(s, h);
        match wait_readable(fd, stop, shutting, deadline) {
            Ok(Woke::Readable) => {}
            Ok(Woke::Deadline) => {
                if Instant::now() >= deadline && tp.on_timeout(s, h, Instant::now()).is_some() {
                    return;
                }
                continue;
            }
            Ok(Woke::Stop) => {
                // Shutdown (a forked child cannot see the parent's flag,
                // only the pipe).
                shutting = true;
                s.begin_shutdown();
                continue;
            }
            Err(_) => return,
        }
        match tp.fill(s, fd, Instant::now()) {
            // Nothing may be read (backed up or closing): wait for the
            // output, which the loop writes first.
            Ok(Fill::NoRoom) if !tp.has_output(s) && !s.finished() => return,
            Ok(_) => {}
            // Includes a failed TLS handshake or garbage instead of a
            // ClientHello: closed quietly.
            Err(_) => return,
        }
    }
}

/// What [`wait_readable`] woke for.
enum Woke {
    /// The connection has input (or an end of input).
    Readable,
    /// The deadline passed.
    Deadline,
    /// Shutdown was requested (the stop pipe is readable).
    Stop,
}

/// Waits until `fd` (or, unless `shutting`, the stop pipe) is readable or
/// `deadline` passes.
fn wait_readable(fd: i32, stop: &Stop, shutting: bool, deadline: Instant) -> io::Result<Woke> {
    let wait = deadline.saturating_duration_since(Instant::now());
    let fds: Vec<i32> = if shutting {
        vec![fd]
    } else {
        vec![fd, stop.wake.read_fd()]
    };
    let ready = sys::poll_readable(&fds, Some(wait))?;
    Ok(if ready.len() > 1 && ready[1] {
        Woke::Stop
    } else if ready[0] {
        Woke::Readable
    } else {
        Woke::Deadline
    })
}

/// `--http2 on`: completes a TLS handshake (writing its records) and reads
/// until ALPN or the first bytes say what the connection speaks. None: it
/// ended, failed or timed out first.
fn decide_protocol(
    stream: &TcpStream,
    s: &mut Session,
    tp: &mut Transport,
    h: &mut Handler,
    stop: &Stop,
    scratch: &mut Vec<u8>,
) -> Option<Sniffed> {
    let fd = stream.as_raw_fd();
    let mut path = SendPath::from_config(h.config(), false);
    let mut shutting = false;
    loop {
        if tp.has_output(s) {
            let mut written = 0;
            let opts = path.for_write(s, tp.is_plain());
            let r = tp.write(s, fd, usize::MAX, opts, scratch, &mut written);
            let writes = std::mem::take(&mut s.out.writes);
            h.count_io(written, writes);
            match r {
                Ok(Flush::Done) | Ok(Flush::Yield) => continue,
                Ok(Flush::Blocked) | Err(_) => return None,
            }
        }
        // At shutdown or the end of input, HTTP/1.1 closes it.
        let ended = s.input_ended() || shutting || stop.requested();
        match decide(tp.alpn(), s.unread(), ended) {
            Sniffed::Wait => {}
            decided => return Some(decided),
        }
        if !tp.has_buffered_input() {
            let deadline = tp.deadline(s, h);
            match wait_readable(fd, stop, shutting, deadline) {
                Ok(Woke::Readable) => {}
                Ok(Woke::Deadline) => {
                    if tp.on_timeout(s, h, Instant::now()).is_some() {
                        return None;
                    }
                    continue;
                }
                // Shutdown (a forked child sees only the pipe): decided
                // as HTTP/1.1 on the next turn.
                Ok(Woke::Stop) => {
                    shutting = true;
                    continue;
                }
                Err(_) => return None,
            }
        }
        if tp.fill(s, fd, Instant::now()).is_err() {
            return None;
        }
    }
}

/// Serves an HTTP/2 connection to the end: writes the machine's output,
/// feeds it what arrives (through the session's read buffer), one stream
/// after another on this thread or process.
fn run_h2(
    stream: &TcpStream,
    s: &mut Session,
    h2: &mut H2Session,
    tp: &mut Transport,
    h: &mut Handler,
    stop: &Stop,
    scratch: &mut Vec<u8>,
) {
    let fd = stream.as_raw_fd();
    let mut shutting = false;
    let mut path = SendPath::from_config(h.config(), false);
    loop {
        h.tick();
        if !shutting && stop.requested() {
            shutting = true;
            h2.begin_shutdown();
        }
        if tp.has_output_of(&h2.out) {
            let mut written = 0;
            let opts = path.for_out(&h2.out, s.peer_is_loopback(), tp.is_plain());
            let r = tp.write_out(&mut h2.out, fd, usize::MAX, opts, scratch, &mut written);
            path.count_sent(opts, &mut h2.out);
            path.flush_into(h.stats());
            let writes = std::mem::take(&mut h2.out.writes);
            h.count_io(written, writes);
            h2.wrote(Instant::now());
            match r {
                Ok(Flush::Done) | Ok(Flush::Yield) => continue,
                // SO_SNDTIMEO expired: the peer is not reading.
                Ok(Flush::Blocked) | Err(_) => return,
            }
        }
        if !s.unread().is_empty() {
            h2.feed(s.unread(), h, Instant::now());
            s.consume_unread();
            continue;
        }
        if h2.finished() {
            if tp.close_notify() {
                continue;
            }
            if !s.input_ended() {
                // Drain what the peer still sends, so the close does not
                // turn into a reset that destroys the GOAWAY.
                let wake = (!shutting).then(|| stop.wake.read_fd());
                linger(
                    stream,
                    h.config().idle_timeout.min(Duration::from_secs(2)),
                    wake,
                );
            }
            return;
        }
        if !h2.wants_input() {
            // Backed up with nothing to write cannot happen; closing.
            return;
        }
        if !tp.has_buffered_input() {
            let deadline = h2.deadline(h);
            match wait_readable(fd, stop, shutting, deadline) {
                Ok(Woke::Readable) => {}
                Ok(Woke::Deadline) => {
                    if h2.on_timeout(h, Instant::now()).is_some() {
                        return;
                    }
                    continue;
                }
                Ok(Woke::Stop) => {
                    // Shutdown (a forked child cannot see the parent's
                    // flag, only the pipe).
                    shutting = true;
                    h2.begin_shutdown();
                    continue;
                }
                Err(_) => return,
            }
        }
        match tp.fill(s, fd, Instant::now()) {
            Ok(Fill::Eof) => h2.on_eof(),
            Ok(_) => {}
            Err(_) => return,
        }
    }
}

/// Shuts the write side and drains input until EOF or `limit`, so the close
/// does not reset a response the peer has not read yet. Ends early at
/// shutdown (`wake` readable).
fn linger(stream: &TcpStream, limit: Duration, wake: Option<i32>) {
    let _ = stream.shutdown(Shutdown::Write);
    let until = Instant::now() + limit;
    let mut scratch = [0u8; 4096];
    let mut r = stream;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        let mut fds = vec![stream.as_raw_fd()];
        fds.extend(wake);
        match sys::poll_readable(&fds, Some(left)) {
            Ok(v) if v.len() > 1 && v[1] => return,
            Ok(v) if v[0] => match r.read(&mut scratch) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            },
            _ => return,
        }
    }
}

/// Waits until the listener is readable or shutdown is requested; then
/// accepts one connection (None on shutdown).
fn accept_one(listener: &TcpListener, stop: &Stop, extra: &[i32]) -> Option<io::Result<TcpStream>> {
    loop {
        if stop.requested() {
            return None;
        }
        let mut fds = vec![listener.as_raw_fd(), stop.wake.read_fd()];
        fds.extend_from_slice(extra);
        match sys::poll_readable(&fds, Some(Duration::from_millis(500))) {
            Ok(r) if r[0] => {}
            Ok(r) if r[2..].iter().any(|&b| b) => {
                return Some(Err(io::ErrorKind::Interrupted.into()))
            }
            Ok(_) => continue,
            Err(e) => return Some(Err(e)),
        }
        match listener.accept() {
            Ok((s, _)) => return Some(Ok(s)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE)) => {
                // Out of descriptors: back off instead of spinning.
                let _ =
                    sys::poll_readable(&[stop.wake.read_fd()], Some(Duration::from_millis(100)));
                continue;
            }
            Err(e) => return Some(Err(e)),
        }
    }
}

/// `--model single`: one thread, one connection at a time.
pub fn run_single(listener: TcpListener, mut h: Handler, stop: Stop, tls: Tls) {
    let mut bufs = Buffers::default();
    while let Some(r) = accept_one(&listener, &stop, &[]) {
        if let Ok(stream) = r {
            h.stats().accepted();
            serve_connection(stream, &mut h, &stop, &mut bufs, &tls);
        }
    }
    h.flush();
}

/// `--model threads`: spawns `threads` workers fed by a bounded queue of
/// `queue` connections; the acceptor blocks while the queue is full, so
/// further clients wait in the listen backlog.
pub fn spawn_threads(
    listener: TcpListener,
    make_handler: &dyn Fn() -> Handler,
    threads: usize,
    queue: usize,
    stop: Stop,
    tls: Tls,
) -> io::Result<Vec<std::thread::JoinHandle<()>>> {
    let (tx, rx) = mpsc::sync_channel::<TcpStream>(queue.max(1));
    let rx = Arc::new(Mutex::new(rx));
    let mut joins = Vec::new();
    for i in 0..threads.max(1) {
        let rx = Arc::clone(&rx);
        let mut h = make_handler();
        let stop = stop.clone();
        let tls = tls.clone();
        joins.push(
            std::thread::Builder::new()
                .name(format!("httplab-thr-{i}"))
                .spawn(move || {
                    let mut bufs = Buffers::default();
                    loop {
                        let next = match rx.lock() {
                            Ok(guard) => guard.recv(),
                            Err(_) => break,
                        };
                        match next {
                            Ok(stream) => serve_connection(stream, &mut h, &stop, &mut bufs, &tls),
                            Err(_) => break,
                        }
                    }
                    h.flush();
                })?,
        );
    }
    let stats_h = make_handler();
    let stop2 = stop.clone();
    joins.push(
        std::thread::Builder::new()
            .name("httplab-accept".into())
            .spawn(move || {
                while let Some(r) = accept_one(&listener, &stop2, &[]) {
                    if let Ok(stream) = r {
                        stats_h.stats().accepted();
                        if tx.send(stream).is_err() {
                            break;
                        }
                    }
                }
                drop(tx);
            })?,
    );
    Ok(joins)
}

/// `--model fork`: the calling thread accepts; each connection is served by
/// a child process. At most `max_children` run at once (the parent stops
/// accepting at the cap); children are reaped as they exit, via pidfds.
pub fn run_fork(
    mut listener: TcpListener,
    mut h: Handler,
    max_children: usize,
    stop: Stop,
    tls: Tls,
) {
    let mut children: Vec<(sys::Pid, OwnedFd)> = Vec::new();
    let mut bufs = Buffers::default();
    let max_children = max_children.max(1);
    loop {
        reap_ready(&mut children, &h);
        if stop.requested() {
            break;
        }
        if children.len() >= max_children {
            // At the cap: wait for a child to exit (or shutdown), leaving new
            // clients in the listen backlog.
            let mut fds: Vec<i32> = children.iter().map(|(_, fd)| fd.as_raw_fd()).collect();
            fds.push(stop.wake.read_fd());
            let _ = sys::poll_readable(&fds, Some(Duration::from_millis(500)));
            continue;
        }
        let pidfds: Vec<i32> = children.iter().map(|(_, fd)| fd.as_raw_fd()).collect();
        let stream = match accept_one(&listener, &stop, &pidfds) {
            None => break,
            Some(Ok(s)) => s,
            Some(Err(_)) => continue,
        };
        h.stats().accepted();
        // Counted before fork: the child may finish its connection before
        // the parent runs again. forked - reaped = live children.
        h.stats().forked();
        // The child drops the listener, serves the connection and exits
        // (status 1 if it panicked); the parent gets the listener back and
        // drops its copy of the connection with the closure.
        let (l, forked) = sys::fork_child(listener, || {
            serve_connection(stream, &mut h, &stop, &mut bufs, &tls);
            0
        });
        listener = l;
        match forked {
            Ok(pid) => match sys::pidfd_open(pid) {
                Ok(fd) => children.push((pid, fd)),
                Err(_) => {
                    sys::wait_child(pid);
                    h.stats().reaped();
                }
            },
            Err(e) => {
                eprintln!("httplab serve: fork failed: {e}; closing the connection");
                h.stats().reaped();
                h.stats().refused();
                h.stats().closed();
                let _ =
                    sys::poll_readable(&[stop.wake.read_fd()], Some(Duration::from_millis(100)));
            }
        }
    }
    drop(listener);
    // Graceful: children see the wake pipe and finish; cut them off at the
    // shutdown timeout.
    let deadline = Instant::now() + h.config().shutdown_timeout;
    while !children.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            for (pid, _) in &children {
                sys::kill_child(*pid);
                sys::wait_child(*pid);
                h.stats().reaped();
            }
            children.clear();
            break;
        }
        let fds: Vec<i32> = children.iter().map(|(_, fd)| fd.as_raw_fd()).collect();
        let _ = sys::poll_readable(&fds, Some(left));
        reap_ready(&mut children, &h);
    }
    h.flush();
}

fn reap_ready(children: &mut Vec<(sys::Pid, OwnedFd)>, h: &Handler) {
    children.retain(|(pid, _)| {
        let gone = sys::reap(*pid);
        if gone {
            h.stats().reaped();
        }
        !gone
    });
}
