//! What a reply leaves behind: its statistics, the `--verify-root`
//! comparison of its body, and the `--print-request`/`--print-reply` lines.

use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Instant;

use httplab_wire::response::{Framing, ResponseInfo};

use crate::clock::us;
use crate::h1::Pending;
use crate::stats::rec;
use crate::worker::Tally;

/// Records a complete reply to call `p` (its first byte at `first`, its
/// end at `now`) in the window or the warm-up, as the call was scheduled.
pub(crate) fn reply(
    tally: &mut Tally,
    p: &Pending,
    info: &ResponseInfo,
    first: Instant,
    now: Instant,
) {
    let m = p.measured;
    let total_unc = us(now.saturating_duration_since(p.sent));
    if m {
        tally.part.replies += 1;
        rec(&mut tally.ihist, total_unc);
    }
    let st = tally.of(m);
    st.replies += 1;
    st.status.record(info.status);
    st.header_bytes += info.header_bytes;
    st.body_bytes += info.body_bytes;
    st.footer_bytes += info.footer_bytes;
    st.body_received += info.body_bytes;
    st.bytes_expected += match info.framing {
        Framing::Length => info.content_length.unwrap_or(0),
        _ => info.body_bytes,
    };
    let resp_us = us(first.saturating_duration_since(p.sent));
    let xfer_us = us(now.saturating_duration_since(first));
    st.response_sum_us += resp_us as f64;
    st.transfer_sum_us += xfer_us as f64;
    rec(&mut st.first_byte, resp_us);
    rec(&mut st.response_unc, total_unc);
    let corrected = us(now.saturating_duration_since(p.intended));
    st.record_response(corrected);
    tally.stage_reply(p.intended, corrected, total_unc);
}

/// Files for --verify-root, loaded lazily per request index.
pub(crate) struct Verifier {
    pub root: PathBuf,
    pub files: Vec<Option<Option<Vec<u8>>>>,
}

impl Verifier {
    pub fn file(&mut self, req: u32, path: &str) -> Option<&[u8]> {
        let i = req as usize;
        if self.files.len() <= i {
            self.files.resize(i + 1, None);
        }
        if self.files[i].is_none() {
            let p = path.split(['?', '#']).next().unwrap_or("/");
            let mut rel = p.trim_start_matches('/').to_string();
            if rel.is_empty() || rel.ends_with('/') {
                rel.push_str("index.html");
            }
            let full = self.root.join(rel);
            self.files[i] = Some(std::fs::read(full).ok());
        }
        self.files[i].as_ref().and_then(|o| o.as_deref())
    }
}

pub(crate) fn print_request(
    what: crate::spec::PrintWhat,
    serial: u64,
    bytes: &[u8],
    head_len: usize,
) {
    let mut out = String::new();
    let head = String::from_utf8_lossy(&bytes[..head_len.min(bytes.len())]);
    let body = &bytes[head_len.min(bytes.len())..];
    if what.header() {
        for line in head.split("\r\n").take_while(|l| !l.is_empty()) {
            out.push_str(&format!("SH{serial}:{line}\n"));
        }
        out.push_str(&format!("SH{serial}:\n"));
    }
    if what.body() && !body.is_empty() {
        for line in String::from_utf8_lossy(body).lines() {
            out.push_str(&format!("SB{serial}:{line}\n"));
        }
    }
    out.push_str(&format!(
        "SS{serial}: header {} content {}\n",
        head_len,
        body.len()
    ));
    let mut so = io::stdout().lock();
    let _ = so.write_all(out.as_bytes());
}

pub(crate) fn print_reply(
    what: crate::spec::PrintWhat,
    serial: u64,
    raw: &[u8],
    info: &httplab_wire::response::ResponseInfo,
) {
    let mut out = String::new();
    let hl = (info.header_bytes as usize).min(raw.len());
    if what.header() {
        for line in String::from_utf8_lossy(&raw[..hl])
            .split("\r\n")
            .take_while(|l| !l.is_empty())
        {
            out.push_str(&format!("RH{serial}:{line}\n"));
        }
        out.push_str(&format!("RH{serial}:\n"));
    }
    if what.body() && raw.len() > hl {
        for line in String::from_utf8_lossy(&raw[hl..]).lines() {
            out.push_str(&format!("RB{serial}:{line}\n"));
        }
    }
    out.push_str(&format!(
        "RS{serial}: header {} content {} footer {}\n",
        info.header_bytes, info.body_bytes, info.footer_bytes
    ));
    let mut so = io::stdout().lock();
    let _ = so.write_all(out.as_bytes());
}
