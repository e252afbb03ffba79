//! Which path a large file's bytes take, per write: `sendfile` or a copy
//! (`pread` into the worker's buffer, then `sendmsg`). No I/O here: the
//! engines ask [`SendPath::choose`] before each write of file bytes and
//! report the worker's waits ([`SendPath::before_wait`],
//! [`SendPath::after_wait`]).
//!
//! Why it is chosen by measurement (`--file-io auto`, the default):
//! - To a peer on another machine `sendfile` is always right: the server
//!   copies nothing and the receiver's work is not on this machine.
//! - To a peer on this machine (loopback) the receiver must copy every byte
//!   into its own buffer, and that copy is cheaper when the bytes are still
//!   in the shared cache. A copying send leaves them there (the server
//!   wrote them a moment ago); `sendfile` hands over page-cache pages the
//!   receiver then reads from memory. So copying costs the server CPU and
//!   saves the receiver CPU: it pays when the server has CPU to spare and
//!   the receiver is the bottleneck, and loses when the server is. Measured
//!   in BENCHMARKS.md ("Large files chosen by measurement"): with wrk as the
//!   receiver the copy moves 1.4× the bytes of `sendfile`; with a receiver
//!   that reads in 64 KiB pieces `sendfile` moved 1.2× those of the copy.
//! - Only files of at least half the CPU's last-level cache (`--copy-min`;
//!   sysfs tells the size, believed up to [`COPY_MIN_MOST`]) are copied: a smaller file's pages stay in that
//!   cache between requests, so the receiver reads them from the cache
//!   after `sendfile` too, and a copy would only add the server's work
//!   (measured: 2 MiB files cost 2.5× the server CPU copied, for 20 % less
//!   client CPU).
//! - The worker therefore measures the share of its time it is busy (not
//!   waiting for events) over windows of [`WINDOW`], and while loopback
//!   connections are sending file bytes it moves the share of writes that
//!   copy up by one step when it was idle more than [`IDLE_ABOVE`] of the
//!   window and down when it was busy more than [`BUSY_ABOVE`]: it spends
//!   its spare CPU on copies until it is itself nearly saturated.

use std::time::{Duration, Instant};

use crate::config::{FileIo, ServerConfig};
use crate::out::{FileOpts, OutQueue};
use crate::session::Session;
use crate::stats::Stats;

/// The copy share moves in steps of 1/`STEPS`.
pub const STEPS: u32 = 16;
/// Length of one measurement window.
pub const WINDOW: Duration = Duration::from_millis(20);
/// Idle share of a window above which more writes copy.
pub const IDLE_ABOVE: f64 = 0.08;
/// Busy share of a window above which fewer writes copy.
pub const BUSY_ABOVE: f64 = 0.97;

/// A worker's choice of file path, with its measurement.
#[derive(Debug)]
pub struct SendPath {
    mode: FileIo,
    /// Smallest file segment that may be copied.
    copy_min: u64,
    sendfile: FileOpts,
    copy: FileOpts,
    /// Writes to loopback peers that copy, in 1/STEPS.
    share: u32,
    /// Spreads the copying writes evenly (a Bresenham accumulator).
    acc: u32,
    /// A loopback file write was chosen in the current window.
    active: bool,
    /// Start of the current window (None: not measuring).
    window_start: Option<Instant>,
    /// Busy time in the current window.
    busy: Duration,
    /// When the worker last woke (None: waiting, or not measuring).
    awake_since: Option<Instant>,
    /// File bytes sent by each path since the last
    /// [`SendPath::flush_into`] (for `--stats`).
    copied: u64,
    sendfiled: u64,
}

impl SendPath {
    /// The path chooser of one worker, from the configuration. `measure`:
    /// the worker can time its waits (the event model); a worker that
    /// cannot (the blocking models) treats `auto` as `sendfile`.
    pub fn from_config(cfg: &ServerConfig, measure: bool) -> Self {
        let mode = match cfg.file_io {
            FileIo::Auto if !measure => FileIo::Sendfile,
            m => m,
        };
        // Only `auto` looks at the minimum (sysfs is read only then).
        let copy_min = match mode {
            FileIo::Auto => cfg.copy_min.unwrap_or_else(default_copy_min),
            FileIo::Sendfile | FileIo::Pread => u64::MAX,
        };
        SendPath::new(mode, cfg.copy_chunk, cfg.file_chunk, copy_min)
    }

    /// `copy_chunk` / `sendfile_chunk`: most file bytes per system call on
    /// each path; `copy_min`: smallest file segment `auto` copies.
    pub fn new(mode: FileIo, copy_chunk: usize, sendfile_chunk: usize, copy_min: u64) -> Self {
        SendPath {
            mode,
            copy_min,
            sendfile: FileOpts {
                pread: false,
                chunk: sendfile_chunk.max(4096),
            },
            copy: FileOpts {
                pread: true,
                chunk: copy_chunk.max(4096),
            },
            share: STEPS / 2,
            acc: 0,
            active: false,
            window_start: None,
            busy: Duration::ZERO,
            awake_since: None,
            copied: 0,
            sendfiled: 0,
        }
    }

    /// The path of the next write of a file segment of `len` bytes to a
    /// peer (`loopback`: the peer is on this machine).
    pub fn choose(&mut self, loopback: bool, len: u64) -> FileOpts {
        match self.mode {
            FileIo::Sendfile => self.sendfile,
            FileIo::Pread => self.copy,
            FileIo::Auto if !loopback || len < self.copy_min => self.sendfile,
            FileIo::Auto => {
                self.active = true;
                self.acc += self.share;
                if self.acc >= STEPS {
                    self.acc -= STEPS;
                    self.copy
                } else {
                    self.sendfile
                }
            }
        }
    }

    /// The options of the next write of `s`'s output: when file bytes are
    /// queued on a cleartext connection (`plain`), the path
    /// [`SendPath::choose`] picks for this peer; otherwise the options are
    /// not used for file bytes and the controller is not consulted.
    #[inline]
    pub fn for_write(&mut self, s: &Session, plain: bool) -> FileOpts {
        match s.out.front_file_len() {
            Some(len) if plain => self.choose(s.peer_is_loopback(), len),
            _ => self.sendfile,
        }
    }

    /// [`SendPath::for_write`] for an HTTP/2 connection's output queue, to
    /// a peer that is (`loopback`) or is not on this machine.
    pub fn for_out(&mut self, out: &OutQueue, loopback: bool, plain: bool) -> FileOpts {
        match out.front_file_len() {
            Some(len) if plain => self.choose(loopback, len),
            _ => self.sendfile,
        }
    }

    /// Counts the file bytes `out`'s last write sent with `opts` (taking
    /// them from [`OutQueue::file_bytes`]). Inlined: a write of memory bytes
    /// only pays one test.
    #[inline]
    pub fn count_sent(&mut self, opts: FileOpts, out: &mut OutQueue) {
        if out.file_bytes != 0 {
            self.count(opts, std::mem::take(&mut out.file_bytes));
        }
    }

    /// Counts `file_bytes` (file bytes only, not heads) sent by a write
    /// that used `opts`.
    fn count(&mut self, opts: FileOpts, file_bytes: u64) {
        if opts.pread {
            self.copied += file_bytes;
        } else {
            self.sendfiled += file_bytes;
        }
    }

    /// Moves the counts into the shared statistics (once per turn).
    #[inline]
    pub fn flush_into(&mut self, stats: &Stats) {
        if self.copied | self.sendfiled != 0 {
            stats.add_file_paths(
                std::mem::take(&mut self.copied),
                std::mem::take(&mut self.sendfiled),
            );
        }
    }

    /// Whether the worker's waits are being timed (the caller reads the
    /// clock for [`SendPath::before_wait`] only then, so a worker serving
    /// small files pays nothing).
    #[inline]
    pub fn measuring(&self) -> bool {
        self.window_start.is_some()
    }

    /// The worker is about to wait for events.
    pub fn before_wait(&mut self, now: Instant) {
        if let Some(t) = self.awake_since.take() {
            self.busy += now.saturating_duration_since(t);
        }
    }

    /// The worker woke at `now` (the turn's clock reading). Inlined: a
    /// worker that sends no file bytes to loopback peers pays one test.
    #[inline]
    pub fn after_wait(&mut self, now: Instant) {
        if self.window_start.is_some() || self.active {
            self.woke(now);
        }
    }

    fn woke(&mut self, now: Instant) {
        let Some(start) = self.window_start else {
            self.window_start = Some(now);
            self.busy = Duration::ZERO;
            self.awake_since = Some(now);
            return;
        };
        let span = now.saturating_duration_since(start);
        if span >= WINDOW {
            let busy = self.busy.as_secs_f64() / span.as_secs_f64();
            if self.active {
                self.step(busy);
            }
            self.busy = Duration::ZERO;
            self.window_start = self.active.then_some(now);
            self.active = false;
        }
        self.awake_since = self.window_start.map(|_| now);
    }

    /// One controller step after a window with this busy share.
    fn step(&mut self, busy: f64) {
        if busy > BUSY_ABOVE {
            self.share = self.share.saturating_sub(1);
        } else if busy < 1.0 - IDLE_ABOVE {
            self.share = (self.share + 1).min(STEPS);
        }
    }

    /// The current share of loopback writes that copy, 0..=1.
    #[cfg(test)]
    pub fn copy_share(&self) -> f64 {
        self.share as f64 / STEPS as f64
    }
}

/// The largest `--copy-min` default: what one core's share of a last-level
/// cache keeps between requests, measured, not reported. On the 2-core
/// machine of BENCHMARKS.md ("Large files chosen by measurement", "How cost
/// grows with the file size") a 2 MiB file stayed cached (copying it cost
/// the server 2.5× the CPU for 20 % less client CPU) and a 32 MiB one did
/// not (copying it saved the machine 17 % of its CPU per MiB); a strided
/// read of 16 MiB ran at twice the rate of 32 MiB and more. Virtual
/// machines report the host's cache, or the sum over a socket's core
/// complexes (one such machine reports 260 MiB), where a file served to
/// one client stays in one complex's share: a reported size above this
/// bound is not what the machine does.
pub const COPY_MIN_MOST: u64 = 16 << 20;

/// Half the size of the CPU's last-level cache as sysfs gives it (the
/// highest cache level of CPU 0), at most [`COPY_MIN_MOST`] and at least
/// 1 MiB; [`COPY_MIN_MOST`] where sysfs tells nothing.
pub fn default_copy_min() -> u64 {
    let mut best: Option<(u32, u64)> = None;
    for i in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let read = |f: &str| std::fs::read_to_string(format!("{dir}/{f}")).ok();
        let (Some(level), Some(size)) = (read("level"), read("size")) else {
            continue;
        };
        let (Ok(level), Some(bytes)) = (level.trim().parse::<u32>(), parse_cache_size(&size))
        else {
            continue;
        };
        if best.map_or(true, |(l, _)| level > l) {
            best = Some((level, bytes));
        }
    }
    copy_min_for(best.map(|(_, b)| b))
}

/// The default `--copy-min` for a last-level cache of `reported` bytes.
fn copy_min_for(reported: Option<u64>) -> u64 {
    reported.map_or(COPY_MIN_MOST, |b| (b / 2).clamp(1 << 20, COPY_MIN_MOST))
}

/// A sysfs cache size: "32768K", "2M", "512".
fn parse_cache_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.as_bytes().last()? {
        b'K' | b'k' => (&s[..s.len() - 1], 1024),
        b'M' | b'm' => (&s[..s.len() - 1], 1 << 20),
        b'G' | b'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auto() -> SendPath {
        SendPath::new(FileIo::Auto, 64 * 1024, 2 << 20, 1 << 20)
    }

    #[test]
    fn cache_sizes_parse() {
        assert_eq!(parse_cache_size("32768K\n"), Some(32 << 20));
        assert_eq!(parse_cache_size("2M"), Some(2 << 20));
        assert_eq!(parse_cache_size("512"), Some(512));
        assert_eq!(parse_cache_size("K"), None);
        assert_eq!(parse_cache_size("x"), None);
        assert!((1 << 20..=COPY_MIN_MOST).contains(&default_copy_min()));
    }

    #[test]
    fn a_reported_cache_beyond_what_one_core_keeps_is_not_believed() {
        // A virtual machine that reports its host's 260 MiB still copies
        // 32 MiB files.
        assert_eq!(copy_min_for(Some(260 << 20)), 16 << 20);
        assert!(copy_min_for(Some(260 << 20)) <= 32 << 20);
        assert_eq!(copy_min_for(Some(8 << 20)), 4 << 20);
        assert_eq!(copy_min_for(Some(512 << 10)), 1 << 20);
        assert_eq!(copy_min_for(None), COPY_MIN_MOST);
    }

    #[test]
    fn files_below_the_copy_minimum_always_get_sendfile() {
        let mut p = auto();
        for _ in 0..32 {
            assert!(!p.choose(true, (1 << 20) - 1).pread);
        }
        let copies = (0..32).filter(|_| p.choose(true, 1 << 20).pread).count();
        assert_eq!(copies, 16);
    }

    /// Runs `windows` windows of WINDOW each, busy for `busy` of each.
    fn run(p: &mut SendPath, t: &mut Instant, windows: u32, busy: f64) {
        let step = WINDOW / 4;
        for _ in 0..windows * 4 {
            p.after_wait(*t);
            p.choose(true, 1 << 20);
            let work = step.mul_f64(busy);
            p.before_wait(*t + work);
            *t += step;
        }
    }

    #[test]
    fn fixed_modes_ignore_the_peer_and_the_clock() {
        let mut s = SendPath::new(FileIo::Sendfile, 65536, 1 << 21, 0);
        let mut c = SendPath::new(FileIo::Pread, 65536, 1 << 21, 0);
        for lo in [true, false] {
            assert!(!s.choose(lo, 0).pread);
            assert_eq!(s.choose(lo, 0).chunk, 1 << 21);
            assert!(c.choose(lo, 0).pread);
            assert_eq!(c.choose(lo, 0).chunk, 65536);
        }
        assert!(!s.measuring() && !c.measuring());
    }

    #[test]
    fn remote_peers_always_get_sendfile_and_start_no_measurement() {
        let mut p = auto();
        let t = Instant::now();
        for _ in 0..100 {
            p.after_wait(t);
            assert!(!p.choose(false, 1 << 20).pread);
        }
        assert!(!p.measuring());
    }

    #[test]
    fn the_share_spreads_copies_evenly() {
        let mut p = auto();
        // share 8/16: every other loopback write copies.
        let picks: Vec<bool> = (0..8).map(|_| p.choose(true, 1 << 20).pread).collect();
        assert_eq!(picks.iter().filter(|&&b| b).count(), 4);
        assert!(picks.windows(2).all(|w| w[0] != w[1]));
    }

    #[test]
    fn an_idle_worker_copies_more_and_a_saturated_one_less() {
        let mut p = auto();
        let mut t = Instant::now();
        run(&mut p, &mut t, 40, 0.5);
        assert_eq!(p.copy_share(), 1.0);
        run(&mut p, &mut t, 40, 1.0);
        assert_eq!(p.copy_share(), 0.0);
        // Inside the band the share stays where it is.
        let before = p.copy_share();
        run(&mut p, &mut t, 40, 0.95);
        assert_eq!(p.copy_share(), before);
    }

    #[test]
    fn measurement_stops_when_no_loopback_file_bytes_flow() {
        let mut p = auto();
        let mut t = Instant::now();
        run(&mut p, &mut t, 3, 0.5);
        assert!(p.measuring());
        // Two windows without a loopback file write end the measurement.
        for _ in 0..3 {
            t += WINDOW;
            p.before_wait(t);
            p.after_wait(t);
        }
        assert!(!p.measuring());
        let share = p.copy_share();
        t += WINDOW;
        p.after_wait(t);
        assert_eq!(p.copy_share(), share);
    }

    #[test]
    fn models_that_cannot_measure_treat_auto_as_sendfile() {
        let root = std::env::temp_dir();
        let mut cfg = ServerConfig::for_root(&root);
        cfg.copy_min = Some(0);
        let mut p = SendPath::from_config(&cfg, false);
        for _ in 0..STEPS {
            assert!(!p.choose(true, 1 << 30).pread);
        }
        let mut p = SendPath::from_config(&cfg, true);
        assert!((0..STEPS).any(|_| p.choose(true, 1 << 30).pread));
        cfg.file_io = FileIo::Pread;
        let mut p = SendPath::from_config(&cfg, false);
        assert!(p.choose(false, 1).pread);
    }

    #[test]
    fn counts_bytes_by_path() {
        let mut p = auto();
        let c = p.copy;
        let s = p.sendfile;
        let mut out = OutQueue::default();
        out.file_bytes = 10;
        p.count_sent(c, &mut out);
        assert_eq!(out.file_bytes, 0, "taken");
        out.file_bytes = 5;
        p.count_sent(s, &mut out);
        p.count_sent(c, &mut out);
        assert_eq!((p.copied, p.sendfiled), (10, 5));
    }
}
