//! What a plain `input` probe reads (issue 30, items 10 and 15): the script's file arguments,
//! in order, as awk reads its operands (README's `sonde -F, -e 'input ...' access.csv` as
//! written), standard input when there are none or for `-`; and a line is one record however
//! long: past 16 MiB the probes see its first 16 MiB, and a warning says so.

mod common;

use common::bytes::{Input, sonde_raw, sonde_with_stdin, text, write_file};
use common::{TempDir, repo_root};

/// README's example of an `input` script reading a file argument, as written there.
fn readme_example() -> String {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    readme
        .lines()
        .find(|l| l.starts_with("sonde -F, -e 'input") && l.ends_with("access.csv"))
        .expect("README shows `sonde -F, -e 'input ...' access.csv`")
        .to_string()
}

#[test]
fn the_readme_example_reads_its_file_argument() {
    let line = readme_example();
    let prog = line
        .split_once("-e '")
        .and_then(|(_, rest)| rest.rsplit_once("' "))
        .map(|(p, _)| p)
        .unwrap();
    let dir = TempDir::new("input-readme");
    let csv = write_file(
        &dir,
        "access.csv",
        b"1,a,GET,/,100\n2,b,POST,/x,7\n3,c,GET,/y,23\n",
    );
    // Standard input is empty: before, the file became `$1` and nothing was read.
    let out = sonde_raw(&["-F,", "-e", prog, csv.to_str().unwrap()], Input::Null);
    assert_eq!(text(out.ok(&line)), "\n\n@bytes: 123\n");
}

#[test]
fn file_arguments_are_read_in_order_and_dash_is_stdin() {
    let dir = TempDir::new("input-args");
    let a = write_file(&dir, "a.txt", b"a1\na2");
    let b = write_file(&dir, "b.txt", b"b1\n");
    let prog = r#"input { printf("%d %s %s\n", nr, line, $1); }"#;
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let out = sonde_with_stdin(&["-q", "-e", prog, a, "-", b], b"s1\n");
    // `$1` is still the first argument; a file without a final newline ends its last line.
    assert_eq!(
        text(out.ok("a - b")),
        format!("1 a1 {a}\n2 a2 {a}\n3 s1 {a}\n4 b1 {a}\n\n\n")
    );
    // `sonde repl` runs its `input` entries with the session's parameters: they stay
    // parameters (its hidden `--input-stdin`).
    let out = sonde_with_stdin(&["-q", "--input-stdin", "-e", prog, "GET"], b"s1\n");
    assert_eq!(text(out.ok("--input-stdin")), "1 s1 GET\n\n\n");
    // A missing file is refused before anything runs.
    let out = sonde_with_stdin(
        &[
            "-e",
            "BEGIN { printf(\"begin\\n\"); } input { @n = count(); }",
            "/no/such/file",
        ],
        b"",
    );
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("cannot read input file /no/such/file"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn a_line_past_16_mib_is_one_record_with_a_warning() {
    let mut data = vec![b'x'; (16 << 20) + 1000];
    data.extend_from_slice(b" tail\nshort line\n");
    // Aggregation only (read on worker threads) and printf (read in order).
    for prog in [
        "input { @n = count(); }",
        r#"input { printf("%d %d\n", nr, nf); }"#,
    ] {
        let out = sonde_with_stdin(&["-q", "-e", prog], &data);
        let stdout = text(out.ok(prog));
        if prog.contains("count") {
            assert_eq!(stdout, "\n\n@n: 2\n");
        } else {
            // The cut record holds the first 16 MiB: one field, " tail" is past it.
            assert_eq!(stdout, "1 1\n2 2\n\n\n");
        }
        assert_eq!(
            out.stderr.matches("longer than 16 MiB").count(),
            1,
            "{prog}: {}",
            out.stderr
        );
    }
}
