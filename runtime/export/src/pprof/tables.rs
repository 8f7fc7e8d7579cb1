//! The tables a profile's samples point into, each entry made once: strings, mappings (one
//! per module), functions (one per name) and locations (one per module, address and
//! function).

use super::proto::{Function, Line, Location, Mapping, Profile};
use sonde_compiler::value::Frame;
use std::collections::HashMap;

/// The module kernel frames belong to when their frame names none.
pub const KERNEL_MODULE: &str = "[kernel.kallsyms]";

/// The tables of a profile under construction.
#[derive(Debug)]
pub struct Tables {
    strings: Vec<String>,
    string_ids: HashMap<String, i64>,
    mappings: Vec<Mapping>,
    mapping_ids: HashMap<String, u64>,
    functions: Vec<Function>,
    function_ids: HashMap<String, u64>,
    locations: Vec<Location>,
    location_ids: HashMap<(u64, u64, u64), u64>,
}

impl Default for Tables {
    fn default() -> Self {
        Tables {
            strings: vec![String::new()],
            string_ids: HashMap::from([(String::new(), 0)]),
            mappings: Vec::new(),
            mapping_ids: HashMap::new(),
            functions: Vec::new(),
            function_ids: HashMap::new(),
            locations: Vec::new(),
            location_ids: HashMap::new(),
        }
    }
}

/// A symbol (`func+off`) without its offset: the text before the last `+` when what follows
/// it is a number (decimal or `0x` hex); the whole symbol otherwise (`operator+`).
pub fn function_name(symbol: &str) -> &str {
    match symbol.rsplit_once('+') {
        Some((name, off)) if !name.is_empty() && is_offset(off) => name,
        _ => symbol,
    }
}

/// True for `123` and `0x1a`.
fn is_offset(s: &str) -> bool {
    let digits = s.strip_prefix("0x").unwrap_or(s);
    let hex = digits.len() != s.len();
    !digits.is_empty()
        && digits.chars().all(|c| {
            if hex {
                c.is_ascii_hexdigit()
            } else {
                c.is_ascii_digit()
            }
        })
}

impl Tables {
    /// The index of `s` in the string table, added if new.
    pub fn string(&mut self, s: &str) -> i64 {
        if let Some(&id) = self.string_ids.get(s) {
            return id;
        }
        let id = self.strings.len() as i64;
        self.strings.push(s.to_string());
        self.string_ids.insert(s.to_string(), id);
        id
    }

    /// The id of the mapping of `module`, added if new. Sonde has symbolized every frame it
    /// could, and its addresses are run-time addresses without the mapping's range, so the
    /// mapping says it has its functions: readers must not symbolize its addresses again.
    fn mapping(&mut self, module: &str) -> u64 {
        if let Some(&id) = self.mapping_ids.get(module) {
            return id;
        }
        let id = self.mappings.len() as u64 + 1;
        let filename = self.string(module);
        self.mappings.push(Mapping {
            id,
            filename,
            has_functions: true,
            ..Mapping::default()
        });
        self.mapping_ids.insert(module.to_string(), id);
        id
    }

    /// The id of the function named `name`, added if new.
    fn function(&mut self, name: &str) -> u64 {
        if let Some(&id) = self.function_ids.get(name) {
            return id;
        }
        let id = self.functions.len() as u64 + 1;
        let name_index = self.string(name);
        self.functions.push(Function {
            id,
            name: name_index,
            system_name: name_index,
            ..Function::default()
        });
        self.function_ids.insert(name.to_string(), id);
        id
    }

    /// The id of the location of a frame, added if new. Kernel frames without a module are
    /// in [`KERNEL_MODULE`]; user frames without one in no mapping. An unresolved frame is
    /// its address alone, without a line.
    pub fn location(&mut self, frame: &Frame, kernel: bool) -> u64 {
        let module = match (&frame.module, kernel) {
            (Some(m), _) if !m.is_empty() => Some(m.as_str()),
            (_, true) => Some(KERNEL_MODULE),
            _ => None,
        };
        let mapping_id = module.map_or(0, |m| self.mapping(m));
        let function_id = frame
            .symbol
            .as_deref()
            .filter(|s| !s.is_empty())
            .map_or(0, |s| self.function(function_name(s)));
        let key = (mapping_id, frame.addr, function_id);
        if let Some(&id) = self.location_ids.get(&key) {
            return id;
        }
        let id = self.locations.len() as u64 + 1;
        let line = if function_id == 0 {
            Vec::new()
        } else {
            vec![Line {
                function_id,
                ..Line::default()
            }]
        };
        self.locations.push(Location {
            id,
            mapping_id,
            address: frame.addr,
            line,
            is_folded: false,
        });
        self.location_ids.insert(key, id);
        id
    }

    /// Moves the tables into `profile`.
    pub fn fill(self, profile: &mut Profile) {
        profile.string_table = self.strings;
        profile.mapping = self.mappings;
        profile.function = self.functions;
        profile.location = self.locations;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(addr: u64, symbol: Option<&str>, module: Option<&str>) -> Frame {
        Frame {
            addr,
            symbol: symbol.map(str::to_string),
            module: module.map(str::to_string),
            ..Frame::default()
        }
    }

    #[test]
    fn function_names_lose_their_offsets() {
        assert_eq!(function_name("do_syscall_64+116"), "do_syscall_64");
        assert_eq!(function_name("main+0x1a"), "main");
        assert_eq!(function_name("operator+"), "operator+");
        assert_eq!(function_name("a+b"), "a+b");
        assert_eq!(function_name("+12"), "+12");
        assert_eq!(function_name("f+0x"), "f+0x");
        assert_eq!(function_name("f+0xZZ"), "f+0xZZ");
        assert_eq!(function_name(""), "");
    }

    #[test]
    fn strings_are_interned_after_the_empty_one() {
        let mut t = Tables::default();
        assert_eq!(t.string(""), 0);
        assert_eq!(t.string("a"), 1);
        assert_eq!(t.string("b"), 2);
        assert_eq!(t.string("a"), 1);
    }

    #[test]
    fn locations_mappings_and_functions_are_made_once() {
        let mut t = Tables::default();
        let k = t.location(&frame(0xffff_1000, Some("vfs_read+5"), None), true);
        let k2 = t.location(&frame(0xffff_1000, Some("vfs_read+5"), None), true);
        let k3 = t.location(&frame(0xffff_1008, Some("vfs_read+13"), None), true);
        let u = t.location(&frame(0x401000, Some("main+0"), Some("/bin/x")), false);
        let bare = t.location(&frame(0x7000, None, None), false);
        assert_eq!((k, k2, k3, u, bare), (1, 1, 2, 3, 4));
        let mut p = Profile::default();
        t.fill(&mut p);
        assert_eq!(p.mapping.len(), 2);
        assert_eq!(p.function.len(), 2);
        let name = |i: i64| p.string_table[i as usize].as_str();
        assert_eq!(name(p.mapping[0].filename), KERNEL_MODULE);
        assert_eq!(name(p.mapping[1].filename), "/bin/x");
        assert_eq!(p.location[0].line, p.location[1].line);
        assert_eq!(name(p.function[0].name), "vfs_read");
        assert_eq!(p.location[3].mapping_id, 0);
        assert!(p.location[3].line.is_empty());
        assert_eq!(p.location[3].address, 0x7000);
    }
}
