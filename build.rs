//! Link options of the `sonde` binary.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=link/startup-order.txt");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    // Release builds for x86-64 Linux, linked by rustc's LLD (the target's default linker):
    // the functions a run's start-up calls are laid out together, so that the kernel's
    // fault-around maps a few 64 KiB pieces of the text instead of pieces all over its 11 MiB
    // (the tracer's peak RSS, docs/PERFORMANCE.md). A symbol the file names and the binary
    // lacks (after a change) is skipped; `link/startup-order.sh` writes the file again.
    if var("PROFILE") == "release"
        && var("CARGO_CFG_TARGET_OS") == "linux"
        && var("CARGO_CFG_TARGET_ARCH") == "x86_64"
    {
        let order = format!("{}/link/startup-order.txt", var("CARGO_MANIFEST_DIR"));
        println!("cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={order}");
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}
