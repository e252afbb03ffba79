//! The arrival loop fed instants by hand: which sessions are due, at which
//! intended instant, through stalls, the setup cap, the limits and the end.

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::*;
use crate::plan::Plan;
use crate::spec::LoadSpec;
use crate::stats::Collector;

fn spec(args: &str) -> LoadSpec {
    crate::cli::parse_args(format!("--server 127.0.0.1 --port 80 {args}").split_whitespace())
        .expect("valid test arguments")
}

/// Runs `f` with a worker context for `spec` (thread `thread` of
/// `threads`, setup cap `cap`).
fn with_lane(spec: &LoadSpec, thread: u32, threads: u32, cap: u64, f: impl FnOnce(&WorkerCtx<'_>)) {
    let plan = Plan::build(spec);
    let stop = AtomicBool::new(false);
    let collector = Collector::new(threads, 1.0);
    let addr: SocketAddr = "127.0.0.1:80".parse().expect("address");
    let ctx = WorkerCtx {
        thread,
        threads,
        t0: Instant::now(),
        spec,
        plan: &plan,
        addr,
        stop: &stop,
        collector: &collector,
        tls: None,
        local_addrs: &[],
        setup_cap: cap,
        uring: false,
    };
    f(&ctx);
}

/// One thread, setup cap `cap`.
fn with_ctx(spec: &LoadSpec, cap: u64, f: impl FnOnce(&WorkerCtx<'_>)) {
    with_lane(spec, 0, 1, cap, f);
}

/// Every session due at `now` (one turn of a driver whose connections in
/// setup stay at `in_setup`).
fn turn(a: &mut Arrivals, now: Instant, in_setup: u64, w: &Window, t: &mut Tally) -> Vec<Start> {
    let mut v = Vec::new();
    while let Some(s) = a.due(now, in_setup, w, t) {
        v.push(s);
    }
    v
}

#[test]
fn open_loop_arrivals_start_on_schedule_and_record_their_lag() {
    let s = spec("--rate 100 --num-conns 3");
    with_ctx(&s, 10, |ctx| {
        let w = Window::new(ctx);
        let mut t = Tally::new(&s, ctx.t0);
        let mut a = Arrivals::new(ctx, &mut t);
        assert_eq!(a.planned(), 3);
        assert_eq!(t.st.planned_sessions, 3);
        let at = |ms| ctx.t0 + Duration::from_millis(ms);
        // At 15 ms: arrivals 0 (0 ms) and 1 (10 ms) are due, 2 (20 ms) is not.
        let first = a.due(at(15), 0, &w, &mut t).expect("due");
        assert_eq!((first.arrival, first.sched), (0, at(0)));
        assert_eq!(a.due(at(15), 0, &w, &mut t).map(|s| s.arrival), Some(1));
        assert_eq!(a.due(at(15), 0, &w, &mut t), None);
        assert_eq!(t.st.max_burst, 2);
        assert_eq!(a.wake(at(15), 0, &w), w.next_wake().min(at(20)));
        assert_eq!(t.st.lag.len(), 2);
        assert_eq!(t.st.late_starts, 2, "15 ms and 5 ms late, over 2 ms");
        assert_eq!(a.after_turn(at(15), &w, None, true), Turn::Wait);
        assert_eq!(a.due(at(20), 0, &w, &mut t).map(|s| s.arrival), Some(2));
        // The count is done: the schedule ends, and the loop once nothing runs.
        assert_eq!(a.due(at(100), 0, &w, &mut t), None);
        assert_eq!(a.after_turn(at(100), &w, None, true), Turn::Wait);
        assert_eq!(a.after_turn(at(100), &w, None, false), Turn::Done);
    });
}

#[test]
fn a_stall_is_caught_up_on_the_next_turn_without_losing_or_repeating_an_arrival() {
    let s = spec("--rate 1000 --num-conns 100");
    with_ctx(&s, u64::MAX, |ctx| {
        let w = Window::new(ctx);
        let mut t = Tally::new(&s, ctx.t0);
        let mut a = Arrivals::new(ctx, &mut t);
        let at = |us: u64| ctx.t0 + Duration::from_micros(us);
        let mut all = turn(&mut a, at(0), 0, &w, &mut t);
        assert_eq!(all.len(), 1);
        // The driver stalls for 50.5 ms: arrivals 1..=50 are due at once,
        // each with its own scheduled instant, none twice.
        let caught = turn(&mut a, at(50_500), 0, &w, &mut t);
        assert_eq!(caught.len(), 50);
        assert_eq!(t.st.max_burst, 50);
        assert_eq!(a.wake(at(50_500), 0, &w), w.next_wake().min(at(51_000)));
        all.extend(caught);
        // Then a stall past the schedule's end: the rest, and not one more.
        all.extend(turn(&mut a, at(10_000_000), 0, &w, &mut t));
        assert_eq!(all.len(), 100);
        for (k, st) in all.iter().enumerate() {
            assert_eq!(st.arrival, k as u64);
            assert_eq!(st.sched, at(1000 * k as u64), "arrival {k}");
        }
        assert_eq!(t.st.lag.len(), 100, "every start's lateness is recorded");
        assert!(turn(&mut a, at(20_000_000), 0, &w, &mut t).is_empty());
        assert_eq!(a.after_turn(at(20_000_000), &w, None, false), Turn::Done);
    });
}

#[test]
fn lanes_take_every_nth_arrival_of_the_one_schedule() {
    let s = spec("--rate 1000 --num-conns 7");
    let mut union = Vec::new();
    for thread in 0..3 {
        with_lane(&s, thread, 3, u64::MAX, |ctx| {
            let w = Window::new(ctx);
            let mut t = Tally::new(&s, ctx.t0);
            let mut a = Arrivals::new(ctx, &mut t);
            let planned = a.planned();
            let got = turn(&mut a, ctx.t0 + Duration::from_secs(1), 0, &w, &mut t);
            assert_eq!(got.len() as u64, planned);
            for st in got {
                let off = st.sched.duration_since(ctx.t0);
                assert_eq!(
                    off,
                    Duration::from_millis(st.arrival),
                    "arrival {}",
                    st.arrival
                );
                union.push(st.arrival);
            }
        });
    }
    union.sort_unstable();
    assert_eq!(union, (0..7).collect::<Vec<u64>>());
}

#[test]
fn the_setup_cap_holds_arrivals_back_and_skips_what_waited_too_long() {
    let s = spec("--rate 100 --num-conns 4 --timeout 0.05");
    with_ctx(&s, 1, |ctx| {
        let w = Window::new(ctx);
        let mut t = Tally::new(&s, ctx.t0);
        let mut a = Arrivals::new(ctx, &mut t);
        let at = |ms| ctx.t0 + Duration::from_millis(ms);
        assert!(a.due(at(0), 0, &w, &mut t).is_some());
        // One connection in setup: the cap holds the next arrivals back.
        assert_eq!(a.due(at(30), 1, &w, &mut t), None);
        assert_eq!(a.due(at(31), 1, &w, &mut t), None);
        assert_eq!(t.st.setup_capped, 1, "counted once per backlog");
        assert_eq!(
            a.wake(at(31), 1, &w),
            w.next_wake(),
            "a connection leaving setup wakes the driver, not the schedule"
        );
        // Freed at 65 ms: arrival 1 (10 ms) waited 55 ms > --timeout: skipped as a
        // client timeout; arrival 2 (20 ms) waited 45 ms: it starts.
        let next = a.due(at(65), 0, &w, &mut t).expect("due");
        assert_eq!(next.arrival, 2);
        assert_eq!(t.st.not_attempted, 1);
        assert_eq!(t.st.sessions.failed, 1);
        assert_eq!(t.part.errors, 1);
        assert_eq!(t.st.setup_wait.len(), 2);
        assert_eq!(
            t.st.lag.len(),
            1,
            "waits for the server are not generator lag"
        );
        // The cap holds within a turn too: the driver counts the session it
        // just started as in setup, and arrival 3 waits.
        assert_eq!(a.due(at(65), 1, &w, &mut t), None);
        assert_eq!(t.st.max_burst, 1);
        // Every arrival is started or skipped once: 0, 2, 3 started, 1 skipped.
        assert_eq!(a.due(at(70), 0, &w, &mut t).map(|s| s.arrival), Some(3));
        assert_eq!(a.due(at(1000), 0, &w, &mut t), None);
        assert_eq!(a.after_turn(at(1000), &w, None, false), Turn::Done);
    });
}

#[test]
fn a_duration_run_starts_nothing_at_or_after_its_end_then_drains() {
    let s = spec("--rate 100 --duration 0.05 --timeout 0.5");
    with_ctx(&s, u64::MAX, |ctx| {
        let w = Window::new(ctx);
        let mut t = Tally::new(&s, ctx.t0);
        let mut a = Arrivals::new(ctx, &mut t);
        assert_eq!(a.planned(), 0, "unbounded");
        let at = |ms| ctx.t0 + Duration::from_millis(ms);
        // Stalled past the end: arrivals at 0..=40 ms start, the one at 50 ms
        // (the end) does not.
        let got = turn(&mut a, at(200), 0, &w, &mut t);
        let scheds: Vec<Instant> = got.iter().map(|s| s.sched).collect();
        assert_eq!(scheds, vec![at(0), at(10), at(20), at(30), at(40)]);
        // The drain: --timeout for what is in flight, then give up.
        assert_eq!(
            a.after_turn(at(200), &w, ctx.reply_timeout(), true),
            Turn::Wait
        );
        assert_eq!(a.wake(at(200), 0, &w), w.next_wake().min(at(550)));
        assert_eq!(
            a.after_turn(at(549), &w, ctx.reply_timeout(), true),
            Turn::Wait
        );
        assert_eq!(
            a.after_turn(at(550), &w, ctx.reply_timeout(), true),
            Turn::Drained
        );
        assert!(turn(&mut a, at(600), 0, &w, &mut t).is_empty());
    });
}

#[test]
fn closed_loop_users_start_at_t0_and_the_drain_after_a_duration() {
    let s = spec("--users 3 --duration 1 --timeout 2");
    with_ctx(&s, 1, |ctx| {
        let w = Window::new(ctx);
        let mut t = Tally::new(&s, ctx.t0);
        let mut a = Arrivals::new(ctx, &mut t);
        assert_eq!(a.planned(), 3);
        let now = ctx.t0 + Duration::from_millis(3);
        assert_eq!(a.wake(now, 0, &w), now, "the users are due");
        // The setup cap is for open-loop arrivals: all users start at once.
        let got = turn(&mut a, now, 5, &w, &mut t);
        let want: Vec<Start> = (0..3)
            .map(|k| Start {
                arrival: k,
                sched: ctx.t0,
            })
            .collect();
        assert_eq!(got, want);
        assert_eq!(t.st.max_burst, 3);
        // A user that ends is not replaced.
        a.ended(now, &w);
        assert!(turn(&mut a, now, 0, &w, &mut t).is_empty());
        let end = ctx.t0 + Duration::from_secs(1);
        assert_eq!(a.after_turn(end, &w, ctx.reply_timeout(), true), Turn::Wait);
        let over = end + Duration::from_secs(2);
        assert_eq!(
            a.after_turn(over, &w, ctx.reply_timeout(), true),
            Turn::Drained
        );
    });
}

#[test]
fn sequential_connections_follow_each_other_until_the_count() {
    let s = spec("--num-conns 3");
    with_ctx(&s, 1, |ctx| {
        let w = Window::new(ctx);
        let mut t = Tally::new(&s, ctx.t0);
        let mut a = Arrivals::new(ctx, &mut t);
        let at = |ms| ctx.t0 + Duration::from_millis(ms);
        let first = turn(&mut a, at(1), 0, &w, &mut t);
        assert_eq!(
            first,
            vec![Start {
                arrival: 0,
                sched: ctx.t0
            }]
        );
        assert_eq!(a.after_turn(at(1), &w, None, true), Turn::Wait);
        // It ends at 7 ms: the next starts on the next turn, intended then.
        a.ended(at(7), &w);
        assert_eq!(a.after_turn(at(7), &w, None, false), Turn::Wait);
        assert_eq!(a.wake(at(7), 0, &w), at(7), "due at once");
        let second = turn(&mut a, at(8), 0, &w, &mut t);
        assert_eq!(
            second,
            vec![Start {
                arrival: 1,
                sched: at(8)
            }]
        );
        a.ended(at(9), &w);
        assert_eq!(turn(&mut a, at(9), 0, &w, &mut t).len(), 1);
        // The third ended: no fourth.
        a.ended(at(12), &w);
        assert!(turn(&mut a, at(12), 0, &w, &mut t).is_empty());
        assert_eq!(a.after_turn(at(12), &w, None, false), Turn::Done);
        assert_eq!(t.st.max_burst, 1, "a successor is not a burst");
    });
}

#[test]
fn two_sessions_ending_at_once_start_only_what_is_left() {
    // Calibration's shape: k connections at a time, sequential each.
    let mut s = spec("--num-conns 3");
    s.arrival = Arrival::Concurrent(2);
    with_ctx(&s, 1, |ctx| {
        let w = Window::new(ctx);
        let mut t = Tally::new(&s, ctx.t0);
        let mut a = Arrivals::new(ctx, &mut t);
        let now = ctx.t0 + Duration::from_millis(1);
        assert_eq!(turn(&mut a, now, 0, &w, &mut t).len(), 2);
        a.ended(now, &w);
        a.ended(now, &w);
        let got = turn(&mut a, now, 0, &w, &mut t);
        assert_eq!(got.iter().map(|s| s.arrival).collect::<Vec<_>>(), vec![2]);
        assert_eq!(a.after_turn(now, &w, None, false), Turn::Done);
    });
}

#[test]
fn stop_starts_nothing_more() {
    let s = spec("--rate 100 --num-conns 10");
    with_ctx(&s, u64::MAX, |ctx| {
        let w = Window::new(ctx);
        let mut t = Tally::new(&s, ctx.t0);
        let mut a = Arrivals::new(ctx, &mut t);
        let at = |ms| ctx.t0 + Duration::from_millis(ms);
        assert_eq!(turn(&mut a, at(25), 0, &w, &mut t).len(), 3);
        a.stop();
        assert!(turn(&mut a, at(1000), 0, &w, &mut t).is_empty());
        assert_eq!(a.after_turn(at(1000), &w, None, false), Turn::Done);
    });
}
