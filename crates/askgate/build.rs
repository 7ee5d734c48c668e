//! Link arguments for the `askgate` binary: see `build/layout.rs`.

#[path = "build/layout.rs"]
mod layout;

use std::path::{Path, PathBuf};

/// Where a glibc system keeps the C library the link resolves `-lc` to.
const LIBC: [&str; 4] = [
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/usr/lib/x86_64-linux-gnu/libc.so.6",
    "/lib64/libc.so.6",
    "/usr/lib64/libc.so.6",
];

fn main() {
    println!("cargo::rerun-if-changed=build/layout.rs");
    println!("cargo::rerun-if-changed=build/startup-order.txt");
    println!("cargo::rerun-if-env-changed=ASKGATE_LINK_REPRODUCE");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let order = PathBuf::from(var("CARGO_MANIFEST_DIR")).join("build/startup-order.txt");
    let build = layout::Build {
        profile: var("PROFILE"),
        target: var("TARGET"),
        host: var("HOST"),
        custom_linker: std::env::var_os("RUSTC_LINKER").is_some(),
        rustflags: var("CARGO_ENCODED_RUSTFLAGS"),
        order_file: order.is_file().then_some(order),
        libc_has_relr: LIBC.iter().map(Path::new).any(defines_dt_relr),
        reproduce: std::env::var("ASKGATE_LINK_REPRODUCE")
            .ok()
            .filter(|path| !path.is_empty()),
    };
    for arg in build.link_args() {
        println!("cargo::rustc-link-arg-bin=askgate={arg}");
    }
}

/// The library names the version `GLIBC_ABI_DT_RELR` (glibc 2.36 and later),
/// which lld's `-z pack-relative-relocs` makes the binary require.
fn defines_dt_relr(libc: &Path) -> bool {
    const VERSION: &[u8] = b"GLIBC_ABI_DT_RELR";
    std::fs::read(libc).is_ok_and(|bytes| bytes.windows(VERSION.len()).any(|window| window == VERSION))
}
