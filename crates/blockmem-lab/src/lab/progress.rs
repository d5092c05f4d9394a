//! The one progress-bar factory: bars go to stderr and hide themselves when stderr is
//! not a terminal (or when `--quiet`).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// A bar of `len` steps titled `msg`; hidden when stderr is not a terminal or `hidden`.
pub fn bar(len: u64, msg: &str, hidden: bool) -> ProgressBar {
    let pb = ProgressBar::with_draw_target(
        Some(len),
        if hidden || !std::io::stderr().is_terminal() {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        },
    );
    pb.set_style(
        ProgressStyle::with_template("{prefix:>12} [{bar:30}] {pos}/{len} {elapsed_precise} {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    pb.set_prefix(msg.to_string());
    pb
}
