//! The script's life: compiling, callbacks and what they print, verdicts, sandbox, limits
//! and diagnostics.

use super::*;
use crate::output::NoResolver;
use sonde_compiler::value::AggValue;
use sonde_lang::span::Span;
use sonde_lang::types::{AggKind, Type};
use std::time::{Duration, Instant};

fn post(src: &str) -> Post {
    Post::compile(src, PostOptions::default()).unwrap_or_else(|d| panic!("{d:?}"))
}

fn err(src: &str) -> Diagnostic {
    Post::compile(src, PostOptions::default()).expect_err("should not compile")
}

/// The text of the chunks (maps as `<map NAME: N entries>`).
fn shown(chunks: Vec<Chunk>) -> String {
    chunks
        .into_iter()
        .map(|c| match c {
            Chunk::Text(t) => t,
            Chunk::Map(d, _) => format!("<map {}: {} entries>", d.name, d.entries.len()),
            Chunk::ExitMaps(d) => format!("<exit maps: {}>", d.len()),
        })
        .collect()
}

fn count_map(name: &str, entries: &[(&str, u64)]) -> Printed {
    Printed::new(
        MapDump {
            name: name.into(),
            value_type: Type::Agg(AggKind::Count),
            entries: entries
                .iter()
                .map(|(k, n)| {
                    (
                        Value::Str(k.as_bytes().to_vec()),
                        Value::Agg(AggValue::Count(*n)),
                    )
                })
                .collect(),
        },
        PrintOpts::default(),
        true,
    )
}

#[test]
fn top_level_statements_run_once_and_print() {
    let mut p = post("print(\"hello\");\nfn on_end(maps) { print(\"bye\"); }");
    assert_eq!(shown(p.take_output()), "hello\n");
    p.on_maps(true, vec![], &NoResolver).unwrap();
    assert_eq!(shown(p.take_output()), "bye\n");
    assert!(p.has_on_end() && !p.has_on_event() && !p.has_on_interval());
}

#[test]
fn on_event_results_decide_what_prints() {
    let mut p = post(
        r#"fn on_event(e) {
            if e.args[0] == 1 { return true; }
            if e.args[0] == 2 { return `two: ${e.text}`; }
            if e.args[0] == 3 { print(e.kind + " " + e.format); }
        }"#,
    );
    let ev = |p: &mut Post, n: i64| {
        let v = p
            .on_event(
                "printf",
                b"n\n",
                &[Value::Int(n)],
                Some("%d\\n"),
                &NoResolver,
            )
            .unwrap();
        (v, shown(p.take_output()))
    };
    assert_eq!(ev(&mut p, 1), (Verdict::Default, String::new()));
    assert_eq!(
        ev(&mut p, 2),
        (Verdict::Replace("two: n\n".into()), String::new())
    );
    assert_eq!(ev(&mut p, 3), (Verdict::Drop, "printf %d\\n\n".into()));
    assert_eq!(ev(&mut p, 4), (Verdict::Drop, String::new()));
}

#[test]
fn this_keeps_state_between_callbacks() {
    let mut p = post(
        "fn on_event(e) { this.n = (this.n ?? 0) + 1; }\nfn on_end(maps) { print(`events: ${this.n}`); }",
    );
    for _ in 0..3 {
        p.on_event("printf", b"x\n", &[], None, &NoResolver)
            .unwrap();
    }
    p.on_maps(true, vec![], &NoResolver).unwrap();
    assert_eq!(shown(p.take_output()), "events: 3\n");
}

#[test]
fn maps_arrive_by_name_and_print_through_sonde() {
    let mut p = post(
        r#"fn on_interval(maps) {
            print(maps.keys());
            print_map(maps["@c"]);
            print_map(top(maps["@c"], 1));
            print_map(maps["@c"].filter(|r| r.key != "b"));
            print_map(maps["@c"][0]);
        }"#,
    );
    let table = vec![count_map("c", &[("a", 2), ("b", 5), ("c", 1)])];
    p.on_maps(false, table, &NoResolver).unwrap();
    let out = p.take_output();
    assert_eq!(
        shown(out.clone()),
        "[\"@c\"]\n<map c: 3 entries><map c: 1 entries><map c: 2 entries><map c: 1 entries>"
    );
    // The rows kept are the ones picked, in print order (ascending values).
    let Chunk::Map(top, _) = &out[2] else {
        panic!()
    };
    assert_eq!(top.entries[0].0, Value::Str(b"b".to_vec()));
    let Chunk::Map(first, _) = &out[4] else {
        panic!()
    };
    assert_eq!(first.entries[0].0, Value::Str(b"c".to_vec()));
}

#[test]
fn print_map_refuses_what_is_not_a_map() {
    let mut p = post("fn on_end(maps) { print_map([1, 2]); }");
    let d = p.on_maps(true, vec![], &NoResolver).unwrap_err();
    assert_eq!(d.code, "sonde::post::runtime");
    assert!(
        d.message.contains("print_map: 1 is not a row"),
        "{}",
        d.message
    );
    assert_eq!(d.span, Span::new(18, 27));
}

#[test]
fn syntax_errors_point_at_their_line_and_column() {
    let src = "fn on_end(maps) {\n    let x = ;\n}\n";
    let d = err(src);
    assert_eq!(d.code, "sonde::post::syntax");
    assert_eq!(&src[d.span.start..d.span.end], ";");
    assert!(
        d.message
            .starts_with("syntax error in the post-processing script"),
        "{}",
        d.message
    );
}

#[test]
fn runtime_errors_point_at_the_failing_call() {
    let src = "fn helper(m) {\n    m.nope()\n}\nfn on_end(maps) {\n    helper(maps);\n}\n";
    let mut p = post(src);
    let d = p.on_maps(true, vec![], &NoResolver).unwrap_err();
    assert_eq!(d.code, "sonde::post::runtime");
    assert!(d.message.contains("in on_end"), "{}", d.message);
    assert!(
        d.message.contains("Function not found: nope"),
        "{}",
        d.message
    );
    assert_eq!(&src[d.span.start..d.span.end], "nope");
    assert_eq!(d.secondary.len(), 1);
    let (s, label) = &d.secondary[0];
    assert_eq!(&src[s.start..s.end], "helper");
    assert_eq!(label, "in this call of helper");
}

#[test]
fn a_runaway_script_is_stopped_by_the_operation_limit() {
    let src = "fn on_end(maps) {\n    loop { }\n}\n";
    let mut p = post(src);
    let start = Instant::now();
    let d = p.on_maps(true, vec![], &NoResolver).unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(d.code, "sonde::post::too_long");
    assert_eq!(&src[d.span.start..d.span.end], "on_end");
    // Top-level statements too.
    assert_eq!(
        err("while true {}\nfn on_end(m) {}").code,
        "sonde::post::too_long"
    );
}

#[test]
fn data_sizes_are_bounded() {
    let mut p = post("fn on_end(maps) { let s = \"xxxxxxxx\"; loop { s += s; } }");
    let d = p.on_maps(true, vec![], &NoResolver).unwrap_err();
    assert_eq!(d.code, "sonde::post::too_large");
    let mut p = post("fn f(n) { f(n + 1) }\nfn on_end(maps) { f(0) }");
    assert_eq!(
        p.on_maps(true, vec![], &NoResolver).unwrap_err().code,
        "sonde::post::too_large"
    );
}

#[test]
fn no_files_or_processes_without_unsafe() {
    let mut p = post("fn on_end(maps) { print(read_file(\"/etc/hostname\")); }");
    let d = p.on_maps(true, vec![], &NoResolver).unwrap_err();
    assert!(
        d.message.contains("read_file needs --unsafe"),
        "{}",
        d.message
    );
    let mut p = post("fn on_end(maps) { system(\"true\"); }");
    assert!(
        p.on_maps(true, vec![], &NoResolver)
            .unwrap_err()
            .message
            .contains("system needs --unsafe")
    );
    assert!(
        err("import \"x\" as x;\nfn on_end(m) {}")
            .message
            .contains("Module not found")
    );
    let mut p = Post::compile(
        "fn on_end(maps) { print(system(\"echo hi\")); }",
        PostOptions {
            unsafe_allowed: true,
        },
    )
    .unwrap();
    p.on_maps(true, vec![], &NoResolver).unwrap();
    assert_eq!(shown(p.take_output()), "hi\n\n");
}

#[test]
fn callbacks_are_checked() {
    let d = err("fn on_end() {}");
    assert_eq!(d.code, "sonde::post::callback");
    assert_eq!(d.span, Span::new(3, 9));
    let d = err("fn on_evnt(e) {}");
    assert_eq!(d.code, "sonde::post::no_callback");
    assert!(
        d.help
            .as_deref()
            .unwrap_or("")
            .starts_with("did you mean on_event?")
    );
    let d = err("fn on_exit(maps) {}");
    assert!(
        d.help
            .as_deref()
            .unwrap_or("")
            .starts_with("define on_event(e)")
    );
}

#[test]
fn sonde_functions_check_sizes_before_allocating() {
    // A width of 100 GB is refused before anything is allocated (it used to abort).
    for f in ["lpad", "rpad"] {
        let mut p = post(&format!(
            "fn on_end(maps) {{ print({f}(\"x\", 100000000000)); }}"
        ));
        let d = p.on_maps(true, vec![], &NoResolver).unwrap_err();
        assert_eq!(d.code, "sonde::post::too_large", "{f}");
        assert!(
            d.message
                .ends_with(&format!("it built a string longer than {MAX_STRING} bytes")),
            "{}",
            d.message
        );
    }
    // A table wider than a call may print is refused before it is built.
    let mut p =
        post("fn on_end(maps) { table([[lpad(1, 10000000)], [2], [3], [4], [5], [6], [7]]); }");
    let d = p.on_maps(true, vec![], &NoResolver).unwrap_err();
    assert_eq!(d.code, "sonde::post::too_large");
    assert!(d.message.contains("bytes in one call"), "{}", d.message);
}

#[test]
fn what_a_call_prints_is_bounded() {
    // Printing in a loop stops at the output limit (it used to grow until memory ran out).
    let mut p = post("fn on_end(maps) { let s = lpad(\"x\", 1000000); loop { print(s); } }");
    let d = p.on_maps(true, vec![], &NoResolver).unwrap_err();
    assert_eq!(d.code, "sonde::post::too_large");
    assert!(
        d.message.ends_with(&format!(
            "it printed more than {MAX_OUTPUT} bytes in one call"
        )),
        "{}",
        d.message
    );
    let kept: usize = p
        .take_output()
        .iter()
        .map(|c| match c {
            Chunk::Text(t) => t.len(),
            _ => 0,
        })
        .sum();
    assert!(kept <= MAX_OUTPUT, "{kept}");
    // The budget is per call: the next call prints again, and a last print past the limit
    // fails the call too.
    let mut p = post(&format!(
        "fn on_end(maps) {{ let s = lpad(\"x\", 8000000); for i in 0..{} {{ print(s); }} }}",
        MAX_OUTPUT / 8_000_000 + 1
    ));
    assert_eq!(
        p.on_maps(true, vec![], &NoResolver).unwrap_err().code,
        "sonde::post::too_large"
    );
}

#[test]
fn a_call_is_bounded_in_time() {
    // Each push checks the array's size: a loop of pushes stays under the operation limit
    // for hours; the clock stops it.
    let src = "fn on_end(maps) {\n    let a = [];\n    loop { a.push(1); }\n}\n";
    let mut p = post(src);
    p.set_time_limit(Duration::from_millis(300));
    let start = Instant::now();
    let d = p.on_maps(true, vec![], &NoResolver).unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(d.code, "sonde::post::too_long");
    assert!(
        d.message.ends_with("it ran longer than 10 s"),
        "{}",
        d.message
    );
    // The next call has its own time.
    let mut p = post("fn on_event(e) { let n = 0; for i in 0..1000 { n += i; } }");
    p.set_time_limit(Duration::from_secs(5));
    for _ in 0..3 {
        p.on_event("printf", b"x\n", &[], None, &NoResolver)
            .unwrap();
    }
}

#[test]
fn eval_is_not_available() {
    // `eval` of itself overflowed the stack (SIGABRT) before any limit was reached.
    let d = err("fn on_end(maps) { let s = \"eval(s)\"; eval(s); }");
    assert_eq!(d.code, "sonde::post::syntax");
    assert!(d.message.contains("'eval' is disabled"), "{}", d.message);
}
