//! Helpers of the tool tests that need `tests/targets/tools_work.c`: building it with frame
//! pointers and without optimisation (so its functions appear in user stacks and keep their
//! calls), and reading a flame graph SVG as XML.

#![allow(dead_code)]

pub mod bpftrace;
pub mod libbpf;

use crate::common::{TempDir, compile_target};
use std::path::PathBuf;

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
