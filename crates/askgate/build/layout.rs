//! How the release binary is linked: the code start-up runs laid out
//! together, and relative relocations packed.
//!
//! Included by `build.rs` (which gathers the facts from cargo's environment
//! and the disk) and by the binary's unit tests (`#[path]` in `main.rs`), so
//! that the decision is one pure function, tested.
//!
//! Why: idle, askgate's resident memory is mostly its own executable's
//! pages. The kernel maps a fault's whole 64 KiB neighbourhood of a file in
//! the page cache, and the ~3,400 functions start-up runs were spread over
//! the 65 MB of `.text`, so an idle `serve` held 13–15 MiB of code for 2.6 MB
//! of functions it ran. Listed in `startup-order.txt`, lld puts them first
//! (`--symbol-ordering-file`): 3–4 MiB. And the 2.4 MB of `R_X86_64_RELATIVE`
//! entries the dynamic loader reads at start shrink to 31 KB as RELR
//! (`-z pack-relative-relocs`). Both measured in README.md ("Idle
//! footprint"); no crate does either, they are linker arguments.

use std::path::PathBuf;

/// What the link arguments depend on (cargo's build-script environment).
#[derive(Debug, Default)]
pub(crate) struct Build {
    /// `PROFILE`: `release` for the release and bench profiles.
    pub(crate) profile: String,
    /// `TARGET` and `HOST`.
    pub(crate) target: String,
    pub(crate) host: String,
    /// `RUSTC_LINKER` is set: a linker of the builder's choosing (e.g.
    /// cargo-zigbuild's), which may not take lld's options.
    pub(crate) custom_linker: bool,
    /// `CARGO_ENCODED_RUSTFLAGS`, its flags separated by `\x1f`.
    pub(crate) rustflags: String,
    /// `build/startup-order.txt`, where it exists.
    pub(crate) order_file: Option<PathBuf>,
    /// The C library the link uses defines `GLIBC_ABI_DT_RELR` (glibc ≥ 2.36).
    pub(crate) libc_has_relr: bool,
    /// `ASKGATE_LINK_REPRODUCE`: lld writes its inputs there as a tar
    /// archive, from which `scripts/text-order` links a copy with symbols.
    pub(crate) reproduce: Option<String>,
}

/// The target on which rustc links with its own lld by default (Rust 1.90).
const LLD_BY_DEFAULT: &str = "x86_64-unknown-linux-gnu";

/// Flags in `CARGO_ENCODED_RUSTFLAGS` that choose another linker or driver
/// (`-C linker=`, `-C linker-flavor=`, `-C linker-features=`,
/// `-C link-self-contained=`, `-C link-arg=-fuse-ld=…`).
const LINKER_CHOICES: [&str; 3] = ["linker", "link-self-contained", "fuse-ld"];

impl Build {
    /// rustc links with its own lld: the options below are lld's.
    fn lld(&self) -> bool {
        self.target == LLD_BY_DEFAULT
            && !self.custom_linker
            && !self
                .rustflags
                .split('\x1f')
                .any(|flag| LINKER_CHOICES.iter().any(|choice| flag.contains(choice)))
    }

    /// The arguments for the `askgate` binary's link.
    pub(crate) fn link_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if !self.lld() {
            return args;
        }
        if let Some(path) = &self.reproduce {
            linker(&mut args, format!("--reproduce={path}"));
        }
        if self.profile != "release" {
            // Debug builds link often and are not measured: as they were.
            return args;
        }
        if let Some(order) = &self.order_file {
            linker(&mut args, format!("--symbol-ordering-file={}", order.display()));
            // Names of another build (see startup-order.txt) are expected.
            args.push("-Wl,--no-warn-symbol-ordering".to_owned());
        }
        // The binary then needs glibc 2.36 or later to start, which the
        // machine that built it has: a plain build needs that machine's
        // glibc anyway (docs/deploy.md). Not when cross-compiling.
        if self.libc_has_relr && self.host == self.target {
            args.push("-Wl,-z,pack-relative-relocs".to_owned());
        }
        args
    }
}

/// One argument for the linker, through the C compiler that drives it:
/// `-Xlinker` passes it as it is, where `-Wl,` would split a path at its
/// commas.
fn linker(args: &mut Vec<String>, arg: String) {
    args.push("-Xlinker".to_owned());
    args.push(arg);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn release() -> Build {
        Build {
            profile: "release".to_owned(),
            target: LLD_BY_DEFAULT.to_owned(),
            host: LLD_BY_DEFAULT.to_owned(),
            order_file: Some(PathBuf::from("/src/crates/askgate/build/startup-order.txt")),
            libc_has_relr: true,
            ..Build::default()
        }
    }

    #[test]
    fn a_release_build_with_rusts_lld_orders_start_up_code_and_packs_relocations() {
        assert_eq!(
            release().link_args(),
            [
                "-Xlinker",
                "--symbol-ordering-file=/src/crates/askgate/build/startup-order.txt",
                "-Wl,--no-warn-symbol-ordering",
                "-Wl,-z,pack-relative-relocs",
            ]
        );
    }

    #[test]
    fn relocations_stay_unpacked_for_an_older_glibc_or_a_cross_build() {
        let old_glibc = Build {
            libc_has_relr: false,
            ..release()
        };
        assert!(!old_glibc.link_args().iter().any(|arg| arg.contains("relocs")));
        let cross = Build {
            host: "aarch64-unknown-linux-gnu".to_owned(),
            ..release()
        };
        assert!(!cross.link_args().iter().any(|arg| arg.contains("relocs")));
        assert!(cross.link_args().iter().any(|arg| arg.contains("ordering-file")));
    }

    #[test]
    fn another_linker_or_target_gets_no_lld_options() {
        let zig = Build {
            custom_linker: true,
            ..release()
        };
        let mold = Build {
            rustflags: "-Clink-arg=-fuse-ld=mold".to_owned(),
            ..release()
        };
        let flavor = Build {
            rustflags: "-Cdebuginfo=1\x1f-Clinker-features=-lld".to_owned(),
            ..release()
        };
        let musl = Build {
            target: "x86_64-unknown-linux-musl".to_owned(),
            ..release()
        };
        for build in [zig, mold, flavor, musl] {
            assert_eq!(build.link_args(), Vec::<String>::new(), "{build:?}");
        }
        let reproduce = Build {
            reproduce: Some("/tmp/askgate.tar".to_owned()),
            custom_linker: true,
            ..release()
        };
        assert!(reproduce.link_args().is_empty());
    }

    #[test]
    fn a_debug_build_links_as_before_unless_asked_for_its_inputs() {
        let debug = Build {
            profile: "debug".to_owned(),
            ..release()
        };
        assert!(debug.link_args().is_empty());
        let reproduce = Build {
            reproduce: Some("/tmp/askgate.tar".to_owned()),
            ..debug
        };
        assert_eq!(reproduce.link_args(), ["-Xlinker", "--reproduce=/tmp/askgate.tar"]);
    }

    #[test]
    fn a_path_with_commas_reaches_the_linker_whole() {
        let build = Build {
            order_file: Some(PathBuf::from("/home/a,b/askgate/build/startup-order.txt")),
            ..release()
        };
        let whole = [
            "-Xlinker",
            "--symbol-ordering-file=/home/a,b/askgate/build/startup-order.txt",
        ];
        assert!(
            build.link_args().windows(2).any(|pair| pair == whole),
            "{:?}",
            build.link_args()
        );
    }

    #[test]
    fn without_an_order_file_relocations_are_still_packed() {
        let build = Build {
            order_file: None,
            ..release()
        };
        assert_eq!(build.link_args(), ["-Wl,-z,pack-relative-relocs"]);
    }
}
