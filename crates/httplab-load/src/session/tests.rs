//! One test (at least) per session rule, driven by hand: no clock, no socket.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::*;
use crate::plan::Plan;

fn plan(args: &str) -> Plan {
    let spec =
        crate::cli::parse_args(format!("--server 127.0.0.1 --port 80 {args}").split_whitespace())
            .expect("valid test arguments");
    Plan::build(&spec)
}

struct T {
    plan: Plan,
    t0: Instant,
    warmup: Duration,
    end: Option<Duration>,
    failure_status: Option<u16>,
    retry: bool,
    depth: u32,
    streams: bool,
    stop: AtomicBool,
}

impl T {
    fn new(args: &str) -> T {
        T {
            plan: plan(args),
            t0: Instant::now(),
            warmup: Duration::ZERO,
            end: None,
            failure_status: None,
            retry: false,
            depth: u32::MAX,
            streams: false,
            stop: AtomicBool::new(false),
        }
    }

    fn rules(&self) -> Rules<'_> {
        Rules {
            plan: &self.plan,
            t0: self.t0,
            win: self.t0 + self.warmup,
            end_at: self.end.map(|d| self.t0 + self.warmup + d),
            failure_status: self.failure_status,
            retry_on_failure: self.retry,
            depth: self.depth,
            streams: self.streams,
            seed: 1,
            stop: &self.stop,
        }
    }

    fn at(&self, ms: u64) -> Instant {
        self.t0 + Duration::from_millis(ms)
    }
}

/// Polls until the machine waits; returns everything it asked for.
fn drain(s: &mut Session, r: &Rules<'_>, now: Instant) -> Vec<Action> {
    let mut out = Vec::new();
    loop {
        let a = s.poll(r, now);
        out.push(a);
        match a {
            Action::Idle | Action::Wait(_) | Action::Yield | Action::Done(_) => return out,
            _ => {}
        }
        assert!(out.len() < 100, "the machine does not settle: {out:?}");
    }
}

fn sends(v: &[Action]) -> usize {
    v.iter().filter(|a| matches!(a, Action::Send(_))).count()
}

fn done(v: &[Action]) -> Option<Outcome> {
    v.iter().find_map(|a| match a {
        Action::Done(o) => Some(*o),
        _ => None,
    })
}

/// Starts a session at `t0` and connects it; returns the first actions after connecting.
fn started(t: &T, s: &mut Session) -> Vec<Action> {
    let r = t.rules();
    let now = t.at(0);
    s.start(&r, 0, now, now);
    assert_eq!(
        drain(s, &r, now),
        vec![Action::Open { measured: true }, Action::Idle]
    );
    s.connected();
    drain(s, &r, now)
}

#[test]
fn request_oriented_calls_go_one_after_another() {
    let t = T::new("--num-conns 1 --num-calls 3");
    let r = t.rules();
    let mut s = Session::new(t.t0);
    let a = started(&t, &mut s);
    assert_eq!(sends(&a), 1);
    for i in 1..3 {
        s.reply(&r, t.at(i), 200, true);
        assert_eq!(sends(&drain(&mut s, &r, t.at(i))), 1);
    }
    s.reply(&r, t.at(9), 200, true);
    let a = drain(&mut s, &r, t.at(9));
    assert_eq!(a[0], Action::Close);
    let o = done(&a).expect("done");
    assert!(!o.failed && o.complete && o.measured);
    assert_eq!((o.replies, o.last_reply), (3, t.at(9)));
    assert!(!s.active());
}

#[test]
fn bursts_send_their_first_call_alone_then_the_rest_pipelined() {
    let t = T::new("--wsess 1,6,0 --burst-length 3");
    let r = t.rules();
    let mut s = Session::new(t.t0);
    assert_eq!(sends(&started(&t, &mut s)), 1, "first call alone");
    s.reply(&r, t.at(1), 200, true);
    assert_eq!(
        sends(&drain(&mut s, &r, t.at(1))),
        2,
        "then the burst's rest"
    );
    s.reply(&r, t.at(2), 200, true);
    assert_eq!(
        sends(&drain(&mut s, &r, t.at(2))),
        0,
        "the burst is not answered"
    );
    s.reply(&r, t.at(3), 200, true);
    assert_eq!(
        sends(&drain(&mut s, &r, t.at(3))),
        1,
        "next burst: first alone"
    );
}

#[test]
fn pipelining_depth_caps_outstanding_calls() {
    let mut t = T::new("--num-conns 1 --num-calls 10 --burst-length 10");
    t.depth = 3;
    let r = t.rules();
    let mut s = Session::new(t.t0);
    assert_eq!(sends(&started(&t, &mut s)), 3);
    s.reply(&r, t.at(1), 200, true);
    assert_eq!(sends(&drain(&mut s, &r, t.at(1))), 1);
}

#[test]
fn think_time_waits_between_bursts_and_reports_its_lateness() {
    let t = T::new("--wsess 1,2,0.5");
    let r = t.rules();
    let mut s = Session::new(t.t0);
    assert_eq!(sends(&started(&t, &mut s)), 1);
    s.reply(&r, t.at(10), 200, true);
    let until = t.at(510);
    assert_eq!(drain(&mut s, &r, t.at(10)), vec![Action::Wait(until)]);
    assert_eq!(s.thinking(), Some(until));
    assert_eq!(s.timer(&r, t.at(300)), None, "not due yet");
    let due = s.timer(&r, t.at(512)).expect("due");
    assert_eq!(
        due,
        Due {
            at: until,
            measured: true
        }
    );
    let a = drain(&mut s, &r, t.at(512));
    match a[0] {
        Action::Send(c) => assert_eq!(c.intended, until, "counted from the think time's end"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn failure_status_fails_a_session_or_retries_the_call() {
    let mut t = T::new("--wsess 1,3,0");
    t.failure_status = Some(503);
    let r = t.rules();
    let mut s = Session::new(t.t0);
    started(&t, &mut s);
    s.reply(&r, t.at(1), 503, true);
    let o = done(&drain(&mut s, &r, t.at(1))).expect("done");
    assert!(o.failed && !o.complete);

    t.retry = true;
    let r = t.rules();
    let mut s = Session::new(t.t0);
    let first = started(&t, &mut s);
    s.reply(&r, t.at(1), 503, true);
    let again = drain(&mut s, &r, t.at(1));
    let req = |a: &[Action]| match a[0] {
        Action::Send(c) => c.req,
        other => panic!("{other:?}"),
    };
    assert_eq!(req(&again), req(&first), "the same call again");
    for i in 2..5 {
        s.reply(&r, t.at(i), 200, true);
        drain(&mut s, &r, t.at(i));
    }
    assert!(!s.active());
}

#[test]
fn failure_status_applies_to_sessions_only() {
    let mut t = T::new("--num-conns 1 --num-calls 2");
    t.failure_status = Some(503);
    let r = t.rules();
    let mut s = Session::new(t.t0);
    started(&t, &mut s);
    s.reply(&r, t.at(1), 503, true);
    assert_eq!(sends(&drain(&mut s, &r, t.at(1))), 1);
}

#[test]
fn a_server_close_ends_a_request_oriented_connection_with_unsent_calls() {
    let t = T::new("--num-conns 1 --num-calls 5");
    let r = t.rules();
    let mut s = Session::new(t.t0);
    started(&t, &mut s);
    s.reply(&r, t.at(1), 200, false);
    let a = drain(&mut s, &r, t.at(1));
    assert_eq!(
        a[..2],
        [
            Action::Unsent {
                calls: 4,
                measured: true
            },
            Action::Close
        ]
    );
    let o = done(&a).expect("done");
    assert!(!o.failed && !o.complete);
}

#[test]
fn reconnect_carries_the_session_over_a_server_close() {
    let t = T::new("--num-conns 1 --num-calls 3 --reconnect");
    let r = t.rules();
    let mut s = Session::new(t.t0);
    started(&t, &mut s);
    s.reply(&r, t.at(1), 200, false);
    assert_eq!(
        drain(&mut s, &r, t.at(1)),
        vec![Action::Close, Action::Open { measured: true }, Action::Idle]
    );
    s.connected();
    assert_eq!(sends(&drain(&mut s, &r, t.at(2))), 1);
}

#[test]
fn an_idle_close_by_the_server_reopens_on_demand() {
    let t = T::new("--wsess 1,2,1");
    let r = t.rules();
    let mut s = Session::new(t.t0);
    started(&t, &mut s);
    s.reply(&r, t.at(1), 200, true);
    assert!(matches!(drain(&mut s, &r, t.at(1))[..], [Action::Wait(_)]));
    s.server_closed();
    assert!(s.timer(&r, t.at(1001)).is_some());
    assert_eq!(
        drain(&mut s, &r, t.at(1001)),
        vec![Action::Open { measured: true }, Action::Idle]
    );
}

#[test]
fn calls_the_server_closed_on_unanswered_go_again_on_a_new_connection() {
    let t = T::new("--users 1 --requests-per-user 6 --burst-length 3");
    let r = t.rules();
    let mut s = Session::new(t.t0);
    let calls = |v: &[Action]| -> Vec<Call> {
        v.iter()
            .filter_map(|a| match a {
                Action::Send(c) => Some(*c),
                _ => None,
            })
            .collect()
    };
    let first = calls(&started(&t, &mut s));
    assert_eq!(first.len(), 3);
    s.reply(&r, t.at(1), 200, true);
    assert!(calls(&drain(&mut s, &r, t.at(1))).is_empty());
    // The server closes with two calls unanswered: both again, on a new
    // connection.
    s.closed_unanswered();
    assert_eq!(
        drain(&mut s, &r, t.at(2)),
        vec![Action::Open { measured: true }, Action::Idle]
    );
    assert!(!s.ending());
    s.connected();
    let again = calls(&drain(&mut s, &r, t.at(3)));
    let key = |c: &[Call]| c.iter().map(|c| (c.req, c.measured)).collect::<Vec<_>>();
    assert_eq!(key(&again), key(&first[1..]));
    assert!(
        again.iter().all(|c| c.intended <= t.at(1)),
        "not later than due"
    );
    s.reply(&r, t.at(4), 200, true);
    s.reply(&r, t.at(5), 200, true);
    assert_eq!(
        calls(&drain(&mut s, &r, t.at(5))).len(),
        3,
        "the next burst"
    );
    for ms in 6..9 {
        s.reply(&r, t.at(ms), 200, true);
    }
    let a = drain(&mut s, &r, t.at(9));
    assert_eq!(done(&a).map(|o| o.replies), Some(6));
}

#[test]
fn warm_up_membership_follows_the_scheduled_instant() {
    let mut t = T::new("--num-conns 1 --num-calls 2");
    t.warmup = Duration::from_secs(1);
    let r = t.rules();
    let mut s = Session::new(t.t0);
    s.start(&r, 0, t.at(0), t.at(0));
    assert_eq!(s.poll(&r, t.at(0)), Action::Open { measured: false });
    s.connected();
    // A session scheduled in the warm-up is warm-up to its end, even past the window's start.
    s.poll(&r, t.at(1500));
    s.reply(&r, t.at(1600), 200, true);
    match s.poll(&r, t.at(1600)) {
        Action::Send(c) => assert!(!c.measured),
        other => panic!("{other:?}"),
    }
    // A user's calls are each scheduled on their own.
    let mut t = T::new("--users 1 --requests-per-user 2");
    t.warmup = Duration::from_secs(1);
    let r = t.rules();
    let mut s = Session::new(t.t0);
    s.start(&r, 0, t.at(0), t.at(0));
    assert_eq!(s.poll(&r, t.at(0)), Action::Open { measured: false });
    s.connected();
    assert!(matches!(s.poll(&r, t.at(0)), Action::Send(c) if !c.measured));
    s.reply(&r, t.at(1200), 200, true);
    assert!(matches!(s.poll(&r, t.at(1200)), Action::Send(c) if c.measured));
}

#[test]
fn users_time_their_groups_and_close_after_calls_per_connection() {
    let t = T::new("--users 1 --requests-per-user 4 --num-calls 2");
    let r = t.rules();
    let mut s = Session::new(t.t0);
    assert_eq!(sends(&started(&t, &mut s)), 1);
    s.reply(&r, t.at(1), 200, true);
    drain(&mut s, &r, t.at(1));
    s.reply(&r, t.at(2), 200, true);
    let a = drain(&mut s, &r, t.at(2));
    assert_eq!(
        a[..3],
        [
            Action::GroupDone {
                start: t.at(0),
                measured: true
            },
            Action::Close,
            Action::Open { measured: true }
        ]
    );
}

#[test]
fn a_connection_failure_fails_a_session_but_a_user_goes_on() {
    let t = T::new("--num-conns 1 --num-calls 3");
    let r = t.rules();
    let mut s = Session::new(t.t0);
    started(&t, &mut s);
    s.conn_failed(&r, t.at(1));
    let o = done(&drain(&mut s, &r, t.at(1))).expect("done");
    assert!(o.failed);

    let t = T::new("--users 1 --requests-per-user 3");
    let r = t.rules();
    let mut s = Session::new(t.t0);
    started(&t, &mut s);
    s.conn_failed(&r, t.at(1));
    assert_eq!(drain(&mut s, &r, t.at(1)), vec![Action::Yield]);
    s.resume(&r, t.at(2));
    assert_eq!(s.poll(&r, t.at(2)), Action::Open { measured: true });
    // The failed call is not made again: two calls are left.
    s.connected();
    drain(&mut s, &r, t.at(2));
    s.reply(&r, t.at(3), 200, true);
    drain(&mut s, &r, t.at(3));
    s.reply(&r, t.at(4), 200, true);
    assert!(done(&drain(&mut s, &r, t.at(4))).is_some());
}

#[test]
fn the_end_of_a_duration_run_ends_sessions_between_bursts() {
    let mut t = T::new("--wsess 0,5,0 --duration 1");
    t.end = Some(Duration::from_secs(1));
    let r = t.rules();
    let mut s = Session::new(t.t0);
    started(&t, &mut s);
    s.reply(&r, t.at(1000), 200, true);
    assert!(done(&drain(&mut s, &r, t.at(1000))).is_some());
}

#[test]
fn paced_users_wait_for_their_schedule() {
    let t = T::new("--users 2 --rate 10 --requests-per-user 3");
    let r = t.rules();
    let mut s = Session::new(t.t0);
    // User 1 of 2 at 10/s together: its turns are 100 ms, 300 ms, 500 ms.
    s.start(&r, 1, t.at(0), t.at(0));
    assert_eq!(s.poll(&r, t.at(0)), Action::Wait(t.at(100)));
    assert!(s.timer(&r, t.at(100)).is_some());
    assert_eq!(s.poll(&r, t.at(100)), Action::Open { measured: true });
    s.connected();
    assert!(matches!(s.poll(&r, t.at(100)), Action::Send(c) if c.intended == t.at(100)));
    s.reply(&r, t.at(110), 200, true);
    assert_eq!(s.poll(&r, t.at(110)), Action::Wait(t.at(300)));
}

#[test]
fn abandon_ends_a_session_at_once() {
    let t = T::new("--num-conns 1 --num-calls 3");
    let r = t.rules();
    let mut s = Session::new(t.t0);
    started(&t, &mut s);
    s.abandon(true);
    let o = done(&drain(&mut s, &r, t.at(1))).expect("done");
    assert!(o.failed);
}

#[test]
fn streams_keep_depth_calls_in_flight() {
    let mut t = T::new("--num-conns 1 --num-calls 5");
    t.streams = true;
    t.depth = 3;
    let r = t.rules();
    let mut s = Session::new(t.t0);
    assert_eq!(sends(&started(&t, &mut s)), 3);
    s.reply(&r, t.at(1), 200, true);
    assert_eq!(sends(&drain(&mut s, &r, t.at(1))), 1);
    s.call_failed(&r, t.at(2), false);
    assert_eq!(
        sends(&drain(&mut s, &r, t.at(2))),
        1,
        "a reset stream is one failed call"
    );
    for i in 3..6 {
        s.reply(&r, t.at(i), 200, true);
    }
    let o = done(&drain(&mut s, &r, t.at(6))).expect("done");
    assert_eq!(o.replies, 4);
    assert!(!o.failed && !o.complete);
}

#[test]
fn streams_refused_by_a_closing_server_end_or_move_on() {
    // Request-oriented: the server's close ends the connection; its calls are unsent.
    let mut t = T::new("--num-conns 1 --num-calls 5");
    t.streams = true;
    t.depth = 1;
    let r = t.rules();
    let mut s = Session::new(t.t0);
    started(&t, &mut s);
    s.reply(&r, t.at(1), 200, true);
    drain(&mut s, &r, t.at(1));
    s.refused(&r, t.at(2));
    let a = drain(&mut s, &r, t.at(2));
    assert_eq!(
        a[..2],
        [
            Action::Unsent {
                calls: 4,
                measured: true
            },
            Action::Close
        ]
    );
    // With --reconnect the refused call is made again on a new connection.
    let mut t = T::new("--num-conns 1 --num-calls 2 --reconnect");
    t.streams = true;
    t.depth = 1;
    let r = t.rules();
    let mut s = Session::new(t.t0);
    started(&t, &mut s);
    s.reply(&r, t.at(1), 200, true);
    drain(&mut s, &r, t.at(1));
    s.refused(&r, t.at(2));
    assert_eq!(
        drain(&mut s, &r, t.at(2)),
        vec![Action::Close, Action::Open { measured: true }, Action::Idle]
    );
    s.connected();
    assert_eq!(sends(&drain(&mut s, &r, t.at(3))), 1);
    // Refused before serving anything: a reset, and the session fails.
    let mut s = Session::new(t.t0);
    started(&t, &mut s);
    s.refused(&r, t.at(1));
    let a = drain(&mut s, &r, t.at(1));
    assert_eq!(a[0], Action::Reset { measured: true });
    assert!(done(&a).expect("done").failed);
}

#[test]
fn streams_follow_the_failure_status_rules() {
    let mut t = T::new("--wsess 1,2,0");
    t.streams = true;
    t.depth = 1;
    t.failure_status = Some(503);
    t.retry = true;
    let r = t.rules();
    let mut s = Session::new(t.t0);
    started(&t, &mut s);
    s.reply(&r, t.at(1), 503, true);
    assert_eq!(sends(&drain(&mut s, &r, t.at(1))), 1, "made again");
    s.reply(&r, t.at(2), 200, true);
    assert_eq!(sends(&drain(&mut s, &r, t.at(2))), 1);
    s.reply(&r, t.at(3), 200, true);
    let o = done(&drain(&mut s, &r, t.at(3))).expect("done");
    assert!(!o.failed && o.replies == 3);
    t.retry = false;
    let r = t.rules();
    let mut s = Session::new(t.t0);
    started(&t, &mut s);
    s.reply(&r, t.at(1), 503, true);
    assert!(done(&drain(&mut s, &r, t.at(1))).expect("done").failed);
}

#[test]
fn a_lost_stream_connection_fails_a_session() {
    let mut t = T::new("--num-conns 1 --num-calls 3 --reconnect");
    t.streams = true;
    t.depth = 2;
    let r = t.rules();
    let mut s = Session::new(t.t0);
    started(&t, &mut s);
    s.call_failed(&r, t.at(1), true);
    assert_eq!(drain(&mut s, &r, t.at(1)), vec![Action::Idle]);
    s.call_failed(&r, t.at(2), true);
    let a = drain(&mut s, &r, t.at(2));
    assert_eq!(a[0], Action::Close);
    assert!(done(&a).expect("done").failed);
}
