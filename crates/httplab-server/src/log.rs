//! Access log in Common Log Format, buffered per worker and flushed once per
//! loop iteration (whole lines per `write`, file opened with O_APPEND).

use std::fs::File;
use std::io::Write;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::config::AccessLog as Target;

/// Where a worker's log lines go.
#[derive(Debug, Clone)]
pub enum Sink {
    /// Standard output.
    Stdout,
    /// A shared append-mode file.
    File(Arc<File>),
}

impl Sink {
    /// Opens the configured target.
    pub fn open(t: &Target) -> std::io::Result<Sink> {
        match t {
            Target::Stdout => Ok(Sink::Stdout),
            Target::File(p) => Ok(Sink::File(Arc::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)?,
            ))),
        }
    }
}

/// A worker's access log.
#[derive(Debug)]
pub struct AccessLog {
    sink: Sink,
    buf: Vec<u8>,
}

impl AccessLog {
    /// A log writing to `sink`.
    pub fn new(sink: Sink) -> Self {
        AccessLog {
            sink,
            buf: Vec::with_capacity(4096),
        }
    }

    /// Appends one line: `host - - [date] "request line" status bytes`.
    pub fn record(&mut self, peer: Option<IpAddr>, line: &str, status: u16, bytes: u64) {
        let host = peer.map_or_else(|| "-".to_string(), |p| p.to_string());
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let line: String = line
            .chars()
            .map(|c| if c == '"' || c.is_control() { '?' } else { c })
            .collect();
        let _ = writeln!(
            self.buf,
            "{host} - - [{}] \"{line}\" {status} {bytes}",
            clf_date(secs)
        );
        if self.buf.len() > 64 * 1024 {
            self.flush();
        }
    }

    /// Writes the buffered lines out.
    pub fn flush(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let _ = match &self.sink {
            // Not through std's stdout lock: a forked child must not wait on
            // a lock another thread of its parent held at fork time.
            Sink::Stdout => crate::sys::write_all_stdout(&self.buf),
            Sink::File(f) => (&**f).write_all(&self.buf),
        };
        self.buf.clear();
    }
}

impl Drop for AccessLog {
    fn drop(&mut self) {
        self.flush();
    }
}

/// `10/Oct/2000:13:55:36 +0000` for a Unix time (UTC).
pub fn clf_date(secs: u64) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil-from-days (proleptic Gregorian), days since 1970-01-01.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{:02}/{}/{}:{:02}:{:02}:{:02} +0000",
        d,
        MONTHS[(m - 1) as usize],
        y,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn clf_dates() {
        assert_eq!(super::clf_date(0), "01/Jan/1970:00:00:00 +0000");
        assert_eq!(super::clf_date(971_186_136), "10/Oct/2000:13:55:36 +0000");
        assert_eq!(super::clf_date(1_709_210_096), "29/Feb/2024:12:34:56 +0000");
    }
}
