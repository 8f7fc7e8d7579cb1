//! Names across a recording: [`RecordingResolver`] remembers what the live resolver answered,
//! [`ReplayResolver`] answers the same from a recording.

use super::{Entry, Recording};
use sonde_compiler::value::Frame;
use sonde_present::output::Resolver;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

/// The arguments of one [`Resolver`] query.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Query {
    Stack { kernel: bool, raw: u64, limit: u32 },
    Symbol { kernel: bool, addr: u64 },
    UserSymbol { pid: u32, addr: u64 },
    Username { uid: u64 },
    CgroupPath { id: u64 },
    Timestamp { tag: u64, nsecs: u64 },
}

/// The answer to one query.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Answer {
    Frames(Option<Vec<Frame>>),
    Text(Option<String>),
}

impl Answer {
    fn frames(&self) -> Option<Vec<Frame>> {
        match self {
            Answer::Frames(f) => f.clone(),
            Answer::Text(_) => None,
        }
    }

    fn text(&self) -> Option<String> {
        match self {
            Answer::Text(t) => t.clone(),
            Answer::Frames(_) => None,
        }
    }
}

/// Splits a resolution entry into its query and answer (`None` for other entries).
fn split(e: &Entry) -> Option<(Query, Answer)> {
    Some(match e {
        Entry::Stack {
            kernel,
            raw,
            limit,
            frames,
        } => (
            Query::Stack {
                kernel: *kernel,
                raw: *raw,
                limit: *limit,
            },
            Answer::Frames(frames.clone()),
        ),
        Entry::Symbol { kernel, addr, name } => (
            Query::Symbol {
                kernel: *kernel,
                addr: *addr,
            },
            Answer::Text(name.clone()),
        ),
        Entry::UserSymbol { pid, addr, name } => (
            Query::UserSymbol {
                pid: *pid,
                addr: *addr,
            },
            Answer::Text(name.clone()),
        ),
        Entry::Username { uid, name } => {
            (Query::Username { uid: *uid }, Answer::Text(name.clone()))
        }
        Entry::CgroupPath { id, path } => {
            (Query::CgroupPath { id: *id }, Answer::Text(path.clone()))
        }
        Entry::Timestamp { tag, nsecs, text } => (
            Query::Timestamp {
                tag: *tag,
                nsecs: *nsecs,
            },
            Answer::Text(text.clone()),
        ),
        _ => return None,
    })
}

/// The entry recording `answer` to `query`.
fn join(query: Query, answer: Answer) -> Entry {
    let text = |a: Answer| a.text();
    match query {
        Query::Stack { kernel, raw, limit } => Entry::Stack {
            kernel,
            raw,
            limit,
            frames: answer.frames(),
        },
        Query::Symbol { kernel, addr } => Entry::Symbol {
            kernel,
            addr,
            name: text(answer),
        },
        Query::UserSymbol { pid, addr } => Entry::UserSymbol {
            pid,
            addr,
            name: text(answer),
        },
        Query::Username { uid } => Entry::Username {
            uid,
            name: text(answer),
        },
        Query::CgroupPath { id } => Entry::CgroupPath {
            id,
            path: text(answer),
        },
        Query::Timestamp { tag, nsecs } => Entry::Timestamp {
            tag,
            nsecs,
            text: text(answer),
        },
    }
}

/// Answers [`Resolver`] queries with the resolution entries of a recording.
///
/// Cheap to clone: clones share their answers, so entries learnt through one (during a
/// replay that reads the stream in order) are seen by every printer holding another. A query
/// the recording never answered resolves to `None` (printed raw).
#[derive(Clone, Debug, Default)]
pub struct ReplayResolver {
    answers: Arc<RwLock<HashMap<Query, Answer>>>,
}

impl ReplayResolver {
    /// A resolver that knows nothing yet (see [`ReplayResolver::learn`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// A resolver that knows every resolution entry of `recording` (where the same query was
    /// answered differently over time, the last answer wins; learn the entries in stream
    /// order while replaying to get each answer at its time).
    pub fn from_recording(recording: &Recording) -> Self {
        let r = Self::new();
        for e in &recording.entries {
            r.learn(e);
        }
        r
    }

    /// Takes in a resolution entry, replacing an earlier answer to the same query; returns
    /// false (and does nothing) for other entries.
    pub fn learn(&self, entry: &Entry) -> bool {
        let Some((q, a)) = split(entry) else {
            return false;
        };
        self.answers
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(q, a);
        true
    }

    fn get(&self, q: &Query) -> Option<Answer> {
        self.answers
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(q)
            .cloned()
    }
}

impl Resolver for ReplayResolver {
    fn stack(&self, kernel: bool, raw: u64, limit: u32) -> Option<Vec<Frame>> {
        self.get(&Query::Stack { kernel, raw, limit })?.frames()
    }

    fn symbol(&self, kernel: bool, addr: u64) -> Option<String> {
        self.get(&Query::Symbol { kernel, addr })?.text()
    }

    fn user_symbol(&self, pid: u32, addr: u64) -> Option<String> {
        self.get(&Query::UserSymbol { pid, addr })?.text()
    }

    fn username(&self, uid: u64) -> Option<String> {
        self.get(&Query::Username { uid })?.text()
    }

    fn cgroup_path(&self, id: u64) -> Option<String> {
        self.get(&Query::CgroupPath { id })?.text()
    }

    fn timestamp(&self, tag: u64, nsecs: u64) -> Option<String> {
        self.get(&Query::Timestamp { tag, nsecs })?.text()
    }
}

/// How many answers [`RecordingResolver`] remembers to avoid writing the same one twice;
/// beyond this it forgets them all (an answer is then written again, which is harmless).
const SEEN_LIMIT: usize = 1 << 16;

#[derive(Debug, Default)]
struct RecordingState {
    /// The last answer written per query.
    seen: HashMap<Query, Answer>,
    /// Entries not taken yet.
    pending: Vec<Entry>,
}

/// A [`Resolver`] that forwards every query to `R` and keeps its answers as resolution
/// entries for the recording; [`RecordingResolver::take_entries`] hands them over.
///
/// An answer is kept once, and again only when it changes. Cheap to clone (when `R` is):
/// clones share the pending entries.
#[derive(Clone, Debug)]
pub struct RecordingResolver<R: Resolver> {
    inner: R,
    state: Arc<Mutex<RecordingState>>,
}

impl<R: Resolver> RecordingResolver<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> Self {
        RecordingResolver {
            inner,
            state: Arc::default(),
        }
    }

    /// The wrapped resolver.
    pub fn inner(&self) -> &R {
        &self.inner
    }

    /// The resolution entries answered since the last call, in query order. Write them before
    /// the entry whose printing asked for them.
    pub fn take_entries(&self) -> Vec<Entry> {
        std::mem::take(&mut self.lock().pending)
    }

    fn lock(&self) -> MutexGuard<'_, RecordingState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn keep(&self, query: Query, answer: Answer) {
        let mut s = self.lock();
        if s.seen.get(&query) == Some(&answer) {
            return;
        }
        if s.seen.len() >= SEEN_LIMIT {
            s.seen.clear();
        }
        s.pending.push(join(query.clone(), answer.clone()));
        s.seen.insert(query, answer);
    }
}

impl<R: Resolver> Resolver for RecordingResolver<R> {
    /// Forwarded, not recorded: a replay prints enum values as numbers.
    fn enum_variant(&self, tag: &str, value: i64) -> Option<String> {
        self.inner.enum_variant(tag, value)
    }

    fn stack(&self, kernel: bool, raw: u64, limit: u32) -> Option<Vec<Frame>> {
        let frames = self.inner.stack(kernel, raw, limit);
        self.keep(
            Query::Stack { kernel, raw, limit },
            Answer::Frames(frames.clone()),
        );
        frames
    }

    fn symbol(&self, kernel: bool, addr: u64) -> Option<String> {
        let name = self.inner.symbol(kernel, addr);
        self.keep(Query::Symbol { kernel, addr }, Answer::Text(name.clone()));
        name
    }

    fn user_symbol(&self, pid: u32, addr: u64) -> Option<String> {
        let name = self.inner.user_symbol(pid, addr);
        self.keep(Query::UserSymbol { pid, addr }, Answer::Text(name.clone()));
        name
    }

    fn username(&self, uid: u64) -> Option<String> {
        let name = self.inner.username(uid);
        self.keep(Query::Username { uid }, Answer::Text(name.clone()));
        name
    }

    fn cgroup_path(&self, id: u64) -> Option<String> {
        let path = self.inner.cgroup_path(id);
        self.keep(Query::CgroupPath { id }, Answer::Text(path.clone()));
        path
    }

    fn timestamp(&self, tag: u64, nsecs: u64) -> Option<String> {
        let text = self.inner.timestamp(tag, nsecs);
        self.keep(Query::Timestamp { tag, nsecs }, Answer::Text(text.clone()));
        text
    }
}

#[cfg(test)]
#[path = "resolver_tests.rs"]
mod tests;
