//! The session's commands (`:help` lists them): one method each, with the dispatch over
//! their names.

use std::time::Duration;

use super::complete::COMMANDS;
use super::{Flow, Repl, watch};

impl Repl {
    /// Runs command `cmd` (a line after its `:`).
    pub(super) fn command(&mut self, cmd: &str) -> Flow {
        let (name, rest) = cmd.split_once(char::is_whitespace).unwrap_or((cmd, ""));
        let rest = rest.trim();
        match name {
            "help" | "h" | "?" => help(),
            "quit" | "q" | "exit" => return Flow::Quit,
            "list" | "l" => self.list_entries(),
            "detach" | "d" => self.detach(rest),
            "print" | "p" | "top" => self.print_map(name, rest),
            "clear" => self.clear_map(rest),
            "maps" => self.list_maps(),
            "script" => print!("{}", self.script.text(&self.attached())),
            "save" => self.save(rest),
            "load" => match sonde_system::user_files::read(
                std::path::Path::new(rest),
                sonde_system::user_files::MAX_SCRIPT,
                sonde_system::user_files::Pipes::Refuse,
            ) {
                Ok(bytes) => self.enter(&String::from_utf8_lossy(&bytes)),
                Err(e) => eprintln!(
                    "cannot read {}: {e}",
                    if rest.is_empty() { "''" } else { rest }
                ),
            },
            "format" | "f" => self.set_format(rest),
            "set" => self.set(rest),
            "params" => {
                for (i, v) in self.script.positional.iter().enumerate() {
                    println!("${} = {v}", i + 1);
                }
            }
            "run" => self.run_command(rest),
            "watch" | "w" => self.watch_map(rest),
            other => eprintln!("unknown command :{other} (:help lists them)"),
        }
        Flow::Go
    }

    /// `:list`: the attached entries with their probes.
    fn list_entries(&self) {
        let parts = self.pump.call(|s| s.live.parts()).unwrap_or_default();
        if parts.is_empty() {
            println!("no probes attached");
        }
        for p in parts {
            println!("[{}] {}", p.id, p.probes.join(", "));
        }
    }

    /// `:detach N|all`.
    fn detach(&mut self, rest: &str) {
        match rest {
            "all" | "*" => {
                let n = self
                    .pump
                    .call(|s| {
                        let ids: Vec<usize> = s.live.parts().iter().map(|p| p.id).collect();
                        ids.iter().filter(|id| s.live.detach(**id)).count()
                    })
                    .unwrap_or(0);
                println!("detached {n} entr{}", if n == 1 { "y" } else { "ies" });
            }
            n => match n
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<usize>()
            {
                Ok(id) => {
                    if self.pump.call(move |s| s.live.detach(id)) == Some(true) {
                        println!("[{id}] detached");
                    } else {
                        eprintln!("no entry [{id}] is attached (:list shows them)");
                    }
                }
                Err(_) => eprintln!("usage: :detach N|all"),
            },
        }
    }

    /// `:print @map [N]` and `:top @map [N]` (command `name`): the map, or its top N
    /// entries (10 for `:top`).
    fn print_map(&mut self, name: &str, rest: &str) {
        let arg = |i: usize| rest.split_whitespace().nth(i);
        let Some(map) = arg(0) else {
            eprintln!("usage: :{name} @map [N]");
            return;
        };
        let top = match (arg(1).map(str::parse::<u64>), name) {
            (Some(Ok(n)), _) => n,
            (Some(Err(_)), _) => {
                eprintln!("usage: :{name} @map [N]");
                return;
            }
            (None, "top") => 10,
            (None, _) => 0,
        };
        let map = map.to_string();
        match self.pump.call(move |s| s.live.print_map(&map, top)) {
            Some(Err(e)) => eprintln!("{e}"),
            None => eprintln!("sonde repl: the session has ended"),
            Some(Ok(())) => {}
        }
    }

    /// `:clear @map`.
    fn clear_map(&mut self, rest: &str) {
        let Some(map) = rest.split_whitespace().next().map(str::to_string) else {
            eprintln!("usage: :clear @map");
            return;
        };
        if let Some(Err(e)) = self.pump.call(move |s| s.live.clear_map(&map)) {
            eprintln!("{e}");
        }
    }

    /// `:maps`: the session's maps with their types.
    fn list_maps(&self) {
        let maps = self.pump.call(|s| s.live.maps()).unwrap_or_default();
        if maps.is_empty() {
            println!("no maps");
        }
        for (n, ty) in maps {
            println!("{n}: {ty}");
        }
    }

    /// `:save FILE`: the script of the attached entries.
    fn save(&self, rest: &str) {
        if rest.is_empty() {
            eprintln!("usage: :save FILE");
        } else if let Err(e) = std::fs::write(rest, self.script.text(&self.attached())) {
            eprintln!("cannot write {rest}: {e}");
        } else {
            println!("saved to {rest}");
        }
    }

    /// `:format text|json`.
    fn set_format(&mut self, rest: &str) {
        match rest {
            "json" | "text" => {
                let json = rest == "json";
                self.json = json;
                self.pump.call(move |s| s.live.set_json(json));
                println!("output as {rest}");
            }
            _ => eprintln!("usage: :format text|json"),
        }
    }

    /// `:set $N VALUE`.
    fn set(&mut self, rest: &str) {
        let (n, value) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        let Some(i) = n
            .strip_prefix('$')
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|i| (1..=64).contains(i))
        else {
            eprintln!("usage: :set $N VALUE (N from 1 to 64)");
            return;
        };
        let p = &mut self.script.positional;
        if p.len() < i {
            p.resize(i, String::new());
        }
        p[i - 1] = value.trim().to_string();
        println!("${i} = {}", p[i - 1]);
    }

    /// `:run CMD`: starts the command, whose pid later entries see as `cpid`.
    fn run_command(&mut self, rest: &str) {
        if rest.is_empty() {
            eprintln!("usage: :run CMD");
            return;
        }
        let cmd = rest.to_string();
        match self.pump.call(move |s| s.run(&cmd)) {
            Some(Ok(pid)) => {
                self.script.cpid = Some(pid);
                println!("[cpid {pid}] started: later entries see it as cpid");
            }
            Some(Err(e)) => eprintln!("cannot run '{rest}': {e}"),
            None => eprintln!("sonde repl: the session has ended"),
        }
    }

    /// `:watch @map [SECS]`: the map's top entries, refreshed every SECS seconds.
    fn watch_map(&mut self, rest: &str) {
        let arg = |i: usize| rest.split_whitespace().nth(i);
        let Some(map) = arg(0) else {
            eprintln!("usage: :watch @map [SECS]");
            return;
        };
        let secs = match arg(1).map(str::parse::<f64>) {
            None => 1.0,
            Some(Ok(s)) if s > 0.0 && s < 86400.0 => s,
            Some(_) => {
                eprintln!("usage: :watch @map [SECS] (SECS > 0)");
                return;
            }
        };
        if let Err(e) = watch::watch(&self.pump, map, Duration::from_secs_f64(secs)) {
            eprintln!("{e}");
        }
    }
}

/// `:help`: the commands, and what else an entry can be.
fn help() {
    for (c, args, what) in COMMANDS {
        println!("  {:<26} {what}", format!("{c} {args}"));
    }
    println!("  anything else is an entry: probes (attached at once), config, macros, structs");
}
