//! Client calibration (seed 003: "test your client against a fast Web site in
//! order to gauge how many outgoing HTTP requests can be sustained by your
//! client"): the generator runs the run's *shape* (connections in flight,
//! calls per connection, pipelining depth, response size) as fast as it can,
//! closed loop, against an in-process sink that answers every request with
//! the same pre-rendered bytes, and measures what each reply costs the
//! generator in CPU time. Its ceiling for that shape is the rate at which
//! that cost fills every core it may use: replies ÷ CPU seconds × cores
//! (never below the rate it actually reached). A closed loop of a few
//! connections is bounded by round trips, not by the client, so the reached
//! rate alone would call a mostly idle client "saturated"; the CPU cost per
//! reply is what the client can afford. A real run at >= 85 % of the
//! ceiling is client-bound.
//!
//! The sink runs on the cores the client may NOT use, when there are any:
//! in a real run the server is on other cores than the client (the study
//! pins them apart), so the client's ceiling is what the client's cores can
//! do with the server's work done elsewhere. A sink sharing the client's
//! cores would take CPU from the client and make the ceiling too low (every
//! run would look closer to client-bound than it is). When the client may
//! use every core, the sink has to share them; the calibration says so
//! (`shared_cores`) and its ceiling is then a lower bound.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use mio::net::{TcpListener as MioListener, TcpStream};
use mio::{Events, Interest, Poll, Token};

use crate::report::Calibration;
use crate::spec::{Arrival, LoadSpec, Workload};
use crate::sys;

/// Warm-up of a calibration run, seconds (left out of the ceiling).
pub const CALIBRATION_WARMUP_S: f64 = 0.25;
/// Measurement window of a calibration run, seconds.
pub const CALIBRATION_WINDOW_S: f64 = 1.0;
/// Connections in flight when calibrating an open-loop run (see `LoadSpec::calibrate_conns`).
pub const DEFAULT_CALIBRATION_CONNS: u64 = 16;
/// Response body size when neither `calibrate_size` nor a file under `verify_root` gives one.
pub const DEFAULT_CALIBRATION_SIZE: u64 = 100;

/// The first path the run requests (for the response size under `verify_root`).
fn first_path(spec: &LoadSpec) -> String {
    if let Some(u) = spec.uris.first() {
        return u.clone();
    }
    if let Workload::SessionLog { sessions, .. } = &spec.workload {
        if let Some(c) = sessions
            .first()
            .and_then(|s| s.first())
            .and_then(|b| b.calls.first())
        {
            return c.uri.clone();
        }
    }
    if let Some((n, _)) = spec.wset {
        return crate::plan::wset_path(&spec.uri, n, 0);
    }
    spec.uri.clone()
}

fn file_under(root: &std::path::Path, path: &str) -> std::path::PathBuf {
    let p = path.split(['?', '#']).next().unwrap_or("/");
    let mut rel = p.trim_start_matches('/').to_string();
    if rel.is_empty() || rel.ends_with('/') {
        rel.push_str("index.html");
    }
    root.join(rel)
}

/// The calibration run for `spec`'s shape against the sink on `port`, and the sink's body.
fn calibration_spec(spec: &LoadSpec, port: u16) -> Result<(LoadSpec, Vec<u8>)> {
    let mut c = spec.clone();
    // Same request bytes (Host header included) to a different address.
    c.host_header = Some(
        spec.host_header
            .clone()
            .unwrap_or_else(|| spec.server.clone()),
    );
    c.server = Ipv4Addr::LOCALHOST.to_string();
    c.port = port;
    c.local_addrs.clear();
    // The sink speaks cleartext: an HTTPS run's ceiling is measured without
    // TLS (an upper bound of the TLS ceiling).
    c.tls = None;
    c.warmup = CALIBRATION_WARMUP_S;
    c.duration = Some(CALIBRATION_WINDOW_S);
    c.timeout = Some(5.0);
    c.client_ceiling = None;
    c.calibrate = false;
    c.calibrate_only = false;
    c.json = None;
    c.csv = None;
    c.quiet = true;
    c.no_progress = true;
    c.print_reply = crate::spec::PrintWhat::None;
    c.print_request = crate::spec::PrintWhat::None;
    c.label = "calibration".into();
    // The shape without the schedule: no stages (their rate is the run's
    // own), and no probe beside the sink.
    c.stages = Vec::new();
    c.probe = None;
    c.reconnect = true;
    c.failure_status = None;
    // Response body: the first path's file when bodies are verified (the
    // calibration then verifies it too, at the real cost), else canned bytes.
    let first = first_path(spec);
    let body = match (spec.calibrate_size, &spec.verify_root) {
        (Some(n), _) => {
            c.verify_root = None;
            filler(n)
        }
        (None, Some(root)) => match std::fs::read(file_under(root, &first)) {
            Ok(bytes) if !matches!(spec.workload, Workload::SessionLog { .. }) => {
                c.uris = vec![first];
                c.wset = None;
                bytes
            }
            Ok(bytes) => {
                c.verify_root = None;
                bytes
            }
            Err(_) => {
                c.verify_root = None;
                filler(DEFAULT_CALIBRATION_SIZE)
            }
        },
        (None, None) => filler(DEFAULT_CALIBRATION_SIZE),
    };
    let open_conns = spec.calibrate_conns.unwrap_or(DEFAULT_CALIBRATION_CONNS);
    let k = match spec.arrival {
        Arrival::Concurrent(n) => n.max(1),
        Arrival::Open(_) => open_conns,
    };
    // As fast as the generator can go: closed loop, no think times, no counts.
    c.workload = match &spec.workload {
        Workload::Requests {
            num_calls, burst, ..
        } => Workload::Requests {
            num_conns: None,
            num_calls: *num_calls,
            burst: *burst,
        },
        Workload::Sessions { calls, burst, .. } => Workload::Sessions {
            num_sessions: None,
            calls: *calls,
            burst: *burst,
            think: 0.0,
        },
        Workload::SessionLog { sessions, file, .. } => {
            let mut sessions = sessions.clone();
            for b in sessions.iter_mut().flatten() {
                b.think = Some(0.0);
            }
            Workload::SessionLog {
                num_sessions: None,
                think: 0.0,
                sessions,
                file: file.clone(),
            }
        }
        Workload::Users { users, burst, .. } => Workload::Users {
            users: *users,
            requests_per_user: None,
            think: 0.0,
            burst: *burst,
            pace: None,
        },
    };
    c.arrival = match spec.workload {
        Workload::Users { users, .. } => Arrival::Concurrent(users),
        _ => Arrival::Concurrent(k),
    };
    // A client shard calibrates the part it runs, on its own, now.
    if let (Workload::Users { users, .. }, (i, n)) = (&mut c.workload, spec.client) {
        *users = crate::arrivals::schedule::share_lane(*users, (u64::from(i), u64::from(n.max(1))))
            .max(1);
        c.arrival = Arrival::Concurrent(*users);
    }
    c.client = (0, 1);
    c.start_at = None;
    c.run_id = None;
    c.raw_latencies = None;
    Ok((c, body))
}

fn filler(n: u64) -> Vec<u8> {
    (0..n.min(1 << 30)).map(|i| b'a' + (i % 26) as u8).collect()
}

fn shape_of(c: &LoadSpec, body_len: u64) -> (String, u64, Option<u64>, u32) {
    let (conns, calls, pipeline) = match &c.workload {
        Workload::Requests {
            num_calls, burst, ..
        } => match c.arrival {
            Arrival::Concurrent(k) => (k, Some(*num_calls), *burst),
            Arrival::Open(_) => (0, Some(*num_calls), *burst),
        },
        Workload::Sessions { calls, burst, .. } => match c.arrival {
            Arrival::Concurrent(k) => (k, Some(*calls), *burst),
            Arrival::Open(_) => (0, Some(*calls), *burst),
        },
        Workload::SessionLog { .. } => match c.arrival {
            Arrival::Concurrent(k) => (k, None, 1),
            Arrival::Open(_) => (0, None, 1),
        },
        Workload::Users { users, burst, .. } => (*users, c.calls_per_conn, *burst),
    };
    let threads = c
        .threads
        .min(conns.clamp(1, u64::from(u32::MAX)) as u32)
        .max(1);
    let unit = if matches!(c.workload, Workload::Users { .. }) {
        "users"
    } else {
        "connections"
    };
    let calls_s = match (&c.workload, calls) {
        (Workload::SessionLog { .. }, _) => "session-log sessions".to_string(),
        (_, Some(n)) => format!("{n} calls/connection"),
        (_, None) => "keep-alive".to_string(),
    };
    let pipe_s = if pipeline > 1 {
        format!("pipeline {pipeline}")
    } else {
        "no pipelining".to_string()
    };
    let shape = format!(
        "{conns} {unit}, {calls_s}, {pipe_s}, {body_len} B responses, {threads} thread{}",
        if threads == 1 { "" } else { "s" }
    );
    (shape, conns, calls, pipeline)
}

/// Measures the generator's own ceiling (replies/s) for `spec`'s shape
/// against an in-process sink; takes about 1.3 s. Call it once per shape and
/// pass the ceiling in `LoadSpec::client_ceiling`. The generator's threads
/// inherit the calling thread's CPU affinity (pin it as for the real run);
/// the sink runs on the other cores when there are any.
pub fn calibrate(spec: &LoadSpec) -> Result<Calibration> {
    spec.validate()?;
    let client_cores = sys::affinity();
    let others: Vec<u32> = sys::online_cpus()
        .into_iter()
        .filter(|c| !client_cores.contains(c))
        .collect();
    let shared = others.is_empty();
    let sink_cores = if shared { client_cores.clone() } else { others };
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .context("calibration: cannot open the sink's loopback listener")?;
    let port = listener.local_addr()?.port();
    let (cspec, body) = calibration_spec(spec, port)?;
    let body_len = body.len() as u64;
    let mut head = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\n\r\n",
        body.len()
    )
    .into_bytes();
    head.extend_from_slice(&body);
    // One sink thread when it shares the client's cores (least interference);
    // else one per sink core, up to 4.
    let n_threads = if shared {
        1
    } else {
        sink_cores.len().clamp(1, 4)
    };
    let sink = Sink::start(listener, head, n_threads, &sink_cores)?;
    let r = crate::run::run(&cspec, false);
    drop(sink);
    let r = r.context("calibration run failed")?;
    if r.totals.replies == 0 || r.errors.total > 0 {
        bail!(
            "calibration against the in-process sink failed: {} replies, {} errors",
            r.totals.replies,
            r.errors.total
        );
    }
    let (shape, connections, calls_per_conn, pipeline) = shape_of(&cspec, body_len);
    let reached = r.totals.replies as f64 / r.totals.test_duration_s.max(1e-9);
    let cpu_s = r.self_check.client_cpu_pct / 100.0 * r.totals.test_duration_s;
    let cores = (r.config.threads as usize).min(client_cores.len().max(1)) as f64;
    let by_cpu = if cpu_s > 1e-3 {
        r.totals.replies as f64 / cpu_s * cores
    } else {
        reached
    };
    Ok(Calibration {
        ceiling_rps: by_cpu.max(reached),
        reached_rps: reached,
        shape,
        connections,
        calls_per_conn,
        pipeline,
        response_bytes: body_len,
        threads: r.config.threads,
        client_cores,
        sink_cores,
        shared_cores: shared,
        window_s: r.totals.test_duration_s,
        replies: r.totals.replies,
        client_cpu_pct: r.self_check.client_cpu_pct,
    })
}

/// A minimal loopback HTTP/1.1 responder: counts request heads (`\r\n\r\n`)
/// and answers each with the same pre-rendered response, never parsing
/// anything else, so that it costs as little as possible. Written by hand
/// (not the httplab server) because it must be cheaper than any real server:
/// no routing, no files, no per-request state beyond a byte count.
struct Sink {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Sink {
    fn start(
        listener: TcpListener,
        response: Vec<u8>,
        n_threads: usize,
        cores: &[u32],
    ) -> Result<Sink> {
        listener.set_nonblocking(true)?;
        // The response repeated to at least 64 KiB, so that one write carries
        // many pipelined replies.
        let len = response.len().max(1);
        let copies = (65536 / len).max(1);
        let batch: Arc<Vec<u8>> = Arc::new(response.repeat(copies));
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for i in 0..n_threads {
            let l = listener.try_clone()?;
            let stop = Arc::clone(&stop);
            let batch = Arc::clone(&batch);
            let cores = cores.to_vec();
            let h = std::thread::Builder::new()
                .name(format!("httplab-sink-{i}"))
                .spawn(move || {
                    let _ = sys::pin_current_thread(&cores);
                    if let Err(e) = sink_loop(l, &batch, len, &stop) {
                        eprintln!("httplab load: calibration sink: {e}");
                    }
                })?;
            threads.push(h);
        }
        Ok(Sink { stop, threads })
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
    }
}

struct SinkConn {
    sock: TcpStream,
    /// Response bytes still to write.
    owed: u64,
    /// Offset of the next byte within the response.
    pos: usize,
    /// Progress through "\r\n\r\n" (0..=3), carried across reads.
    crlf: u8,
}

const LISTENER: Token = Token(usize::MAX - 2);

fn sink_loop(l: TcpListener, batch: &[u8], len: usize, stop: &AtomicBool) -> io::Result<()> {
    let mut poll = Poll::new()?;
    let mut listener = MioListener::from_std(l);
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    let mut conns: Vec<Option<SinkConn>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut events = Events::with_capacity(256);
    let mut buf = vec![0u8; 64 * 1024];
    while !stop.load(Ordering::Relaxed) {
        match poll.poll(&mut events, Some(Duration::from_millis(20))) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        for ev in events.iter() {
            if ev.token() == LISTENER {
                loop {
                    match listener.accept() {
                        Ok((mut sock, _)) => {
                            let _ = sock.set_nodelay(true);
                            let idx = free.pop().unwrap_or_else(|| {
                                conns.push(None);
                                conns.len() - 1
                            });
                            poll.registry().register(
                                &mut sock,
                                Token(idx),
                                Interest::READABLE | Interest::WRITABLE,
                            )?;
                            conns[idx] = Some(SinkConn {
                                sock,
                                owed: 0,
                                pos: 0,
                                crlf: 0,
                            });
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        // EMFILE and the like: leave it in the backlog.
                        Err(_) => break,
                    }
                }
                continue;
            }
            let idx = ev.token().0;
            let Some(Some(c)) = conns.get_mut(idx) else {
                continue;
            };
            if !sink_io(c, &mut buf, batch, len) {
                let _ = poll.registry().deregister(&mut c.sock);
                conns[idx] = None;
                free.push(idx);
            }
        }
    }
    Ok(())
}

/// Reads and answers what it can; false when the connection is finished.
fn sink_io(c: &mut SinkConn, buf: &mut [u8], batch: &[u8], len: usize) -> bool {
    loop {
        match c.sock.read(buf) {
            Ok(0) => return false,
            Ok(n) => {
                let heads = count_heads(&buf[..n], &mut c.crlf);
                c.owed += heads * len as u64;
                if n < buf.len() {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return false,
        }
    }
    while c.owed > 0 {
        let end = batch
            .len()
            .min(c.pos + c.owed.min(batch.len() as u64) as usize);
        match c.sock.write(&batch[c.pos..end]) {
            Ok(0) => return false,
            Ok(n) => {
                c.owed -= n as u64;
                c.pos = (c.pos + n) % len;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return false,
        }
    }
    true
}

/// Counts complete "\r\n\r\n" sequences in `data`, `state` carrying a partial
/// match from the previous read. (A request body containing that sequence
/// would be miscounted; calibration requests are heads, or small bodies.)
fn count_heads(data: &[u8], state: &mut u8) -> u64 {
    let mut n = 0;
    let mut st = *state;
    for &b in data {
        st = match (st, b) {
            (2, b'\r') => 3,
            (_, b'\r') => 1,
            (1, b'\n') => 2,
            (3, b'\n') => {
                n += 1;
                0
            }
            _ => 0,
        };
    }
    *state = st;
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_counted_across_reads() {
        let mut st = 0;
        let req = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        assert_eq!(count_heads(req, &mut st), 1);
        let two: Vec<u8> = [&req[..], &req[..]].concat();
        for cut in 0..two.len() {
            let mut st = 0;
            let n = count_heads(&two[..cut], &mut st) + count_heads(&two[cut..], &mut st);
            assert_eq!(n, 2, "cut at {cut}");
        }
        let mut st = 0;
        assert_eq!(count_heads(b"\r\n\r\r\n\r\n", &mut st), 1);
    }

    #[test]
    fn a_staged_run_with_a_probe_calibrates_its_shape_alone() {
        let spec = crate::cli::parse_args(
            "--server h --port 80 --stages 1s:100,2s:100-300 --num-calls 4 --probe 50"
                .split_whitespace(),
        )
        .unwrap();
        let (c, _) = calibration_spec(&spec, 9).unwrap();
        assert!(c.stages.is_empty() && c.probe.is_none());
        assert!(c.validate().is_ok(), "{:?}", c.validate());
        let plain = crate::cli::parse_args(
            "--server h --port 80 --rate 150 --duration 3 --num-calls 4".split_whitespace(),
        )
        .unwrap();
        assert_eq!(
            crate::calibration_cache::Shape::of(&spec),
            crate::calibration_cache::Shape::of(&plain),
            "one calibration for the shape, with or without stages"
        );
    }

    #[test]
    fn calibration_spec_keeps_the_shape_and_drops_the_schedule() {
        let spec = crate::cli::parse_args([
            "--server",
            "example.org",
            "--port",
            "8080",
            "--rate",
            "100",
            "--num-conns",
            "500",
            "--num-calls",
            "10",
            "--burst-length",
            "5",
            "--timeout",
            "5",
        ])
        .unwrap();
        let (c, body) = calibration_spec(&spec, 9).unwrap();
        assert_eq!(c.port, 9);
        assert_eq!(c.host_header.as_deref(), Some("example.org"));
        assert_eq!(c.arrival, Arrival::Concurrent(DEFAULT_CALIBRATION_CONNS));
        assert_eq!(
            c.workload,
            Workload::Requests {
                num_conns: None,
                num_calls: 10,
                burst: 5
            }
        );
        assert_eq!(body.len() as u64, DEFAULT_CALIBRATION_SIZE);
        let (shape, conns, calls, pipe) = shape_of(&c, 100);
        assert_eq!((conns, calls, pipe), (16, Some(10), 5));
        assert!(shape.contains("16 connections, 10 calls/connection, pipeline 5"));
        let users = crate::cli::parse_args([
            "--server",
            "h",
            "--users",
            "7",
            "--requests-per-user",
            "3",
            "--think",
            "10ms",
            "--num-calls",
            "2",
        ])
        .unwrap();
        let (c, _) = calibration_spec(&users, 9).unwrap();
        assert_eq!(c.arrival, Arrival::Concurrent(7));
        assert!(matches!(
            c.workload,
            Workload::Users {
                users: 7,
                requests_per_user: None,
                think,
                burst: 1,
                pace: None
            } if think == 0.0
        ));
        assert_eq!(c.calls_per_conn, Some(2));
    }
}
