//! BPF iterator probes (`iter:`) for real, against `tests/targets/iter_target.c` (a named
//! process with a second named thread, a file open at descriptor 42 and mapped): the tasks,
//! files and mappings the iterators walk are checked against `/proc`, with exact pids, fds,
//! paths and address ranges; a pinned iterator is read back from bpffs; `-p` limits the walk;
//! `-l` lists the iterators; bad scripts get their diagnostics. Every script filters on the
//! target's pid (the machine has other processes), and each run is bounded by a timeout.

mod common;

use common::{Target, TempDir, compile_target, run_sonde, skip_unless_root};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The target, started and set up, with the file it holds.
struct Running {
    /// The process (killed on drop).
    _target: Target,
    pid: u32,
    /// The second thread's id.
    tid: u32,
    /// The file at its descriptor 42.
    file: PathBuf,
    _dir: TempDir,
}

/// Builds and starts the target; returns once it holds its file and runs its thread.
fn start(tag: &str) -> Running {
    let dir = TempDir::new(tag);
    let bin = compile_target(&dir, "iter_target", &["-O2", "-pthread"]);
    let file = dir.path().join("held.dat");
    let target = Target::spawn(&bin, &[file.to_str().unwrap()]);
    let pid: u32 = target.pid().parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let tid = std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .find(|&t| {
                t != pid
                    && std::fs::read_to_string(format!("/proc/{pid}/task/{t}/comm"))
                        .is_ok_and(|c| c == "iter-worker\n")
            });
        let named = std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .is_ok_and(|c| c == "sonde-iter-tgt\n");
        let mapped = std::fs::read_to_string(format!("/proc/{pid}/maps"))
            .is_ok_and(|m| m.contains(file.to_str().unwrap()));
        if let (Some(tid), true, true) = (tid, named, mapped) {
            return Running {
                _target: target,
                pid,
                tid,
                file,
                _dir: dir,
            };
        }
        assert!(
            Instant::now() < deadline,
            "the target did not set itself up"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The address ranges of process `pid`'s mappings (`start-end` in hex), in address order,
/// without `[vsyscall]` (a fixed page that is no VMA of the process).
fn proc_ranges(pid: u32) -> Vec<String> {
    std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .unwrap()
        .lines()
        .filter(|l| !l.ends_with("[vsyscall]"))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

/// sonde's stdout of a run that prints no maps: the lines, then the two newlines bpftrace
/// prints at exit.
fn lines_then_exit(lines: &[String]) -> String {
    let mut s: String = lines.iter().map(|l| format!("{l}\n")).collect();
    s.push_str("\n\n");
    s
}

#[test]
fn task_iterator_finds_the_target_and_its_thread() {
    if skip_unless_root("task_iterator_finds_the_target_and_its_thread") {
        return;
    }
    let t = start("iter-task");
    let script = "iter:task /ctx.task.tgid == $1/ { printf(\"%s %d %d\\n\", ctx.task.comm, ctx.task.tgid, ctx.task.pid); }";
    let out = run_sonde(&["-e", script, &t.pid.to_string()]);
    let want = lines_then_exit(&[
        format!("sonde-iter-tgt {} {}", t.pid, t.pid),
        format!("iter-worker {} {}", t.pid, t.tid),
    ]);
    assert_eq!(out.ok_stdout(), want);
    assert!(out.stderr.contains("Attached 1 probe"), "{}", out.stderr);
    // With `-f json`, each line the kernel formatted is one printf record.
    let out = run_sonde(&["-f", "json", "-e", script, &t.pid.to_string()]);
    let records: Vec<&str> = out
        .ok_stdout()
        .lines()
        .filter(|l| l.contains("\"printf\""))
        .collect();
    assert_eq!(
        records,
        [
            format!(
                r#"{{"type": "printf", "data": "sonde-iter-tgt {} {}\n"}}"#,
                t.pid, t.pid
            ),
            format!(
                r#"{{"type": "printf", "data": "iter-worker {} {}\n"}}"#,
                t.pid, t.tid
            ),
        ]
    );
}

#[test]
fn task_file_iterator_finds_the_held_file() {
    if skip_unless_root("task_file_iterator_finds_the_held_file") {
        return;
    }
    let t = start("iter-file");
    let script = "config = { max_strlen = 200 } iter:task_file /ctx.task.tgid == $1/ { printf(\"%d %s\\n\", ctx.fd, path(ctx.file.f_path)); }";
    let out = run_sonde(&["-e", script, &t.pid.to_string()]);
    let stdout = out.ok_stdout();
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.is_empty()).collect();
    // The threads share one file table, which the iterator walks once.
    let held = format!("42 {}", t.file.display());
    assert_eq!(lines.iter().filter(|l| **l == held).count(), 1, "{stdout}");
    assert!(lines.contains(&"1 /dev/null"), "{stdout}");
    assert!(lines.contains(&"2 /dev/null"), "{stdout}");
    // Every descriptor of the process but 0: as in bpftrace, a context field that reads 0
    // (here `fd`) ends that run of the program.
    let mut fds: Vec<u32> = std::fs::read_dir(format!("/proc/{}/fd", t.pid))
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|&fd| fd != 0)
        .collect();
    fds.sort_unstable();
    let seen: Vec<u32> = lines
        .iter()
        .map(|l| l.split(' ').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(seen, fds, "{stdout}");
}

#[test]
fn task_vma_iterator_finds_every_mapping() {
    if skip_unless_root("task_vma_iterator_finds_every_mapping") {
        return;
    }
    let t = start("iter-vma");
    let script = "iter:task_vma /ctx.task.tgid == $1/ { printf(\"%lx-%lx\\n\", ctx.vma.vm_start, ctx.vma.vm_end); }";
    let out = run_sonde(&["-e", script, &t.pid.to_string()]);
    let want = proc_ranges(t.pid);
    let file_line = std::fs::read_to_string(format!("/proc/{}/maps", t.pid))
        .unwrap()
        .lines()
        .find(|l| l.ends_with(t.file.to_str().unwrap()))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .unwrap();
    assert!(want.contains(&file_line));
    assert_eq!(out.ok_stdout(), lines_then_exit(&want));
}

/// Removes a bpffs pin when dropped.
struct Pin(PathBuf);

impl Drop for Pin {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn pinned_iterator_runs_when_read() {
    if skip_unless_root("pinned_iterator_runs_when_read") {
        return;
    }
    let t = start("iter-pin");
    let name = format!("sonde_test_iter_{}", std::process::id());
    let pin = Pin(Path::new("/sys/fs/bpf").join(&name));
    let script = format!(
        "iter:task:{name} /ctx.task.tgid == $1/ {{ printf(\"%s %d\\n\", ctx.task.comm, ctx.task.pid); }}"
    );
    let out = run_sonde(&["-e", &script, &t.pid.to_string()]);
    let msg = format!("Program pinned to {}", pin.0.display());
    assert_eq!(out.ok_stdout(), lines_then_exit(&[msg]));
    // sonde has exited: each read of the pin runs the iteration again.
    let want = format!("sonde-iter-tgt {}\niter-worker {}\n", t.pid, t.tid);
    for _ in 0..2 {
        assert_eq!(std::fs::read_to_string(&pin.0).unwrap(), want);
    }
    // An absolute path that exists already is refused, naming the iterator.
    let again = format!("iter:task:{} {{ }}", pin.0.display());
    let out = run_sonde(&["-e", &again]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("sonde::runtime::iter"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("File exists"), "{}", out.stderr);
    drop(pin);
    drop(t);
}

#[test]
fn pid_option_limits_the_walk_to_the_process() {
    if skip_unless_root("pid_option_limits_the_walk_to_the_process") {
        return;
    }
    let t = start("iter-pid");
    let out = run_sonde(&[
        "-p",
        &t.pid.to_string(),
        "-e",
        "iter:task { printf(\"%s %d\\n\", ctx.task.comm, ctx.task.pid); }",
    ]);
    let want = lines_then_exit(&[
        format!("sonde-iter-tgt {}", t.pid),
        format!("iter-worker {}", t.tid),
    ]);
    assert_eq!(out.ok_stdout(), want);
}

#[test]
fn begin_end_and_maps_around_the_iteration() {
    if skip_unless_root("begin_end_and_maps_around_the_iteration") {
        return;
    }
    let t = start("iter-maps");
    let script = "BEGIN { printf(\"begin\\n\"); } iter:task /ctx.task.tgid == $1/ { @tasks = count(); @by[ctx.task.comm] = sum(ctx.task.pid - ctx.task.tgid + 1); printf(\"%d\\n\", ctx.task.pid); } END { printf(\"end\\n\"); }";
    let out = run_sonde(&["-e", script, &t.pid.to_string()]);
    let want = format!(
        "begin\n{}\n{}\nend\n\n\n@by[sonde-iter-tgt]: 1\n@by[iter-worker]: {}\n@tasks: 2\n",
        t.pid,
        t.tid,
        t.tid - t.pid + 1
    );
    assert_eq!(out.ok_stdout(), want);
    assert!(out.stderr.contains("Attached 3 probes"), "{}", out.stderr);
    drop(t);
}

#[test]
fn listing_shows_the_iterators_and_their_fields() {
    if skip_unless_root("listing_shows_the_iterators_and_their_fields") {
        return;
    }
    let out = run_sonde(&["-l", "iter:*"]);
    let stdout = out.ok_stdout();
    let lines: Vec<&str> = stdout.lines().collect();
    for want in ["iter:task", "iter:task_file", "iter:task_vma"] {
        assert!(lines.contains(&want), "{stdout}");
    }
    assert!(lines.iter().all(|l| l.starts_with("iter:")), "{stdout}");
    let mut sorted = lines.clone();
    sorted.sort_unstable();
    assert_eq!(lines, sorted);
    let out = run_sonde(&["-lv", "it:task_file"]);
    assert_eq!(
        out.ok_stdout(),
        "iter:task_file\n    struct task_struct * task\n    u32 fd\n    struct file * file\n"
    );
}

#[test]
fn bad_iterator_scripts_get_diagnostics() {
    if skip_unless_root("bad_iterator_scripts_get_diagnostics") {
        return;
    }
    let cases: &[(&str, &[&str])] = &[
        (
            "iter:task_flie { }",
            &[
                "sonde::probe::unknown_iterator",
                "did you mean `task_file`?",
            ],
        ),
        (
            "iter:task* { }",
            &["sonde::probe::bad_attach_point", "do not support wildcards"],
        ),
        (
            "iter:task { } interval:s:1 { exit(); }",
            &["sonde::probe::iter_not_alone", "cannot be mixed"],
        ),
        (
            "iter:task { } iter:task_vma { }",
            &["sonde::probe::iter_not_alone", "only one iterator"],
        ),
        (
            "iter:task { printf(\"%o\\n\", ctx.task.pid); }",
            &["sonde::sema::format_string", "`%o`"],
        ),
        (
            "iter:task { printf(\"%s\\n\", ctx.task.pid); }",
            &["sonde::sema::arg_type"],
        ),
        (
            "iter:task { printf(\"%d\\n\", ctx.tsk); }",
            &["sonde::sema::unknown_field", "did you mean `ctx.task`?"],
        ),
        (
            "input { printf(\"%d\\n\", ctx); }",
            &[
                "sonde::sema::builtin_unavailable",
                "input and replay probes have none",
            ],
        ),
        (
            "tracepoint:sched:sched_switch { printf(\"%s\\n\", path(0)); }",
            &["sonde::sema::function_unavailable"],
        ),
    ];
    for (script, wants) in cases {
        for check in [true, false] {
            let args: &[&str] = if check {
                &["--check", "-e", script]
            } else {
                &["-e", script]
            };
            let out = run_sonde(args);
            assert_eq!(out.code, Some(1), "{script}: {}", out.stderr);
            assert!(!out.stderr.contains("panicked"), "{script}: {}", out.stderr);
            assert!(out.stdout.is_empty(), "{script}: {}", out.stdout);
            for w in *wants {
                assert!(out.stderr.contains(w), "{script}: {w}\n{}", out.stderr);
            }
        }
    }
    // An iterator's text is not recorded: refused before anything runs, nothing written.
    let rec = std::env::temp_dir().join(format!("sonde-iter-{}.rec", std::process::id()));
    let out = run_sonde(&[
        "record",
        "-o",
        rec.to_str().unwrap(),
        "-e",
        "iter:task { printf(\"%d\\n\", ctx.task.pid); }",
    ]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(out.stderr.contains("sonde::record::iter"), "{}", out.stderr);
    assert!(!rec.exists());
}
