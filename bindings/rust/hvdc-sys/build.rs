//! Finds libhvdc for the linker with `std` only: `HVDC_LIB_DIR` (or `HVDC_DIR`/lib), then
//! `pkg-config --libs-only-L hvdc`, else the linker's default search path. Uses the single-colon
//! `cargo:` syntax so that Debian 12's Cargo (1.63-era) understands it.
use std::env;
use std::path::PathBuf;
use std::process::Command;

fn dir_from_env() -> Option<PathBuf> {
    if let Some(dir) = env::var_os("HVDC_LIB_DIR") {
        return Some(PathBuf::from(dir));
    }
    env::var_os("HVDC_DIR").map(|dir| PathBuf::from(dir).join("lib"))
}

// `-L/usr/lib -L/opt/x` -> the directories, in order.
fn dirs_from_pkg_config() -> Vec<PathBuf> {
    let output = match Command::new("pkg-config")
        .args(["--libs-only-L", "hvdc"])
        .output()
    {
        Ok(output) if output.status.success() => output,
        _ => return Vec::new(),
    };
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .filter_map(|flag| flag.strip_prefix("-L"))
        .map(PathBuf::from)
        .collect()
}

fn main() {
    println!("cargo:rerun-if-env-changed=HVDC_LIB_DIR");
    println!("cargo:rerun-if-env-changed=HVDC_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let dirs = match dir_from_env() {
        Some(dir) => vec![dir],
        None => dirs_from_pkg_config(),
    };
    for dir in &dirs {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    if let Some(first) = dirs.first() {
        // Dependents see it as DEP_HVDC_LIBDIR.
        println!("cargo:libdir={}", first.display());
    }
    println!("cargo:rustc-link-lib=dylib=hvdc");
}
