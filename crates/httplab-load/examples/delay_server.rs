//! A test server that answers every request exactly D milliseconds after it
//! arrived, for the load generator's latency-accuracy benchmark
//! (bench/load-accuracy).
//!
//! Usage: `delay_server [--port P] [--delay-ms D] [--delay-us U] [--body-bytes N]`;
//! prints `listening on ADDR` and serves until killed.
//!
//! To add as little error of its own as possible it is one thread that
//! busy-polls epoll (it keeps one core at 100 %: pin it): a request is seen
//! within microseconds of its arrival and answered within microseconds of
//! its due time. Keep-alive; pipelined requests are answered in order.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};

const LISTENER: Token = Token(usize::MAX);

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Conn {
    sock: TcpStream,
    buf: Vec<u8>,
    out: Vec<u8>,
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let port = arg(&args, "--port", 0) as u16;
    let delay =
        Duration::from_micros(arg(&args, "--delay-ms", 0) * 1000 + arg(&args, "--delay-us", 0));
    let body = vec![b'x'; arg(&args, "--body-bytes", 100) as usize];
    let mut resp = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nContent-Type: text/plain\r\n\r\n",
        body.len()
    )
    .into_bytes();
    resp.extend_from_slice(&body);

    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let mut listener = TcpListener::bind(addr)?;
    println!("listening on {}", listener.local_addr()?);
    std::io::stdout().flush()?;
    let mut poll = Poll::new()?;
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    let mut events = Events::with_capacity(1024);
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    // Constant delay: due times are in arrival order, so one FIFO suffices.
    let mut due: VecDeque<(Instant, usize, u32)> = VecDeque::new();
    let mut gens: Vec<u32> = Vec::new();
    let mut tmp = vec![0u8; 65536];
    loop {
        let timeout = if due.is_empty() {
            Some(Duration::from_millis(1))
        } else {
            Some(Duration::ZERO)
        };
        match poll.poll(&mut events, timeout) {
            Ok(()) => {}
            // SIGSTOP/SIGCONT (the coordinated-omission experiment) interrupts epoll_wait.
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        for ev in events.iter() {
            if ev.token() == LISTENER {
                while let Ok((mut sock, _)) = listener.accept() {
                    let _ = sock.set_nodelay(true);
                    let idx = free.pop().unwrap_or_else(|| {
                        conns.push(None);
                        gens.push(0);
                        conns.len() - 1
                    });
                    gens[idx] = gens[idx].wrapping_add(1);
                    poll.registry()
                        .register(&mut sock, Token(idx), Interest::READABLE)?;
                    conns[idx] = Some(Conn {
                        sock,
                        buf: Vec::new(),
                        out: Vec::new(),
                    });
                }
                continue;
            }
            let idx = ev.token().0;
            let Some(c) = conns.get_mut(idx).and_then(|c| c.as_mut()) else {
                continue;
            };
            let arrived = Instant::now();
            let mut closed = false;
            loop {
                match c.sock.read(&mut tmp) {
                    Ok(0) => {
                        closed = true;
                        break;
                    }
                    Ok(n) => c.buf.extend_from_slice(&tmp[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        closed = true;
                        break;
                    }
                }
            }
            while let Some(end) = c.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                c.buf.drain(..end + 4);
                due.push_back((arrived + delay, idx, gens[idx]));
            }
            if closed {
                conns[idx] = None;
                free.push(idx);
            }
        }
        let now = Instant::now();
        while let Some(&(t, idx, gen)) = due.front() {
            if t > now {
                break;
            }
            due.pop_front();
            if gens[idx] != gen {
                continue;
            }
            if let Some(c) = conns.get_mut(idx).and_then(|c| c.as_mut()) {
                c.out.extend_from_slice(&resp);
                match c.sock.write(&c.out) {
                    Ok(n) => {
                        c.out.drain(..n);
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(_) => {
                        conns[idx] = None;
                        free.push(idx);
                    }
                }
            }
        }
    }
}
