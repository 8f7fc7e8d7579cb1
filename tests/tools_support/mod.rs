//! Helpers of the tool tests that need `tests/targets/tools_work.c`: building it with frame
//! pointers and without optimisation (so its functions appear in user stacks and keep their
//! calls), and reading a flame graph SVG as XML.

#![allow(dead_code)]

pub mod bpftrace;
pub mod libbpf;

use crate::common::{ATTACH_TIMEOUT, Target, TempDir, Tracer, compile_target, settle};
use std::path::PathBuf;
use std::time::Duration;

/// Compiles `tests/targets/tools_work.c` into `dir` with `-O0 -fno-omit-frame-pointer`.
pub fn build_work(dir: &TempDir) -> PathBuf {
    compile_target(dir, "tools_work", &["-O0", "-g", "-fno-omit-frame-pointer"])
}

/// Parses `svg` as XML (panicking on malformed XML) and returns the texts of its `<title>`
/// elements: a flame graph has one per frame, `name (N samples, P%)`.
pub fn svg_titles(svg: &str) -> Vec<String> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(svg);
    let mut titles = Vec::new();
    let mut in_title = false;
    let mut saw_svg = false;
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) => {
                saw_svg |= e.name().as_ref() == b"svg";
                in_title = e.name().as_ref() == b"title";
            }
            Ok(Event::End(_)) => in_title = false,
            Ok(Event::Text(t)) if in_title => {
                let raw = String::from_utf8_lossy(t.as_ref()).into_owned();
                titles.push(raw);
            }
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!(
                "the SVG is not well-formed XML at {}: {e}",
                reader.buffer_position()
            ),
        }
    }
    assert!(saw_svg, "no <svg> element");
    titles
}

/// Runs `sonde tool TOOL ARGS FLAGS` with each of `flag_sets` (`PID` replaced by the target's
/// pid) at once on `target`: all attached, the target let go and waited for, then all
/// stopped. Returns their standard outputs, in order.
pub fn tools_together(
    tool_args: &[&str],
    flag_sets: &[&[&str]],
    target: &mut Target,
) -> Vec<String> {
    let pid = target.pid();
    let mut tracers: Vec<Tracer> = flag_sets
        .iter()
        .map(|flags| {
            let mut args = vec!["tool"];
            args.extend_from_slice(tool_args);
            args.extend(
                flags
                    .iter()
                    .map(|f| if *f == "PID" { pid.as_str() } else { f }),
            );
            Tracer::start(&args)
        })
        .collect();
    let attached: Vec<bool> = tracers
        .iter_mut()
        .map(|t| t.wait_attached(ATTACH_TIMEOUT))
        .collect();
    settle();
    target.go();
    let code = target.wait(Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(200));
    let mut outs = Vec::new();
    for (mut t, ok) in tracers.into_iter().zip(attached) {
        t.interrupt();
        let out = t.finish(Duration::from_secs(20));
        assert!(ok && code == Some(0), "{}", out.stderr);
        outs.push(out.ok_stdout().to_string());
    }
    outs
}
