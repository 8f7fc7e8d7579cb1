//! uprobe and USDT attach points as bpftrace 0.26 resolves them, for real on
//! `tests/targets/attach_main.c` and its library `libattach.c` (+ `libattach_sem.c`), built
//! here with `-O0` (USDT probes after the prologue: a function's entry uprobe fires before
//! the USDT probes in it, so the order of the events is known):
//!
//! - wildcard binaries: `uprobe:*:FUNC`, `usdt:*:PROVIDER:NAME` over the objects a process
//!   maps (`-p PID`, named `/proc/PID/root/...` as bpftrace names them), and globs
//!   (`usdt:DIR/lib*.so:*`) without a process;
//! - the short forms under `-p`: `uprobe:FUNC`, `uretprobe:FUNC`, `usdt::PROVIDER:NAME`,
//!   `usdt:NAME`, and an empty provider (`usdt:BIN::NAME`);
//! - USDT probes of a shared library, constant arguments (`-1@$-16 2@$-3600`), a quoted
//!   probe name, a semaphore in a library raised for a process started before sonde;
//! - a process in its own mount namespace, whose binary exists only there (a tmpfs);
//! - `-l` of all of these.
//!
//! Every traced run filters on its target's pid (`-p`, or a predicate).

mod common;

use common::{
    Target, TempDir, Tracer, run_sonde, settle, skip_unless_root, trace_target, with_exit_maps,
};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The built program and library, in a directory of their own.
struct Built {
    dir: TempDir,
    bin: PathBuf,
    lib: PathBuf,
}

impl Built {
    /// The canonical directory (what `/proc/PID/maps` shows).
    fn dir(&self) -> String {
        std::fs::canonicalize(self.dir.path())
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }
}

fn gcc(args: &[&str]) {
    let out = Command::new("gcc").args(args).output().expect("gcc runs");
    assert!(
        out.status.success(),
        "gcc {args:?} failed (.ci/test installs systemtap-sdt-dev for <sys/sdt.h>):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Builds `libattach.so` and `attach_main` (rpath `$ORIGIN`) into a fresh directory.
fn build(tag: &str) -> Built {
    let dir = TempDir::new(tag);
    let src = common::repo_root().join("tests/targets");
    let s = |n: &str| src.join(n).to_string_lossy().into_owned();
    let lib = dir.path().join("libattach.so");
    let bin = dir.path().join("attach_main");
    let flags = ["-O0", "-fno-omit-frame-pointer"];
    let lib_s = lib.to_str().unwrap();
    gcc(&[
        flags[0],
        flags[1],
        "-shared",
        "-fPIC",
        "-o",
        lib_s,
        &s("libattach.c"),
        &s("libattach_sem.c"),
    ]);
    let d = dir.path().to_str().unwrap();
    gcc(&[
        flags[0],
        flags[1],
        "-o",
        bin.to_str().unwrap(),
        &s("attach_main.c"),
        "-L",
        d,
        "-lattach",
        "-Wl,-rpath,$ORIGIN",
    ]);
    Built { dir, bin, lib }
}

/// Waits until process `pid` runs `exe` (it may still be exec'ing through a shell).
fn wait_exec(pid: &str, exe: &str) {
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
        if maps.contains(exe) && maps.contains("libattach.so") {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("process {pid} never ran {exe}");
}

/// The events of one iteration `i` of the target, for probes named under `bin` and `lib`.
fn iteration(bin: &str, lib: &str, i: i64) -> String {
    format!(
        "uprobe:{bin}:attach_main_tick {i}\n\
         usdt:{bin}:attachmain:tick {i}\n\
         ret {i}\n\
         uprobe:{lib}:attach_lib_add {i}\n\
         usdt:{lib}:attachlib:add {i} {}\n\
         usdt:{lib}:attachlib:consts -16 61936 -579005069656919568\n",
        2 * i
    )
}

/// `-p PID`: `uprobe:*:F` and `usdt::P:N` over the objects of the process, the short forms,
/// and a library named by path, all named `/proc/PID/root/...`.
#[test]
fn probes_of_a_process_by_wildcard_and_short_forms() {
    if skip_unless_root("probes_of_a_process_by_wildcard_and_short_forms") {
        return;
    }
    let b = build("ap-pid");
    let mut target = Target::spawn(&b.bin, &["wait", "2"]);
    let pid = target.pid();
    wait_exec(&pid, "attach_main");
    let prog = format!(
        r#"uprobe:*:attach_main_tick, uprobe:*:attach_lib_add {{ printf("%s %d\n", probe, arg0); }}
usdt:tick {{ printf("%s %d\n", probe, arg0); }}
uretprobe:attach_main_tick {{ printf("ret %d\n", retval); }}
usdt::attachlib:add {{ printf("%s %d %d\n", probe, arg0, arg1); }}
usdt:{}::consts {{ printf("%s %d %d %lld\n", probe, arg0, arg1, arg2); }}"#,
        b.lib.display()
    );
    let out = trace_target(&["-p", &pid, "-e", &prog], &mut target);
    let root = format!("/proc/{pid}/root{}", b.dir());
    let (bin, lib) = (
        format!("{root}/attach_main"),
        format!("{root}/libattach.so"),
    );
    let body: String = (0..2).map(|i| iteration(&bin, &lib, i)).collect();
    assert_eq!(out.ok_stdout(), with_exit_maps(&body, ""));
    assert!(out.stderr.contains("Attached 6 probes"), "{}", out.stderr);
}

/// `-l` with `-p PID`: the probes of every object the process maps, as bpftrace lists them.
#[test]
fn listing_the_probes_of_a_process() {
    let b = build("ap-list-pid");
    let target = Target::spawn(&b.bin, &["wait", "1"]);
    let pid = target.pid();
    wait_exec(&pid, "attach_main");
    let root = format!("/proc/{pid}/root{}", b.dir());
    let ours = |out: &str| -> Vec<String> {
        // Other objects (libc on some distributions) may have USDT probes too.
        out.lines()
            .inspect(|l| assert!(l.contains(&format!(":/proc/{pid}/root/")), "{l}"))
            .filter(|l| l.contains(&root))
            .map(str::to_string)
            .collect()
    };
    let out = run_sonde(&["-l", "usdt:*", "-p", &pid]);
    assert_eq!(
        ours(out.ok_stdout()),
        [
            format!("usdt:{root}/attach_main:attachmain:\"quoted\""),
            format!("usdt:{root}/attach_main:attachmain:tick"),
            format!("usdt:{root}/libattach.so:attachlib:add"),
            format!("usdt:{root}/libattach.so:attachlib:consts"),
            format!("usdt:{root}/libattach.so:attachlib:guarded"),
        ]
    );
    let out = run_sonde(&["-l", "usdt:*:attachlib:*d*", "-p", &pid]);
    assert_eq!(
        out.ok_stdout(),
        format!(
            "usdt:{root}/libattach.so:attachlib:add\nusdt:{root}/libattach.so:attachlib:guarded\n"
        )
    );
    let out = run_sonde(&["-l", "uprobe:*:attach_*", "-p", &pid]);
    assert_eq!(
        out.ok_stdout(),
        format!(
            "uprobe:{root}/attach_main:attach_main_tick\n\
             uprobe:{root}/libattach.so:attach_lib_add\n\
             uprobe:{root}/libattach.so:attach_lib_guarded\n\
             uprobe:{root}/libattach.so:attach_lib_guarded_hits\n"
        )
    );
    // The two-part form has any target; a named library is listed by its own path.
    let out = run_sonde(&["-l", "uprobe:attach_lib_add", "-p", &pid]);
    assert_eq!(
        out.ok_stdout(),
        format!("uprobe:{root}/libattach.so:attach_lib_add\n")
    );
    let lib = b.lib.to_str().unwrap();
    let out = run_sonde(&["-l", &format!("uprobe:{lib}:*_add"), "-p", &pid]);
    assert_eq!(out.ok_stdout(), format!("uprobe:{lib}:attach_lib_add\n"));
}

/// Binaries with wildcards and no process: globs, named by the paths they match; a quoted
/// probe name; constants; the library's semaphore raised for a process started before.
#[test]
fn wildcard_binaries_without_a_process() {
    let b = build("ap-glob");
    let d = b.dir.path().to_str().unwrap().to_string();
    let out = run_sonde(&["-l", &format!("uprobe:{d}/*:attach_*")]);
    assert_eq!(
        out.ok_stdout(),
        format!(
            "uprobe:{d}/attach_main:attach_main_tick\n\
             uprobe:{d}/libattach.so:attach_lib_add\n\
             uprobe:{d}/libattach.so:attach_lib_guarded\n\
             uprobe:{d}/libattach.so:attach_lib_guarded_hits\n"
        )
    );
    let out = run_sonde(&["-l", &format!("usdt:{d}/lib*.so:*")]);
    assert_eq!(
        out.ok_stdout(),
        format!(
            "usdt:{d}/libattach.so:attachlib:add\n\
             usdt:{d}/libattach.so:attachlib:consts\n\
             usdt:{d}/libattach.so:attachlib:guarded\n"
        )
    );
    if skip_unless_root("wildcard_binaries_without_a_process") {
        return;
    }
    let mut target = Target::spawn(&b.bin, &["wait", "3"]);
    let pid = target.pid();
    let prog = format!(
        r#"usdt:{d}/attach*:attachmain:"\"quoted\"", usdt:{d}/lib*.so:attachlib:guarded /pid == {pid}/ {{ printf("%s %d\n", probe, arg0); }}
uprobe:{d}/*:attach_lib_a* /pid == {pid}/ {{ printf("%s %d %d\n", probe, arg0, arg1); }}"#
    );
    let out = trace_target(&["--usdt-file-activation", "-e", &prog], &mut target);
    let body: String = (0..3)
        .map(|i| {
            format!(
                "usdt:{d}/attach_main:attachmain:\"quoted\" {i}\n\
                 uprobe:{d}/libattach.so:attach_lib_add {i} {}\n\
                 usdt:{d}/libattach.so:attachlib:guarded {i}\n",
                2 * i
            )
        })
        .collect();
    assert_eq!(out.ok_stdout(), with_exit_maps(&body, ""));
    assert!(out.stderr.contains("Attached 3 probes"), "{}", out.stderr);
}

/// A process in its own mount namespace, whose program and library exist only there (on a
/// tmpfs mounted in it): `-l -p`, and attach points by its own paths, resolved through
/// `/proc/PID/root`.
#[test]
fn process_in_another_mount_namespace() {
    if skip_unless_root("process_in_another_mount_namespace") {
        return;
    }
    let b = build("ap-mntns");
    let inside = b.dir.path().join("private");
    std::fs::create_dir(&inside).unwrap();
    let inside_s = inside.to_str().unwrap().to_string();
    let script = format!(
        "mount -t tmpfs sonde-test {inside_s} && cp {} {} {inside_s}/ && exec {inside_s}/attach_main wait 2",
        b.bin.display(),
        b.lib.display()
    );
    let mut target = Target::spawn(
        Path::new("unshare"),
        &["-m", "--propagation", "private", "sh", "-c", &script],
    );
    let pid = target.pid();
    wait_exec(&pid, &format!("{inside_s}/attach_main"));
    assert!(
        !inside.join("attach_main").exists(),
        "the binary must exist only in the target's mount namespace"
    );
    let root = format!("/proc/{pid}/root{inside_s}");
    let out = run_sonde(&["-l", "uprobe:*:attach_*_*", "-p", &pid]);
    assert_eq!(
        out.ok_stdout(),
        format!(
            "uprobe:{root}/attach_main:attach_main_tick\n\
             uprobe:{root}/libattach.so:attach_lib_add\n\
             uprobe:{root}/libattach.so:attach_lib_guarded\n\
             uprobe:{root}/libattach.so:attach_lib_guarded_hits\n"
        )
    );
    let prog = format!(
        r#"uprobe:{inside_s}/attach_main:attach_main_tick {{ printf("%s %d\n", probe, arg0); }}
usdt:{inside_s}/libattach.so:attachlib:add {{ printf("%s %d %d\n", probe, arg0, arg1); }}"#
    );
    let mut tracer = Tracer::start(&["-p", &pid, "-e", &prog]);
    assert!(
        tracer.wait_attached(Duration::from_secs(20)),
        "sonde did not attach"
    );
    settle();
    target.go();
    assert_eq!(target.wait(Duration::from_secs(10)), Some(0));
    // Sonde exits with the process it traces (-p).
    let out = tracer.finish(Duration::from_secs(10));
    let body: String = (0..2)
        .map(|i| {
            format!(
                "uprobe:{root}/attach_main:attach_main_tick {i}\n\
                 usdt:{root}/libattach.so:attachlib:add {i} {}\n",
                2 * i
            )
        })
        .collect();
    assert_eq!(out.ok_stdout(), with_exit_maps(&body, ""));
}

/// Attach points that need what is missing, checked without running anything.
#[test]
fn bad_user_attach_points_are_diagnosed() {
    let check = |prog: &str, extra: &[&str]| {
        let mut args = vec!["--check", "-e", prog];
        args.extend_from_slice(extra);
        let out = run_sonde(&args);
        assert_eq!(out.code, Some(1), "{prog}: {}", out.stderr);
        out.stderr
    };
    let e = check("usdt::attachlib:add { }", &[]);
    assert!(e.contains("sonde::probe::bad_attach_point"), "{e}");
    assert!(
        e.contains("a usdt probe without a binary needs a process (-p PID)"),
        "{e}"
    );
    let e = check("uprobe:attach_main_tick { }", &[]);
    assert!(e.contains("sonde::probe::bad_attach_point"), "{e}");
    let e = check("uprobe:/no/such/dir*/x:f { }", &[]);
    assert!(e.contains("sonde::probe::no_match"), "{e}");
    assert!(e.contains("`/no/such/dir*/x` matches no binaries"), "{e}");
    let b = build("ap-bad");
    let e = check(
        &format!(
            "uprobe:{}/*:no_such_function* {{ }}",
            b.dir.path().display()
        ),
        &[],
    );
    assert!(
        e.contains("`no_such_function*` matches no functions in the 2 matching binaries"),
        "{e}"
    );
    let e = check(
        &format!("uprobe:{}/*:0x1000 {{ }}", b.dir.path().display()),
        &[],
    );
    assert!(
        e.contains("an address cannot be combined with a wildcard binary"),
        "{e}"
    );
}
