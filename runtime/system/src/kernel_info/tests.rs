//! Tests of [`SystemKernel`] against this machine's kernel (tracefs and BTF must exist).

use super::*;
use sonde_lang::types::Type;

#[test]
fn new_is_lazy() {
    let k = SystemKernel::new();
    assert!(k.btf.get().is_none() && k.tracepoints.get().is_none());
    let _ = k.enum_value("TCP_ESTABLISHED");
    assert!(k.btf.get().is_some());
}

#[test]
fn lists_sched_tracepoints() {
    let k = SystemKernel::new();
    let tps = k.tracepoints();
    assert!(tps.contains(&("sched".to_string(), "sched_switch".to_string())));
    assert!(tps.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn reads_sched_switch_format() {
    let k = SystemKernel::new();
    let fields = k.tracepoint_format("sched", "sched_switch").unwrap();
    let comm = fields.iter().find(|f| f.name == "prev_comm").unwrap();
    assert_eq!(
        (comm.c_type.as_str(), comm.offset, comm.size, comm.signed),
        ("char[16]", 8, 16, false)
    );
    let pid = fields.iter().find(|f| f.name == "prev_pid").unwrap();
    assert_eq!(
        (pid.c_type.as_str(), pid.offset, pid.size, pid.signed),
        ("pid_t", 24, 4, true)
    );
    assert_eq!(fields[0].name, "common_type");
    assert_eq!(k.tracepoint_format("sched", "no_such_event"), None);
    assert_eq!(k.tracepoint_format("..", "sched"), None);
}

#[test]
fn raw_tracepoints_come_from_btf() {
    let k = SystemKernel::new();
    let raw = k.raw_tracepoints();
    assert!(raw.iter().any(|r| r == "sched_switch"));
    assert!(raw.iter().any(|r| r == "sys_enter"));
}

#[test]
fn this_kernel_has_no_kprobes() {
    let k = SystemKernel::new();
    assert_eq!(k.has_kprobes(), Path::new(KPROBE_PMU).exists());
    if !k.has_kprobes() {
        assert_eq!(k.kernel_functions(), None);
    }
}

#[test]
fn records_and_enums_from_btf() {
    let k = SystemKernel::new();
    let task = k.record(RecordKind::Struct, "task_struct").unwrap();
    assert_eq!(task.field("pid").unwrap().ty, Type::I32);
    assert_eq!(task.field("comm").unwrap().ty, Type::Str { size: 16 });
    // Cached: the same Arc comes back, also when asked with the `struct` prefix.
    let again = k.record(RecordKind::Struct, "struct task_struct").unwrap();
    assert!(Arc::ptr_eq(&task, &again));
    assert_eq!(k.record(RecordKind::Union, "task_struct"), None);
    assert_eq!(k.record(RecordKind::Struct, "no_such_struct_xyz"), None);
    // `atomic_t` is a typedef of an anonymous struct.
    let atomic = k.record(RecordKind::Struct, "atomic_t").unwrap();
    assert_eq!(atomic.field("counter").unwrap().ty, Type::I32);
    assert_eq!(k.enum_value("TCP_ESTABLISHED").map(|e| e.1), Some(1));
    assert_eq!(k.enum_value("TCP_CLOSE").map(|e| e.1), Some(7));
    assert_eq!(k.enum_value("NO_SUCH_ENUMERATOR_XYZ"), None);
}

#[test]
fn describes_records_in_c() {
    let k = SystemKernel::new();
    let text = k.record_definition("struct sock_common").unwrap();
    assert!(text.starts_with("struct sock_common {\n"));
    assert!(
        text.contains("\tshort unsigned int skc_family;\n"),
        "{text}"
    );
    let err = k.record_definition("struct no_such_xyz").unwrap_err();
    assert_eq!(err, "no type `struct no_such_xyz` in the kernel BTF");
}

#[test]
fn missing_btf_file_is_an_error_text() {
    let k = SystemKernel::with_btf_path("/no/such/btf");
    assert!(
        k.btf()
            .unwrap_err()
            .starts_with("cannot read BTF from /no/such/btf")
    );
    assert_eq!(k.record(RecordKind::Struct, "task_struct"), None);
    assert!(k.raw_tracepoints().is_empty());
}

#[test]
fn raw_tracepoint_args_from_btf() {
    let k = SystemKernel::new();
    let args = k.raw_tracepoint_args("sched_switch").unwrap();
    let names: Vec<&str> = args.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["preempt", "prev", "next", "prev_state"]);
    assert_eq!(args[0].ty, Type::Bool);
    assert_eq!(args[1].c_type, "struct task_struct *");
    assert!(
        matches!(&args[1].ty, Type::Ptr { pointee, .. } if matches!(&**pointee, Type::Record(r) if r.name == "struct task_struct"))
    );
    assert_eq!(args[3].ty, Type::U32);
    assert_eq!(k.raw_tracepoint_args("no_such_raw_tp"), None);
}

#[test]
fn system_kernel_is_shareable_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<SystemKernel>();
    let k = Arc::new(SystemKernel::new());
    let k2 = Arc::clone(&k);
    let h = std::thread::spawn(move || k2.record(RecordKind::Struct, "sock_common").is_some());
    assert!(k.record(RecordKind::Struct, "sock_common").is_some());
    assert!(h.join().unwrap());
}

#[test]
fn kfunc_and_variable_ids_from_btf() {
    use sonde_lang::kernel::BtfObject;
    let k = SystemKernel::new();
    let btf = k.btf().unwrap();
    for (kind, name, want) in [
        (BtfObject::Func, "bpf_task_from_pid", crate::btf::Kind::Func),
        (BtfObject::Func, "bpf_task_release", crate::btf::Kind::Func),
        (BtfObject::Var, "runqueues", crate::btf::Kind::Var),
    ] {
        let id = k.kernel_btf_id(kind, name).unwrap();
        let t = btf.ty(id).unwrap();
        assert_eq!((t.name, t.kind), (name, want));
    }
    // A function is no variable, and the reverse.
    assert_eq!(k.kernel_btf_id(BtfObject::Var, "bpf_task_from_pid"), None);
    assert_eq!(k.kernel_btf_id(BtfObject::Func, "runqueues"), None);
    assert_eq!(
        k.kernel_btf_id(BtfObject::Var, "no_such_variable_xyz"),
        None
    );
}
