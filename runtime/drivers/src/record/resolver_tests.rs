//! A recording resolver keeps each new answer once, and a replay resolver gives the same
//! answers back, from a recording or learnt entry by entry.

use super::{RecordingResolver, ReplayResolver};
use crate::record::fixtures::{frame, header, write};
use crate::record::{Entry, read_recording};
use sonde_compiler::value::Frame;
use sonde_present::output::Resolver;

/// A live resolver whose answers depend on their arguments.
#[derive(Clone)]
struct Fake;

impl Resolver for Fake {
    fn stack(&self, kernel: bool, raw: u64, limit: u32) -> Option<Vec<Frame>> {
        (raw != 0).then(|| {
            (0..u64::from(limit))
                .map(|i| frame(raw + i, Some(&format!("f{i}")), kernel.then_some("[k]")))
                .collect()
        })
    }
    fn symbol(&self, kernel: bool, addr: u64) -> Option<String> {
        kernel.then(|| format!("ksym{addr}"))
    }
    fn user_symbol(&self, pid: u32, addr: u64) -> Option<String> {
        Some(format!("{pid}:{addr}"))
    }
    fn username(&self, uid: u64) -> Option<String> {
        (uid == 0).then(|| "root".into())
    }
    fn cgroup_path(&self, id: u64) -> Option<String> {
        Some(format!("/cg/{id}"))
    }
    fn timestamp(&self, tag: u64, nsecs: u64) -> Option<String> {
        Some(format!("t{tag}@{nsecs}"))
    }
}

/// Asks `r` one of each query, twice over, with answers and non-answers.
fn ask(r: &dyn Resolver) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..2 {
        out.push(format!("{:?}", r.stack(true, 100, 2)));
        out.push(format!("{:?}", r.stack(false, 0, 2)));
        out.push(format!("{:?}", r.symbol(true, 5)));
        out.push(format!("{:?}", r.symbol(false, 5)));
        out.push(format!("{:?}", r.user_symbol(7, 8)));
        out.push(format!("{:?}", r.username(0)));
        out.push(format!("{:?}", r.username(1000)));
        out.push(format!("{:?}", r.cgroup_path(3)));
        out.push(format!("{:?}", r.timestamp(1, 99)));
    }
    out
}

#[test]
fn recorded_resolutions_replay_the_same_answers() {
    let rec = RecordingResolver::new(Fake);
    let clone = rec.clone();
    let live = ask(&clone);
    let entries = rec.take_entries();
    // Each answer once, though asked twice.
    assert_eq!(entries.len(), 9);
    assert!(entries.iter().all(Entry::is_resolution));
    assert!(rec.take_entries().is_empty());
    let mut stream = entries;
    stream.push(Entry::End { exit_code: 0 });
    let replay =
        ReplayResolver::from_recording(&read_recording(&write(&header(), &stream)).unwrap());
    assert_eq!(ask(&replay), live);
    // Asking again the same question records nothing new.
    ask(&rec);
    assert!(rec.take_entries().is_empty());
    // A query never recorded resolves to nothing.
    assert_eq!(replay.username(5), None);
    assert_eq!(replay.stack(true, 100, 3), None);
}

#[test]
fn a_changed_answer_is_recorded_again_and_learnt_in_order() {
    /// Answers with a name that changes on every call.
    #[derive(Default)]
    struct Changing(std::cell::Cell<u32>);
    impl Resolver for Changing {
        fn username(&self, _uid: u64) -> Option<String> {
            self.0.set(self.0.get() + 1);
            Some(format!("user{}", self.0.get()))
        }
    }
    let rec = RecordingResolver::new(Changing::default());
    let replay = ReplayResolver::new();
    for want in ["user1", "user2"] {
        assert_eq!(rec.username(4).as_deref(), Some(want));
        for e in rec.take_entries() {
            assert!(replay.learn(&e));
        }
        assert_eq!(replay.username(4).as_deref(), Some(want));
    }
    assert!(!replay.learn(&Entry::End { exit_code: 0 }));
}
