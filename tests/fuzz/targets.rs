//! The three targets: scripts (parser, checker, compiler), recordings (reader and replay
//! printer) and ELF files (symbol tables, USDT notes, DWARF).

use crate::common::repo_root;
use crate::{Outcome, Target};
use sonde_compiler::catalog::SondeCatalog;
use sonde_compiler::compile::{Engine, compile_for, engine_of};
use sonde_compiler::options::CompileOptions;
use sonde_drivers::record::{Entry, Header, RecordWriter};
use sonde_lang::diag::Diagnostic;
use sonde_lang::kernel::NoKernel;
use sonde_lang::sema::{CheckOptions, check};
use std::path::{Path, PathBuf};

/// Tokens of the language, inserted into scripts.
const SCRIPT_TOKENS: &[&str] = &[
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ";",
    ",",
    "\"",
    "/*",
    "*/",
    "//",
    "\n",
    " ",
    "$x",
    "$1",
    "$#",
    "@",
    "@m",
    "@m[1, \"a\"]",
    "=",
    "==",
    "+",
    "-",
    "*",
    "/",
    "%",
    "<<",
    ">>",
    "&&",
    "||",
    "!",
    "~",
    "?",
    ":",
    "..",
    "->",
    ".",
    ".0",
    "++",
    "--",
    "+=",
    "if",
    "else",
    "while",
    "for",
    "unroll(",
    "let",
    "macro",
    "return",
    "break",
    "continue",
    "import",
    "config",
    "#define X ",
    "#if ",
    "#ifdef X\n",
    "#endif\n",
    "#include <linux/sched.h>\n",
    "struct",
    "union",
    "enum",
    "(uint8)",
    "(int64)",
    "(struct task_struct *)",
    "sizeof(",
    "typeof(",
    "offsetof(",
    "0",
    "1",
    "-1",
    "0x7fffffffffffffff",
    "18446744073709551615",
    "99999999999999999999",
    "1e9",
    "'a'",
    "\"%d %s %x %-10s %llu\\n\"",
    "\\x",
    "\\",
    "str(",
    "buf(",
    "printf(",
    "print(",
    "count()",
    "sum(",
    "hist(",
    "lhist(",
    "stats(",
    "avg(",
    "min(",
    "max(",
    "tseries(",
    "kstack",
    "ustack",
    "comm",
    "pid",
    "tid",
    "nsecs",
    "elapsed",
    "arg0",
    "args",
    "retval",
    "exit()",
    "clear(",
    "delete(",
    "has_key(",
    "join(",
    "ksym(",
    "usym(",
    "cat(",
    "system(",
    "time(",
    "strftime(",
    "ntop(",
    "pton(",
    "errorf(",
    "assert(",
    "BEGIN",
    "END",
    "interval:s:1",
    "interval:ms:1",
    "profile:hz:99",
    "tracepoint:syscalls:sys_enter_read",
    "uprobe:/bin/true:main",
    "usdt:/bin/true:p:n",
    "kprobe:vfs_read",
    "input",
    "replay",
    "test:t",
    "bench:b",
    "iter:task",
    "watchpoint:0x1000:8:w",
    "\u{a0}",
    "\u{feff}",
    "é",
    "\u{201c}",
];

/// The scripts target: `examples/*.sd`, `stdlib/*.sd` and `tests/lang/*.bt` parsed,
/// checked (against a kernel that knows nothing, so that the outcome depends on the input
/// only) and compiled for their engine. Valid: parsed.
pub fn scripts() -> Target {
    let root = repo_root();
    let mut seeds = Vec::new();
    for (dir, ext) in [("examples", "sd"), ("stdlib", "sd"), ("tests/lang", "bt")] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == ext))
            .collect();
        files.sort();
        for f in files {
            let bytes = std::fs::read(&f).unwrap();
            // Only the scripts that parse: a seed is valid.
            if sonde_lang::syntax::parse(&String::from_utf8_lossy(&bytes)).is_ok() {
                seeds.push(bytes);
            }
        }
    }
    Target {
        name: "scripts",
        seeds,
        dictionary: SCRIPT_TOKENS,
        max_len: 16 << 10,
        run: run_script,
    }
}

/// A finding when a diagnostic is an internal error or points outside `text` (it could not
/// be shown).
fn diagnostics_ok(text: &str, diags: &[Diagnostic]) -> Result<(), String> {
    for d in diags {
        if d.code.ends_with("::internal") {
            return Err(format!("internal error {}: {}", d.code, d.message));
        }
        let s = d.span;
        if s.start > s.end
            || s.end > text.len()
            || !text.is_char_boundary(s.start)
            || !text.is_char_boundary(s.end)
        {
            return Err(format!(
                "diagnostic {} ({}) at {}..{} outside the {}-byte script",
                d.code,
                d.message,
                s.start,
                s.end,
                text.len()
            ));
        }
    }
    Ok(())
}

fn run_script(bytes: &[u8]) -> Outcome {
    let text = match sonde_lang::syntax::encoding::decode(bytes.to_vec()) {
        Ok(t) => t,
        Err((text, d)) => {
            diagnostics_ok(&text, &[d])?;
            return Ok(false);
        }
    };
    let program = match sonde_lang::syntax::parse(&text) {
        Ok(p) => p,
        Err(diags) => {
            diagnostics_ok(&text, &diags)?;
            return Ok(false);
        }
    };
    let (checked, diags) = check(&program, &SondeCatalog, &NoKernel, &CheckOptions::default());
    diagnostics_ok(&text, &diags)?;
    if diags.iter().any(Diagnostic::is_error) {
        return Ok(true);
    }
    let engine = match engine_of(&checked, None) {
        Ok(e) => e,
        Err(d) => {
            diagnostics_ok(&text, &[d])?;
            return Ok(true);
        }
    };
    let options = CompileOptions {
        ncpus: 2,
        ..CompileOptions::default()
    };
    if let Err(diags) = compile_for(&program, &checked, &NoKernel, &options, engine) {
        diagnostics_ok(&text, &diags)?;
    }
    if engine == Engine::Bpf {
        // The JIT's IR of the same script, where the engines share probes.
        let _ = compile_for(&program, &checked, &NoKernel, &options, Engine::Jit);
    }
    Ok(true)
}

/// The script of the recording seeds: every kind of event and map a replay prints.
const RECORDED: &str = r#"BEGIN {
  printf("%d %s %x %-10s|%c\n", 5, "abc", 255, "pad", 65);
  @h = hist(5); @l = lhist(3, 0, 10, 1); @c[comm, 3] = count(); @s = sum(3); @st = stats(4);
  @t[(1, "a")] = 2; @ks[kstack] = count(); @u[ustack] = count(); @y = ksym(0);
  print(@h); time("%H\n"); clear(@s); print((1, "x")); cat("/proc/self/comm");
  exit();
}
END { printf("end %d\n", 1); }
"#;

/// The recordings target: a recording of [`RECORDED`] written by this test with every kind
/// of entry, and the one `sonde record` writes of it (when root). Valid: read.
pub fn recordings() -> Target {
    let mut seeds = vec![handmade_recording()];
    if crate::common::is_root() {
        let dir = crate::common::TempDir::new("fuzz-rec");
        let file = dir.path().join("seed.rec");
        let out = crate::common::run_sonde(&[
            "record",
            "-q",
            "-o",
            file.to_str().unwrap(),
            "-e",
            RECORDED,
        ]);
        if out.code == Some(0)
            && let Ok(bytes) = std::fs::read(&file)
        {
            seeds.push(bytes);
        }
    }
    Target {
        name: "recordings",
        seeds,
        dictionary: &[],
        max_len: 64 << 10,
        run: run_recording,
    }
}

/// A recording of [`RECORDED`] compiled here, with entries of every kind.
fn handmade_recording() -> Vec<u8> {
    let program = sonde_lang::syntax::parse(RECORDED).expect("parses");
    let (checked, diags) = check(&program, &SondeCatalog, &NoKernel, &CheckOptions::default());
    assert!(!diags.iter().any(Diagnostic::is_error), "{diags:?}");
    let compiled = compile_for(
        &program,
        &checked,
        &NoKernel,
        &CompileOptions::default(),
        Engine::Bpf,
    )
    .expect("compiles");
    let header = Header {
        name: "fuzz.bt".into(),
        source: RECORDED.into(),
        events: compiled.script.events.clone(),
        maps: compiled.script.maps.clone(),
        print_maps_on_exit: true,
        str_trunc_trailer: b"..".to_vec(),
    };
    let write = |entries: &[Entry]| {
        let mut w = RecordWriter::new(Vec::new(), &header).expect("header");
        w.write_all(entries).expect("entries");
        w.finish().expect("written")
    };
    let end = Entry::End { exit_code: 0 };
    let reads = |e: &Entry| {
        sonde_drivers::record::read_recording(&write(&[e.clone(), end.clone()])).is_ok()
    };
    // Each printf event with its record of the size its spec gives (found by trying).
    let mut entries = vec![Entry::Attached { probes: 2 }];
    for id in 0..header.events.len() as u64 {
        for len in 0..1024 {
            let mut record = id.to_le_bytes().to_vec();
            record.extend((0..len).map(|i| b"abc\0\x05"[i % 5]));
            let e = Entry::Event {
                ts_ns: 1 + id,
                record,
            };
            if reads(&e) {
                entries.push(e);
                break;
            }
        }
    }
    let candidates = [
        Entry::Text {
            ts_ns: 3,
            event: 2,
            text: b"12\n".to_vec(),
        },
        Entry::MapPrint {
            ts_ns: 4,
            event: 1,
            entries: vec![(Vec::new(), vec![vec![1; 8]])],
        },
        Entry::Stack {
            kernel: true,
            raw: 1,
            limit: 127,
            frames: None,
        },
        Entry::Symbol {
            kernel: true,
            addr: 0,
            name: Some("start".into()),
        },
        Entry::UserSymbol {
            pid: 1,
            addr: 4096,
            name: None,
        },
        Entry::Username {
            uid: 0,
            name: Some("root".into()),
        },
        Entry::CgroupPath {
            id: 1,
            path: Some("/".into()),
        },
        Entry::Timestamp {
            tag: 0,
            nsecs: 5,
            text: Some("12".into()),
        },
        Entry::ExitMaps {
            maps: vec![
                (
                    "s".into(),
                    vec![(Vec::new(), vec![3u64.to_le_bytes().to_vec()])],
                ),
                (
                    "h".into(),
                    vec![(
                        2u64.to_le_bytes().to_vec(),
                        vec![1u64.to_le_bytes().to_vec()],
                    )],
                ),
            ],
        },
        Entry::Counters {
            lost_events: 1,
            map_full: 0,
            loops_cut: 0,
        },
    ];
    entries.extend(candidates.into_iter().filter(|e| reads(e)));
    entries.push(end);
    write(&entries)
}

fn run_recording(bytes: &[u8]) -> Outcome {
    // The allocation recordings' reader, on any recording: a result or a diagnostic.
    let _ = sonde_drivers::allocs::read_from(bytes, bytes.len() as u64, "fuzz");
    let Ok(rec) = sonde_drivers::record::read_recording(bytes) else {
        return Ok(false);
    };
    for json in [false, true] {
        let opts = sonde_session::OutputOptions {
            json,
            output: Some("/dev/null".into()),
            ..Default::default()
        };
        let mut entries = rec.entries.iter().cloned().map(Ok);
        let _ = sonde_drivers::replay::replay_print(&rec.header, &mut entries, &opts, true, None);
    }
    Ok(true)
}

/// The ELF target: `/bin/true` and a C program built with DWARF (when gcc is there), read
/// for their symbols (as stacks are symbolized), functions, USDT probes, DWARF parameters
/// and the source lines of addresses. Valid: the symbol table was read.
pub fn elf_files() -> Target {
    let mut seeds = vec![std::fs::read("/bin/true").expect("/bin/true")];
    let dir = crate::common::TempDir::new("fuzz-elf");
    let bin = dir.path().join("dwarf_target");
    let built = std::process::Command::new("gcc")
        .args(["-g", "-O0", "-o"])
        .arg(&bin)
        .arg(repo_root().join("tests/targets/dwarf_target.c"))
        .status()
        .is_ok_and(|s| s.success());
    if built {
        seeds.push(std::fs::read(&bin).unwrap());
    }
    Target {
        name: "elf",
        seeds,
        dictionary: &[],
        max_len: 128 << 10,
        run: run_elf,
    }
}

thread_local! {
    static ELF_DIR: crate::common::TempDir = crate::common::TempDir::new("fuzz-elf-input");
}

fn run_elf(bytes: &[u8]) -> Outcome {
    ELF_DIR.with(|dir| {
        let path = dir.path().join("input");
        std::fs::write(&path, bytes).unwrap();
        read_elf(&path, bytes)
    })
}

fn read_elf(path: &Path, bytes: &[u8]) -> Outcome {
    use sonde_system::symbols::user::ElfSymbolTable;
    let shown = path.to_str().unwrap();
    let table = ElfSymbolTable::from_bytes(path, bytes, false);
    if let Ok(t) = &table {
        for a in [0, 0x1000, 0x1130, 0x4000, u64::MAX] {
            let _ = t.lookup_address(a);
            let _ = t.lookup_offset(a);
            let _ = t.offset_to_address(a);
        }
    }
    let _ = sonde_system::elf_symbols::elf_functions(shown);
    let _ = sonde_system::elf_symbols::elf_function_offset(shown, "main");
    let _ = sonde_system::kernel_info::usdt::usdt_probes(shown);
    let _ = sonde_system::kernel_info::dwarf::function_params(shown, "func");
    let _ = sonde_system::kernel_info::dwarf::function_signatures(
        shown,
        &["main", "func", "mixed", "make_big"],
    );
    // Stack frames' source lines and inlined functions (show_debug_info).
    let search = sonde_system::kernel_info::debug_search::DebugPath::default();
    if let Ok(frames) = sonde_system::kernel_info::dwarf::SourceFrames::open(path, &search) {
        for a in [0, 0x1000, 0x1130, 0x1149, 0x4000, u64::MAX] {
            let _ = frames.lookup(a);
        }
    }
    Ok(table.is_ok())
}
