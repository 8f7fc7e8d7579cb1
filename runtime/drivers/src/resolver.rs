//! The runtime's [`Resolver`]: turns ids and addresses in decoded values into names (stack
//! frames, symbols, user names, formatted timestamps).

use sonde_compiler::program::{CompiledScript, EventSpec, MapRole};
use sonde_compiler::value::Frame;
use sonde_kernel::maps::RawMap;
use sonde_kernel::stack_map::{read_build_id_stack, read_stack};
use sonde_present::output::Resolver;
use sonde_system::clock::strftime_boot_ns;
use sonde_system::symbols::{BUILD_ID_STACK, Symbolizer, resolve_frames, split_stack_key};
use std::sync::Arc;

/// Resolves names for one running script.
#[derive(Clone, Default)]
pub struct RuntimeResolver {
    time_formats: Vec<Option<String>>,
    /// Kernel and user stack-trace maps, when the script records stacks.
    stacks: [Option<Arc<RawMap>>; 2],
    /// The stack-trace map of `ustack(build_id)`, when the script records such stacks.
    build_id_stacks: Option<Arc<RawMap>>,
    symbols: Arc<Symbolizer>,
    /// User names by uid, read from /etc/passwd once.
    users: Arc<std::sync::OnceLock<std::collections::HashMap<u64, String>>>,
    /// Enumerators of the script's enums, by tag.
    enums: Arc<sonde_compiler::enums::EnumTable>,
}

impl std::fmt::Debug for RuntimeResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeResolver")
            .field("time_formats", &self.time_formats)
            .finish()
    }
}

impl RuntimeResolver {
    /// A resolver that also reads stacks from the given stack maps (user, kernel) and
    /// symbolizes with `symbols`.
    pub fn with_stacks(
        script: &CompiledScript,
        user: Option<RawMap>,
        kernel: Option<RawMap>,
        symbols: Arc<Symbolizer>,
    ) -> Self {
        let mut r = RuntimeResolver::new(script);
        r.stacks = [user.map(Arc::new), kernel.map(Arc::new)];
        r.symbols = symbols;
        r
    }

    /// A resolver reading stacks from the script's stack maps found in `maps` (user,
    /// kernel and build-id stacks, those the script has), symbolizing with `symbols`.
    pub fn for_maps(
        script: &CompiledScript,
        maps: &dyn sonde_kernel::maps::RawMaps,
        symbols: Arc<Symbolizer>,
    ) -> Self {
        let map = |role: MapRole| {
            script
                .maps
                .iter()
                .find(|m| m.role == role)
                .and_then(|m| maps.raw(m))
        };
        RuntimeResolver::with_stacks(
            script,
            map(MapRole::Stacks { kernel: false }),
            map(MapRole::Stacks { kernel: true }),
            symbols,
        )
        .with_build_id_stacks(map(MapRole::BuildIdStacks))
    }

    /// This resolver, also reading `ustack(build_id)` stacks from `map`.
    pub fn with_build_id_stacks(mut self, map: Option<RawMap>) -> Self {
        self.build_id_stacks = map.map(Arc::new);
        self
    }

    /// A resolver for `script` (strftime formats come from its event list).
    pub fn new(script: &CompiledScript) -> Self {
        let time_formats = script
            .events
            .iter()
            .map(|e| match e {
                EventSpec::Time { format } => Some(format.clone()),
                _ => None,
            })
            .collect();
        RuntimeResolver {
            time_formats,
            enums: Arc::new(script.enums.clone()),
            ..Default::default()
        }
    }
}

impl Resolver for RuntimeResolver {
    fn enum_variant(&self, tag: &str, value: i64) -> Option<String> {
        sonde_compiler::enums::variant(&self.enums, tag, value).map(str::to_string)
    }

    fn stack(&self, kernel: bool, raw: u64, limit: u32) -> Option<Vec<Frame>> {
        let (id, pid) = split_stack_key(raw);
        if !kernel && (id as i32) >= 0 && id & BUILD_ID_STACK != 0 {
            let map = self.build_id_stacks.as_ref()?;
            return read_build_id_stack(map, id & !BUILD_ID_STACK, limit as usize).ok();
        }
        let map = self.stacks[usize::from(kernel)].as_ref()?;
        let frames = read_stack(map, id).ok()?;
        Some(resolve_frames(
            &frames,
            kernel,
            pid,
            limit as usize,
            self.symbols.as_ref(),
        ))
    }

    fn symbol(&self, kernel: bool, addr: u64) -> Option<String> {
        if kernel {
            // bpftrace prints `ksym()` as the bare function name.
            let (name, _) = self.symbols.ksym(addr)?;
            return Some(name.to_string());
        }
        None
    }

    fn user_symbol(&self, pid: u32, addr: u64) -> Option<String> {
        // bpftrace prints `usym()` as the bare function name.
        self.symbols.usym(pid, addr).map(|s| s.name)
    }

    fn username(&self, uid: u64) -> Option<String> {
        self.users.get_or_init(read_users).get(&uid).cloned()
    }

    fn cgroup_path(&self, id: u64) -> Option<String> {
        sonde_system::cgroup::cgroup_paths(id)
    }

    fn cgroup_path_in(&self, id: u64, filter: &str) -> Option<String> {
        sonde_system::cgroup::cgroup_paths_in(id, filter)
    }

    fn timestamp(&self, tag: u64, nsecs: u64) -> Option<String> {
        let fmt = self.time_formats.get(tag as usize)?.as_ref()?;
        Some(strftime_boot_ns(fmt, nsecs))
    }
}

/// User names by uid from /etc/passwd (empty when unreadable).
fn read_users() -> std::collections::HashMap<u64, String> {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    passwd
        .lines()
        .filter_map(|l| {
            let mut f = l.split(':');
            let name = f.next()?;
            let _password = f.next();
            Some((f.next()?.parse().ok()?, name.to_string()))
        })
        .collect()
}
