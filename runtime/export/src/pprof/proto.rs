//! The messages of pprof's `profile.proto` (package `perftools.profiles`), written by hand
//! with prost's derive: no build script, no protoc. Field numbers and types follow the
//! format's definition; every string is an index into [`Profile::string_table`], whose
//! entry 0 is the empty string, and every id is non-zero.

/// A whole profile: sample types, samples and the tables they refer to.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Profile {
    /// What each value of a sample measures, one entry per value.
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    /// The samples.
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    /// The binaries (and the kernel) the locations belong to.
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    /// The code addresses the samples refer to.
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    /// The functions the locations are in.
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    /// Every string of the profile; entry 0 is `""`.
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    /// A regular expression of frames to drop (string index; 0: none).
    #[prost(int64, tag = "7")]
    pub drop_frames: i64,
    /// A regular expression of frames to keep (string index; 0: all).
    #[prost(int64, tag = "8")]
    pub keep_frames: i64,
    /// When the profile was collected, nanoseconds since the Unix epoch.
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    /// How long the collection lasted, in nanoseconds.
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    /// What one sampling period measures.
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    /// The sampling period, in `period_type`'s unit.
    #[prost(int64, tag = "12")]
    pub period: i64,
    /// Free-form comments (string indices).
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    /// The sample type shown by default (string index of its type).
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

/// A measured quantity: its kind and unit, both string indices (`samples`/`count`).
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct ValueType {
    /// The kind (`samples`, `cpu`, `value`).
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    /// The unit (`count`, `nanoseconds`, `bytes`).
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// One stack and its values.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// The stack's locations, leaf first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    /// One value per sample type.
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    /// Extra context: the key's other parts.
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

/// A label of a sample: a string (`str`) or a number (`num`).
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct Label {
    /// The label's name (string index).
    #[prost(int64, tag = "1")]
    pub key: i64,
    /// A string value (string index; 0 for a numeric label).
    #[prost(int64, tag = "2")]
    pub str: i64,
    /// A numeric value.
    #[prost(int64, tag = "3")]
    pub num: i64,
    /// The unit of `num` (string index; 0: none).
    #[prost(int64, tag = "4")]
    pub num_unit: i64,
}

/// A binary (or the kernel) mapped into memory.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct Mapping {
    /// Its id (non-zero).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// The first address of the mapping (0: unknown).
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    /// The first address past the mapping (0: unknown).
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    /// The offset in the file of `memory_start`.
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    /// The file's path (string index).
    #[prost(int64, tag = "5")]
    pub filename: i64,
    /// The file's build id (string index; 0: unknown).
    #[prost(int64, tag = "6")]
    pub build_id: i64,
    /// The locations in this mapping carry their functions (no symbolization needed).
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    /// The locations carry source file names.
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    /// The locations carry line numbers.
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
    /// The locations carry inlined frames.
    #[prost(bool, tag = "10")]
    pub has_inline_frames: bool,
}

/// A code address and the function(s) it is in.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Location {
    /// Its id (non-zero).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// The mapping it is in (0: none).
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    /// The instruction address.
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// The functions at this address, innermost (inlined) first; none when unresolved.
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
    /// The address stands for several (folded) frames.
    #[prost(bool, tag = "5")]
    pub is_folded: bool,
}

/// A function (and source line) a location is in.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct Line {
    /// The function's id.
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    /// The source line (0: unknown).
    #[prost(int64, tag = "2")]
    pub line: i64,
    /// The source column (0: unknown).
    #[prost(int64, tag = "3")]
    pub column: i64,
}

/// A function.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub struct Function {
    /// Its id (non-zero).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Its name, as people read it (string index).
    #[prost(int64, tag = "2")]
    pub name: i64,
    /// Its name as the linker knows it (string index).
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    /// Its source file (string index; 0: unknown).
    #[prost(int64, tag = "4")]
    pub filename: i64,
    /// Its first source line (0: unknown).
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}
