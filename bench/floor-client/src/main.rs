//! The floor client: the least work an HTTP/1.1 load generator can do per
//! request, to measure how far `httplab load` is from it. It sends one
//! prebuilt request, counts the reply's bytes (every reply of a run is the
//! same static file, so its length is read from the first reply's head once)
//! and sends the next: no parsing per reply, no timestamps, no histograms,
//! no schedule. Closed loop over C connections on one thread with epoll
//! (mio); keep-alive, or a new connection per request (`--close`: the client
//! closes after the whole reply, as `httplab load --num-calls 1` does).
//!
//! Usage: floor-client ADDR PATH CONNS SECONDS [--close] [--buffers SND,RCV]
//! (`--buffers`: SO_SNDBUF and SO_RCVBUF of every socket, as `httplab load`
//! sets them by default: 4096,16384; the kernel's defaults otherwise.)
//! Prints: `requests N syscalls S seconds T` (S counts this program's own
//! epoll_wait, read, write, connect and close calls).
#![forbid(unsafe_code)]

use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

struct Conn {
    sock: TcpStream,
    got: usize,
    sent: bool,
}

struct Floor {
    addr: SocketAddr,
    request: Vec<u8>,
    close: bool,
    /// SO_SNDBUF and SO_RCVBUF of every socket, when given.
    buffers: Option<(usize, usize)>,
    /// Length of one whole reply (head + body), learned from the first.
    reply_len: Option<usize>,
    head: Vec<u8>,
    requests: u64,
    syscalls: u64,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        eprintln!("usage: floor-client ADDR PATH CONNS SECONDS [--close]");
        std::process::exit(2);
    }
    let addr: SocketAddr = args[1].parse().expect("ADDR as ip:port");
    let conns: usize = args[3].parse().expect("CONNS");
    let secs: f64 = args[4].parse().expect("SECONDS");
    let close = args.iter().skip(5).any(|a| a == "--close");
    let buffers = args
        .iter()
        .skip(5)
        .skip_while(|a| *a != "--buffers")
        .nth(1)
        .map(|v| {
            let (s, r) = v.split_once(',').expect("--buffers SND,RCV");
            (s.parse().expect("SND"), r.parse().expect("RCV"))
        });
    // The same request either way: with --close the client closes after the
    // whole reply (as `httplab load --num-calls 1` does), the server does
    // not close first.
    let request = format!("GET {} HTTP/1.1\r\nHost: {addr}\r\n\r\n", args[2]).into_bytes();
    let mut f = Floor {
        addr,
        request,
        close,
        buffers,
        reply_len: None,
        head: Vec::new(),
        requests: 0,
        syscalls: 0,
    };
    let t = f.run(conns, Duration::from_secs_f64(secs));
    println!(
        "requests {} syscalls {} seconds {:.3}",
        f.requests,
        f.syscalls,
        t.as_secs_f64()
    );
}

impl Floor {
    fn connect(&mut self, poll: &Poll, i: usize) -> Conn {
        self.syscalls += 2; // socket + connect
        let s = socket2::Socket::new(
            socket2::Domain::for_address(self.addr),
            socket2::Type::STREAM.nonblocking(),
            None,
        )
        .expect("socket");
        if let Some((snd, rcv)) = self.buffers {
            self.syscalls += 2;
            s.set_send_buffer_size(snd).expect("SO_SNDBUF");
            s.set_recv_buffer_size(rcv).expect("SO_RCVBUF");
        }
        match s.connect(&self.addr.into()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(115) => {} // EINPROGRESS
            Err(e) => panic!("connect: {e}"),
        }
        let mut sock = TcpStream::from_std(s.into());
        poll.registry()
            .register(&mut sock, Token(i), Interest::READABLE | Interest::WRITABLE)
            .expect("register");
        self.syscalls += 1;
        Conn {
            sock,
            got: 0,
            sent: false,
        }
    }

    fn run(&mut self, n: usize, dur: Duration) -> Duration {
        let mut poll = Poll::new().expect("epoll");
        let mut events = Events::with_capacity(1024);
        let mut conns: Vec<Conn> = (0..n).map(|i| self.connect(&poll, i)).collect();
        let mut buf = vec![0u8; 1 << 16];
        let start = Instant::now();
        while start.elapsed() < dur {
            self.syscalls += 1;
            poll.poll(&mut events, Some(Duration::from_millis(100)))
                .expect("epoll_wait");
            for ev in events.iter() {
                let i = ev.token().0;
                if ev.is_writable() && !conns[i].sent {
                    self.send(&mut conns[i]);
                }
                if ev.is_readable() && self.drain(&mut conns[i], &mut buf) {
                    self.requests += 1;
                    if self.close {
                        self.syscalls += 1; // close
                        let _ = poll.registry().deregister(&mut conns[i].sock);
                        conns[i] = self.connect(&poll, i);
                    } else {
                        conns[i].got = 0;
                        self.send(&mut conns[i]);
                    }
                }
            }
        }
        start.elapsed()
    }

    fn send(&mut self, c: &mut Conn) {
        self.syscalls += 1;
        match c.sock.write(&self.request) {
            Ok(n) if n == self.request.len() => c.sent = true,
            Ok(_) => panic!("short write of a small request"),
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == ErrorKind::NotConnected => {}
            Err(e) => panic!("write: {e}"),
        }
    }

    /// Reads what is there; true when the whole reply is in (its length).
    fn drain(&mut self, c: &mut Conn, buf: &mut [u8]) -> bool {
        loop {
            self.syscalls += 1;
            match c.sock.read(buf) {
                Ok(0) => return c.got > 0,
                Ok(n) => {
                    if self.reply_len.is_none() {
                        self.learn(&buf[..n]);
                    }
                    c.got += n;
                    if self.reply_len.is_some_and(|l| c.got >= l) {
                        c.sent = false;
                        return true;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
                Err(e) => panic!("read: {e}"),
            }
        }
    }

    /// The first reply's head gives every reply's length.
    fn learn(&mut self, bytes: &[u8]) {
        self.head.extend_from_slice(bytes);
        let text = String::from_utf8_lossy(&self.head);
        if let Some(end) = text.find("\r\n\r\n") {
            let len = text[..end]
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse::<usize>().ok())?
                })
                .expect("a Content-Length");
            self.reply_len = Some(end + 4 + len);
        }
    }
}
