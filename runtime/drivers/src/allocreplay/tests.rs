use super::*;
use sonde_allocs::ops::Op;

fn results(samples: Vec<(u64, u64, u64)>) -> Results {
    Results {
        wall_ns: 1000,
        peak_rss: 8192,
        end_rss: 4096,
        peak_live: 4096,
        end_live: 0,
        calls: vec![("malloc".into(), 2), ("free".into(), 2)],
        samples,
        own_syscalls: vec![("pread64".into(), 2), ("prctl".into(), 1)],
        ..Results::default()
    }
}

fn opts() -> FeedOptions {
    let a = |n: &str| Allocator {
        name: n.into(),
        preload: None,
    };
    FeedOptions {
        allocators: vec![a("glibc"), a("other")],
        threads_free: false,
        touch: true,
        sonde: PathBuf::from("sonde"),
        count_syscalls: false,
    }
}

#[test]
fn a_run_is_written_as_lines_of_its_numbers() {
    let r = results(vec![(0, 2048, 4096), (1, 0, 4096)]);
    let sys = vec![
        ("mmap".to_string(), 3),
        ("pread64".to_string(), 5),
        ("prctl".to_string(), 1),
        ("futex".to_string(), 2),
    ];
    let mut out = Vec::new();
    write_run("glibc", &r, Some(&sys), &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    for want in [
        "run glibc wall_ns 1000\n",
        "run glibc calls 4\n",
        "run glibc frag_peak 200\n",
        "run glibc frag_end 0\n",
        "run glibc frag_mean 200\n",
        "call glibc malloc 2\n",
        "sys glibc mmap 3\n",
        "sys glibc brk 0\n",
        // pread64 5 - 2 of the harness's own, futex 2, prctl 1 - 1.
        "sys glibc other 5\n",
    ] {
        assert!(text.contains(want), "{want:?} in\n{text}");
    }
}

#[test]
fn points_carry_each_allocator_s_last_sample() {
    let rec = Recording {
        ops: (0..3)
            .map(|i| Op {
                call: Call::Malloc,
                tid: 1,
                time_ns: 100 + i,
                size: 10,
                align: 0,
                ptr: 0,
                result: 0x10 + i * 16,
                stack: 0,
            })
            .collect(),
        ..Recording::default()
    };
    let plan = Plan::new(&rec);
    let all = vec![
        results(vec![(0, 10, 4096), (2, 30, 8192)]),
        results(vec![(1, 20, 100)]),
    ];
    let mut out = Vec::new();
    write_points(&plan, &opts(), &all, &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "point 100 10 glibc 4096 other 0\npoint 101 20 glibc 4096 other 100\npoint 102 30 glibc 8192 other 100\n"
    );
    let mut out = Vec::new();
    write_plan(&rec, &plan, &opts(), &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.starts_with("alloc glibc 0\nalloc other 1\ninfo recorded 3\ninfo calls 3\n"),
        "{text}"
    );
    assert!(
        text.contains("info peak_live 30\n") && text.ends_with("expect malloc 3\n"),
        "{text}"
    );
}

#[test]
fn an_empty_recording_is_refused() {
    let err = feed(&Recording::default(), &opts(), &mut Vec::new()).unwrap_err();
    assert_eq!(
        err,
        "the recording holds no call to replay (0 calls recorded)"
    );
}
