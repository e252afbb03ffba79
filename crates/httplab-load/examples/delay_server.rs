//! A test server that answers every request after exactly D milliseconds
//! (sleep, then spin for the last 200 µs), for the load generator's latency
//! accuracy benchmark (bench/load-accuracy).
//!
//! Usage: `delay_server [--port P] [--delay-ms D] [--body-bytes N]`; prints
//! `listening on ADDR` and serves until killed. One thread per connection,
//! keep-alive, pipelined requests answered in order.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn wait_until(t: Instant) {
    loop {
        let now = Instant::now();
        if now >= t {
            return;
        }
        let left = t - now;
        if left > Duration::from_micros(300) {
            std::thread::sleep(left - Duration::from_micros(200));
        } else {
            std::hint::spin_loop();
        }
    }
}

fn serve(mut c: TcpStream, delay: Duration, body: &[u8]) {
    let _ = c.set_nodelay(true);
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nContent-Type: text/plain\r\n\r\n",
        body.len()
    );
    let mut resp = head.into_bytes();
    resp.extend_from_slice(body);
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut tmp = [0u8; 16384];
    loop {
        let n = match c.read(&mut tmp) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let arrived = Instant::now();
        buf.extend_from_slice(&tmp[..n]);
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..end + 4);
            wait_until(arrived + delay);
            if c.write_all(&resp).is_err() {
                return;
            }
        }
    }
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let port = arg(&args, "--port", 0) as u16;
    let delay =
        Duration::from_micros(arg(&args, "--delay-ms", 0) * 1000 + arg(&args, "--delay-us", 0));
    let body = vec![b'x'; arg(&args, "--body-bytes", 100) as usize];
    let l = TcpListener::bind(("127.0.0.1", port))?;
    println!("listening on {}", l.local_addr()?);
    std::io::stdout().flush()?;
    for c in l.incoming() {
        let Ok(c) = c else { continue };
        let body = body.clone();
        std::thread::spawn(move || serve(c, delay, &body));
    }
    Ok(())
}
