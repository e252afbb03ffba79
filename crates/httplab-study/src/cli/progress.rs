//! The progress bar of `httplab study`: a subscriber to the study's events
//! (the library draws nothing itself).

use std::sync::Mutex;

use crate::execute::events::{Event, Observer};
use crate::plan::text::human_secs;

/// An observer that draws the study's progress on stderr: runs done of
/// runs planned, the estimated time left and what runs now.
pub fn bar() -> Observer {
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{elapsed_precise} {prefix} [{bar:30}] {pos}/{len} runs  {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    // Seconds of the estimate still ahead.
    let left = Mutex::new(0.0f64);
    Box::new(move |e: &Event| match e {
        Event::Planned { runs, seconds } => {
            bar.set_length(*runs);
            *left.lock().unwrap_or_else(|p| p.into_inner()) = *seconds;
        }
        Event::MoreRuns { runs } => bar.inc_length(*runs),
        Event::Activity { message } => bar.set_message(message.clone()),
        Event::Notice { message } if bar.is_hidden() => eprintln!("note: {message}"),
        Event::Notice { message } => bar.println(format!("note: {message}")),
        Event::Progress { seconds } => {
            let mut l = left.lock().unwrap_or_else(|p| p.into_inner());
            *l = (*l - seconds).max(0.0);
            bar.inc(1);
            bar.set_prefix(format!("~{} left", human_secs(*l)));
        }
        Event::Finished { interrupted } => {
            bar.finish_with_message(if *interrupted { "interrupted" } else { "done" });
            eprintln!();
        }
        Event::ServerStarted { .. } | Event::RunStarted { .. } | Event::RunFinished { .. } => {}
    })
}
