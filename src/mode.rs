//! What a run of a script does besides running it: nothing, recording, or replaying.

/// What a run does besides running the script.
pub enum Mode {
    /// Run it.
    Live,
    /// `sonde record -o FILE`: run it and record what it prints.
    Record(std::path::PathBuf),
    /// `sonde replay FILE SCRIPT`: run a userspace script on a recording's events.
    Replay(sonde_drivers::record::Recording),
}
