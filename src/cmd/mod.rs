//! The commands and modes of `sonde`, one module each: running a script (`run`, in the
//! kernel by `kernel` or in the userspace engine by `userspace`), `record`, `replay`,
//! `flamediff`, `tool` (with `allocreplay`, the hidden commands behind `sonde tool
//! allocreplay`), `repl`, `serve` (the metrics agent), `man` and `completions` (`docs`), `-l` (`list`) and `--info` (`info`).

pub mod allocreplay;
pub mod docs;
pub mod flamediff;
pub mod info;
pub mod kernel;
pub mod list;
pub mod record;
pub mod repl;
pub mod replay;
pub mod run;
pub mod serve;
pub mod tool;
pub mod userspace;
