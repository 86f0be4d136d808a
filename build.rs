//! Stamps what `kubectl coord version` says about the build: the git commit and the
//! target triple. A release job that builds from an exported tree (no .git) sets
//! COORD_GIT_COMMIT itself.
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=COORD_GIT_COMMIT");
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs/heads");
    let commit = std::env::var("COORD_GIT_COMMIT").ok().filter(|c| !c.is_empty()).or_else(|| {
        let out = Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).output().ok()?;
        let commit = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (out.status.success() && !commit.is_empty()).then_some(commit)
    });
    println!("cargo:rustc-env=COORD_GIT_COMMIT={}", commit.as_deref().unwrap_or("unknown"));
    println!("cargo:rustc-env=COORD_TARGET={}", std::env::var("TARGET").unwrap_or_default());
}
