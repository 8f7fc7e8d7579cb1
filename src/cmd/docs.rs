//! `sonde man` and `sonde completions SHELL`: the man page (roff) and the shell completion
//! scripts, generated from the clap definitions (`cli::full_command`) so that they name
//! every option and command `sonde` has. The README says where to install them.

use crate::cli::full_command;
use crate::exit::{EXIT_USAGE, write_stdout};
use clap_complete::Shell;
use std::process::ExitCode;

/// The usage of `sonde completions`.
const COMPLETIONS_USAGE: &str = "usage: sonde completions bash|zsh|fish|elvish|powershell";

/// `sonde man [COMMAND]`: the man page of `sonde` (`sonde man > sonde.1`), or of one of its
/// commands (`sonde man tool > sonde-tool.1`, the page `sonde(1)` refers to), on standard
/// output.
pub fn man(args: &[String]) -> ExitCode {
    let page = match args {
        [] => man_page(None),
        [name] => man_page(Some(name)),
        _ => None,
    };
    match page {
        Some(page) => write_stdout(&page),
        None => {
            let names: Vec<String> = full_command()
                .get_subcommands()
                .map(|c| c.get_name().to_string())
                .collect();
            eprintln!(
                "sonde man: usage: sonde man [COMMAND], a COMMAND being one of {}",
                names.join(", ")
            );
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// The man page (roff) of `sonde`, or of its command `command` (none if there is no such
/// command).
pub fn man_page(command: Option<&str>) -> Option<Vec<u8>> {
    let mut cmd = full_command();
    // Names the commands `sonde-NAME` (their pages) and their usage `sonde NAME`.
    cmd.build();
    let cmd = match command {
        None => cmd,
        Some(name) => cmd.find_subcommand(name)?.clone(),
    };
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = clap_mangen::Man::new(cmd).render(&mut out);
    Some(out)
}

/// `sonde completions SHELL`: the completion script for SHELL on standard output.
pub fn completions(args: &[String]) -> ExitCode {
    let shell = match args {
        [one] => one.parse::<Shell>().ok(),
        _ => None,
    };
    let Some(shell) = shell else {
        eprintln!("sonde completions: {COMPLETIONS_USAGE}");
        return ExitCode::from(EXIT_USAGE);
    };
    write_stdout(&completion_script(shell))
}

/// The completion script of `shell`.
pub fn completion_script(shell: Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut full_command(), "sonde", &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_man_page_names_every_command_and_option() {
        let page = String::from_utf8(man_page(None).unwrap()).unwrap();
        assert!(
            page.starts_with(".ie") || page.contains(".TH sonde"),
            "{page}"
        );
        for cmd in [
            "tools",
            "tool",
            "record",
            "replay",
            "flamediff",
            "repl",
            "man",
            "completions",
        ] {
            assert!(
                page.contains(&format!("sonde\\-{cmd}(1)")),
                "no {cmd} in:\n{page}"
            );
        }
        let cmd = full_command();
        for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            let named = match (arg.get_long(), arg.get_short()) {
                (Some(l), _) => page.contains(&format!("\\-\\-{}", l.replace('-', "\\-"))),
                (None, Some(s)) => page.contains(&format!("\\-{s}")),
                (None, None) => true,
            };
            assert!(named, "{:?} missing from the man page", arg.get_id());
        }
        assert!(!page.contains("sonde\\-help"), "{page}");
        // Each command has its page, under its own name.
        let tool = String::from_utf8(man_page(Some("tool")).unwrap()).unwrap();
        assert!(tool.contains(".TH sonde-tool 1"), "{tool}");
        assert!(tool.contains("sonde tool"), "{tool}");
        assert!(man_page(Some("nosuch")).is_none());
    }

    #[test]
    fn completions_know_the_commands() {
        let bash = String::from_utf8(completion_script(Shell::Bash)).unwrap();
        for cmd in ["tools", "tool", "record", "replay", "repl", "--dump"] {
            assert!(bash.contains(cmd), "no {cmd}");
        }
        let zsh = String::from_utf8(completion_script(Shell::Zsh)).unwrap();
        assert!(zsh.starts_with("#compdef sonde"), "{zsh}");
    }
}
